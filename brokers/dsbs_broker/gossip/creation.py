"""Topic creation without a consensus service: one arbiter per name and a promise round (sans-IO).

Every DSBS broker keeps its own topic table and any broker may be asked to create a topic
(CreateTopics, or a Metadata request that auto-creates). If two brokers each wrote a record for
one new name, clients would for a while see two partition counts and two sets of leaders, and a
CreateTopics that had returned success could be replaced. The rule that prevents it:

1. One broker decides each name: its *arbiter*, the top rendezvous rank of the name over the
   live members (``SwimNode.topic_arbiter``, placed as group coordinators are). A broker asked
   to create a name it does not arbitrate sends CREATE to the arbiter, sends it again every
   ``create_retry_s`` (working out the arbiter afresh each time), and answers its client only
   when a CREATE_RESULT or the record itself arrives; after ``create_timeout_s`` it gives up.
2. The arbiter takes the creations of a name one at a time. It holds a record of the name: that
   is the answer (TOPIC_ALREADY_EXISTS to a CreateTopics, the record to an auto-create). A
   proposal of the name is under way: the request waits for its outcome. Otherwise it proposes.
3. Proposal: the arbiter builds the record (replica ring over its live members) and sends
   PROPOSE to every other live member. A member answers HAVE, with its record, if it holds one
   of that name; REFUSE if by its own view the proposer is not the name's arbiter, if it has a
   proposal of its own for the name, or if it promised the name to another proposer less than
   ``3 * create_propose_s`` ago; otherwise it promises the name to the proposer and answers OK.
4. Commit: once every member live in the arbiter's view has answered OK, the arbiter stores the
   record, pushes it to every live member (and gossips it like any update) and answers the
   waiting requests. A HAVE makes it adopt the existing record instead. A REFUSE, losing the
   arbiter role, or no unanimous answer within ``create_propose_s`` abandons the proposal, and
   the requests retry (a member that is down but not yet declared dead stalls commits of the
   names it must vote on until it is declared dead, one detection time at most).
5. A broker configured with seeds arbitrates nothing until a SYNC exchange has given it the
   member table, nor while it knows no live peer (every peer declared dead): with a partial
   view it could be the arbiter of names whose records only members it does not know hold.
   Brokers keep their committed records across restarts (``DsbsCoordinator``, topics file), so
   a restarted arbiter still holds what it held.

Records reach the topic table only by commit, so no broker serves an uncommitted record. (Later
changes of a committed topic, CreatePartitions and AlterConfigs, need no arbiter: they are new
records of the same creation that merge over it everywhere, ``metadata.merge``.) Two
arbiters cannot both commit a record of one name if each counts the other as live: each needs
the other's OK, and a member never answers OK while it has a proposal of its own for the name
or holds a record of it, so the later of the two proposals meets a REFUSE or a HAVE. If only
one counts the other as live (the other declared it dead after voting for it), the vote's
promise keeps the voter from proposing until the proposal it voted for has ended, by which time
the committed record has been pushed to it (only losing every copy of it for
``2 * create_propose_s`` defeats this).

What remains (``docs/dsbs-metadata.md``): two arbiters that each count the other as dead (a
network partition, or mutual false suspicion that ran its course) can each commit a record of
one name. When the sides meet again the record of higher rank (``metadata.rank``: version, then
explicit CreateTopics over auto-creation, then the lower arbiter id) replaces the other
everywhere; records produced to the replaced record's partitions stay on disk but are no longer
served. An explicit CreateTopics is never replaced by an auto-creation, even then.
"""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass
from typing import Protocol

from brokers.core.coordinator import validate_replication_factor, validate_topic_name
from brokers.core.errors import (
    InvalidConfig,
    InvalidPartitions,
    InvalidReplicationFactor,
    InvalidTopic,
    KafkaError,
    RequestTimedOut,
    TopicAlreadyExists,
    error_for_code,
)
from brokers.dsbs_broker.config import GossipConfig, GossipLimits
from brokers.dsbs_broker.packets.wire import (
    Create,
    CreateResult,
    Propose,
    TopicRecord,
    Verdict,
    Vote,
    encode_message,
    encode_update,
)
from brokers.dsbs_broker.tables import replica_placement
from brokers.dsbs_broker.tables.members import MemberTable
from brokers.dsbs_broker.tables.topics import TopicStore, rank

Addr = tuple[str, int]

# Bounds on state that datagrams make grow: peers are trusted as far as gossip is, but a buggy
# one must still not exhaust memory. Beyond them a request is told to retry.
MAX_PROPOSALS = 10_000
MAX_WAITERS = 1_000
MAX_PROMISES = 100_000
# A promise outlives the proposal it was given to by this factor of create_propose_s.
PROMISE_FACTOR = 3


@dataclass(frozen=True, slots=True)
class CreateOutcome:
    """How a creation request ended. ``code`` 0: the record committed for this very request
    (``record``, now in the table); TOPIC_ALREADY_EXISTS: the name already had a record
    (``record``, in the table); any other Kafka error code: refused (``message`` says why)."""

    code: int
    record: TopicRecord | None = None
    message: str = ""


def refusal(name: str, problem: str, limits: GossipLimits) -> KafkaError:
    """The CreateTopics error for a record ``SwimNode.topic_problem`` refuses."""
    if problem == "topic_name":
        return InvalidTopic(f"illegal topic name {name!r}")
    if problem in ("ring", "replication_factor"):
        return InvalidReplicationFactor(f"topic {name!r}: bad replica assignment ({problem})")
    if problem == "topics_full":
        return InvalidPartitions(f"topic {name!r}: this broker keeps at most {limits.max_topics} "
                                 "topics (max_topics)")
    if problem == "partitions_full":
        return InvalidPartitions(f"topic {name!r}: the cluster would exceed "
                                 f"{limits.max_total_partitions} partitions in all "
                                 "(max_total_partitions)")
    return InvalidPartitions(f"topic {name!r}: refused ({problem})")


class CreationHost(Protocol):
    """What the creation protocol needs from the gossip node (``SwimNode``)."""

    node_id: int
    cfg: GossipConfig
    limits: GossipLimits
    members: MemberTable
    topics: TopicStore
    rng: random.Random
    counters: defaultdict[str, int]

    @property
    def joined(self) -> bool:
        """False while a broker with seeds has not synced with a peer yet, or knows no live
        peer: its records would compete with those of members it does not know."""
        ...

    def topic_arbiter(self, name: str) -> int | None: ...

    def topic_problem(self, rec: TopicRecord) -> str | None:
        """Why the record may not be stored (``tables/validation.py`` rules, table limits), or
        None."""
        ...

    def record_room(self) -> int:
        """The largest encoded record a CREATE_RESULT, PROPOSE or VOTE can carry."""
        ...

    def send_message(self, addr: Addr, message: bytes, *, reply: bool = False,
                     pad: bool = False) -> None:
        """``reply``: an answer to the datagram being handled (reply caps apply); ``pad``: a
        request whose answer may carry a record."""
        ...

    def store_topic(self, rec: TopicRecord) -> bool:
        """Check a committed record like gossip and merge it into the table (and gossip it);
        True if it was taken. The host calls ``Creations.on_record`` for every record taken,
        whoever sent it."""
        ...

    def push_topic(self, rec: TopicRecord) -> None:
        """Send a record just committed to every live member directly."""
        ...


@dataclass(slots=True)
class _Request:  # a creation this broker was asked for, until it has an outcome
    msg: Create  # what goes to the arbiter; also the request's whole definition
    deadline: float
    next_send: float


@dataclass(slots=True)
class _Waiter:  # a request waiting on an arbiter's decision
    node: int
    addr: Addr | None  # where to answer; None for a request of this broker
    rid: int
    token: int


@dataclass(slots=True)
class _Proposal:
    pid: int
    record: TopicRecord
    needed: set[int]  # live members whose OK is still missing
    expires: float
    next_send: float
    waiters: list[_Waiter]


@dataclass(slots=True)
class _Promise:
    proposer: int
    expires: float


class Creations:
    """The creation protocol's state on one broker: as requester, arbiter and voter."""

    def __init__(self, host: CreationHost) -> None:
        self.host = host
        # Outcomes of this broker's requests, by request id, until the caller takes them.
        self.completed: dict[int, CreateOutcome] = {}
        self._requests: dict[int, _Request] = {}
        self._by_name: dict[str, set[int]] = {}
        self._proposals: dict[str, _Proposal] = {}
        self._pids: dict[int, str] = {}
        self._promises: dict[str, _Promise] = {}
        self._rid = 0
        self._pid = 0

    # --- requester --------------------------------------------------------------------------
    def request(
        self, name: str, num_partitions: int, replication_factor: int,
        configs: tuple[tuple[str, str], ...], *, explicit: bool, now: float,
        ring: tuple[int, ...] = (),
    ) -> int:
        """Start creating a topic; the outcome appears in ``completed`` under the returned id
        (possibly at once). The caller has validated the definition; the arbiter does again."""
        self._rid = (self._rid + 1) & 0xFFFFFFFF
        token = self.host.rng.getrandbits(64) or 1
        msg = Create(self._rid, token, explicit, name, num_partitions, replication_factor,
                     configs, ring)
        req = _Request(msg, now + self.host.cfg.create_timeout_s, now)
        self._requests[msg.rid] = req
        self._by_name.setdefault(name, set()).add(msg.rid)
        if not self._settle(req):
            self._send_request(req, now)
        return msg.rid

    def cancel(self, rid: int) -> None:
        """Forget a request (its caller stopped waiting); an arbiter may still commit it."""
        req = self._requests.get(rid)
        if req is not None:
            self._finish(req, None)
        self.completed.pop(rid, None)

    def busy(self) -> bool:
        """Requests or proposals under way (timers to run)."""
        return bool(self._requests or self._proposals)

    def _finish(self, req: _Request, outcome: CreateOutcome | None) -> None:
        rid = req.msg.rid
        del self._requests[rid]
        rids = self._by_name[req.msg.name]
        rids.discard(rid)
        if not rids:
            del self._by_name[req.msg.name]
        if outcome is not None:
            self.completed[rid] = outcome

    def _settle(self, req: _Request) -> bool:
        """Finish ``req`` from the table if it holds a record of the name."""
        rec = self.host.topics.get(req.msg.name)
        if rec is None:
            return False
        if rec.token == req.msg.token:
            self._finish(req, CreateOutcome(0, rec))
        else:
            self._finish(req, CreateOutcome(TopicAlreadyExists.code, rec,
                                            f"topic {rec.name!r} already exists"))
        return True

    def _send_request(self, req: _Request, now: float) -> None:
        host = self.host
        req.next_send = now + host.cfg.create_retry_s
        arbiter = host.topic_arbiter(req.msg.name)
        if arbiter == host.node_id:
            self._arbitrate(_Waiter(arbiter, None, req.msg.rid, req.msg.token), req.msg, now)
            return
        m = host.members.get(arbiter) if arbiter is not None else None
        if m is not None:
            host.counters["creates_forwarded"] += 1
            host.send_message(m.gossip_addr, encode_message(req.msg), pad=True)

    def on_result(self, msg: CreateResult) -> None:
        req = self._requests.get(msg.rid)
        if req is None or msg.retry:
            return  # late or duplicate; or not decided there: the retry timer asks again
        rec = msg.record
        if rec is not None:
            if rec.name != req.msg.name:
                self.host.counters["dropped_create_mismatch"] += 1
                return
            if rec.deleted:
                self.host.store_topic(rec)
                return  # not an answer: the retry timer asks again
            self.host.store_topic(rec)  # settles req through on_record when it is taken
            if msg.rid in self._requests and not self._settle(req):
                # This broker refuses the record (its own limits): say so rather than retry.
                exc = refusal(rec.name, self.host.topic_problem(rec) or "refused",
                              self.host.limits)
                self._finish(req, CreateOutcome(exc.code, None, exc.message))
        elif msg.code != 0:
            cls = error_for_code(msg.code)
            name = cls.wire_name if cls is not None else str(msg.code)
            self._finish(req, CreateOutcome(msg.code, None,
                                            f"topic {req.msg.name!r} refused by its arbiter: "
                                            f"{name}"))

    # --- every broker: a record entered the table -------------------------------------------
    def on_record(self, rec: TopicRecord) -> None:
        name = rec.name
        self._promises.pop(name, None)
        if self.host.topics.get(name) is None:
            # A deletion record: a proposal of the name starts again above it (its waiters
            # retry); requests wait for a live record.
            prop = self._proposals.get(name)
            if prop is not None:
                self._abandon(prop)
            return
        prop = self._proposals.pop(name, None)
        if prop is not None:
            del self._pids[prop.pid]
            for w in prop.waiters:
                self._answer(w, self.host.topics.get(name) or rec, reply=False)
        for rid in list(self._by_name.get(name, ())):
            req = self._requests.get(rid)
            if req is not None:
                self._settle(req)

    # --- arbiter ----------------------------------------------------------------------------
    def on_create(self, msg: Create, sender: int, addr: Addr, now: float) -> None:
        self._arbitrate(_Waiter(sender, addr, msg.rid, msg.token), msg, now)

    def _reply(self, w: _Waiter, result: CreateResult, *, reply: bool = True) -> None:
        """Answer a waiter: ``reply`` when answering the datagram being handled (its CREATE);
        answers to waiters queued earlier go out uncapped."""
        if w.addr is None:
            self.on_result(result)
        else:
            self.host.send_message(w.addr, encode_message(result), reply=reply)

    def _answer(self, w: _Waiter, rec: TopicRecord, *, reply: bool = True) -> None:
        code = 0 if rec.token == w.token else TopicAlreadyExists.code
        self._reply(w, CreateResult(w.rid, False, code, rec), reply=reply)

    def _arbitrate(self, w: _Waiter, msg: Create, now: float) -> None:
        host = self.host
        name = msg.name
        try:
            validate_topic_name(name)
            rf = validate_replication_factor(msg.replication_factor, replicates=True)
            if msg.num_partitions < 1:
                raise InvalidPartitions(f"{msg.num_partitions} partitions requested")
        except KafkaError as exc:
            self._reply(w, CreateResult(w.rid, False, exc.code))
            return
        if host.topic_arbiter(name) != host.node_id or not host.joined:
            host.counters["creates_redirected"] += 1
            self._reply(w, CreateResult(w.rid, True, 0))
            return
        rec = host.topics.get(name)
        if rec is not None:
            self._answer(w, rec)
            return
        # A deleted name's new topic is of the next creation epoch, so it outranks every record
        # of the deleted one.
        tomb = host.topics.held(name)
        epoch = 0 if tomb is None else tomb.epoch + 1
        prop = self._proposals.get(name)
        if prop is not None:
            if len(prop.waiters) < MAX_WAITERS and not any(
                    x.node == w.node and x.rid == w.rid for x in prop.waiters):
                prop.waiters.append(w)
            return
        promise = self._promises.get(name)
        if (promise is not None and promise.expires > now) or (
                len(self._proposals) >= MAX_PROPOSALS):
            host.counters["creates_busy"] += 1
            self._reply(w, CreateResult(w.rid, True, 0))
            return
        ring = msg.ring or replica_placement.assign_ring(name, host.members.live_ids(),
                                                 msg.num_partitions, rf)
        rec = TopicRecord(name, 1, host.node_id, msg.num_partitions, rf, ring, msg.configs,
                          msg.explicit, msg.token, epoch=epoch)
        problem = host.topic_problem(rec)
        if problem is not None:
            self._reply(w, CreateResult(w.rid, False, refusal(name, problem, host.limits).code))
            return
        if len(encode_update(rec)) > host.record_room():
            self._reply(w, CreateResult(w.rid, False, InvalidConfig.code))
            return
        self._pid = (self._pid + 1) & 0xFFFFFFFF
        peers = {m.node_id for m in host.members.live_peers()}
        prop = _Proposal(self._pid, rec, peers, now + host.cfg.create_propose_s, now, [w])
        self._proposals[name] = prop
        self._pids[prop.pid] = name
        host.counters["proposals"] += 1
        self._advance(prop, now)

    def _advance(self, prop: _Proposal, now: float) -> None:
        """Drop votes no longer needed (members declared down), commit when none is missing,
        else (re)send PROPOSE to the members whose vote is missing."""
        members = self.host.members
        for n in list(prop.needed):
            m = members.get(n)
            if m is None or not m.live:
                prop.needed.discard(n)
        if not prop.needed:
            self._commit(prop)
            return
        if now >= prop.next_send:
            prop.next_send = now + self.host.cfg.create_retry_s
            data = encode_message(Propose(prop.pid, prop.record))
            for n in prop.needed:
                self.host.send_message(members.members[n].gossip_addr, data, pad=True)

    def _commit(self, prop: _Proposal) -> None:
        host = self.host
        host.counters["proposals_committed"] += 1
        if host.store_topic(prop.record):  # on_record answers the waiters
            host.push_topic(prop.record)
            return
        # Unreachable (a record of the name arriving ends the proposal), but never leave
        # waiters hanging: answer them with whatever the table holds.
        self._abandon(prop)
        rec = host.topics.get(prop.record.name)
        if rec is not None:
            for w in prop.waiters:
                self._answer(w, rec, reply=False)

    def _abandon(self, prop: _Proposal) -> None:
        """Drop a proposal; its waiters retry on their own timers (remote ones resend CREATE,
        local ones are re-arbitrated), so nothing needs to be said to them."""
        self.host.counters["proposals_abandoned"] += 1
        del self._proposals[prop.record.name]
        del self._pids[prop.pid]

    def on_vote(self, msg: Vote, sender: int, now: float) -> None:
        name = self._pids.get(msg.pid)
        if name is None:
            return  # the proposal has ended
        prop = self._proposals[name]
        if msg.verdict == Verdict.OK:
            prop.needed.discard(sender)
            if not prop.needed:
                self._commit(prop)
        elif msg.verdict == Verdict.HAVE:
            rec = msg.record
            if rec is None or rec.name != name:
                self.host.counters["dropped_create_mismatch"] += 1
                return
            self.host.counters["proposals_met_a_record"] += 1
            taken = self.host.store_topic(rec)  # taken: on_record answers the waiters
            if self.host.topics.get(name) is None:
                # The voter holds a record of a creation deleted here, or a deletion record
                # this proposal does not outrank: tell it what we hold, and start again.
                held = self.host.topics.held(name)
                if held is not None and held != rec:
                    self.host.push_topic(held)
                if self._proposals.get(name) is prop:
                    self._abandon(prop)
            elif not taken:
                self._abandon(prop)
        else:
            self.host.counters["proposals_refused"] += 1
            self._abandon(prop)

    # --- voter ------------------------------------------------------------------------------
    def on_propose(self, msg: Propose, sender: int, addr: Addr, now: float) -> None:
        host = self.host
        rec = msg.record
        name = rec.name
        if rec.creator != sender:
            host.counters["dropped_create_mismatch"] += 1
            return
        have = host.topics.held(name)
        if have is not None and have.deleted and rank(have) < rank(rec):
            have = None  # the proposal is a new topic of a deleted name, ranked above it
        if have is not None:
            vote = Vote(msg.pid, Verdict.HAVE, have)
        elif name in self._proposals or host.topic_arbiter(name) != sender:
            vote = Vote(msg.pid, Verdict.REFUSE)
        else:
            p = self._promises.get(name)
            taken = p is not None and p.proposer != sender and p.expires > now
            full = p is None and len(self._promises) >= MAX_PROMISES and not self._purge(now)
            if taken or full:
                vote = Vote(msg.pid, Verdict.REFUSE)
            else:
                ttl = PROMISE_FACTOR * host.cfg.create_propose_s
                self._promises[name] = _Promise(sender, now + ttl)
                vote = Vote(msg.pid, Verdict.OK)
        if vote.verdict == Verdict.REFUSE:
            host.counters["votes_refused"] += 1
        host.send_message(addr, encode_message(vote), reply=True)

    def _purge(self, now: float) -> bool:
        """Forget expired promises; True if any was."""
        old = [n for n, p in self._promises.items() if p.expires <= now]
        for n in old:
            del self._promises[n]
        return bool(old)

    # --- timers -----------------------------------------------------------------------------
    def tick(self, now: float) -> None:
        if self._requests:
            for req in list(self._requests.values()):
                if req.msg.rid not in self._requests:
                    continue  # settled meanwhile by another request's arbitration
                if now >= req.deadline:
                    self._finish(req, CreateOutcome(
                        RequestTimedOut.code, None,
                        f"topic {req.msg.name!r}: no answer from its arbiter within "
                        f"{self.host.cfg.create_timeout_s:g} s"))
                elif now >= req.next_send:
                    self._send_request(req, now)
        if self._proposals:
            me = self.host.node_id
            for name, prop in list(self._proposals.items()):
                if self._proposals.get(name) is not prop:
                    continue
                if now >= prop.expires or self.host.topic_arbiter(name) != me:
                    self._abandon(prop)
                else:
                    self._advance(prop, now)

    def next_deadline(self) -> float:
        d = float("inf")
        for req in self._requests.values():
            d = min(d, req.next_send, req.deadline)
        for prop in self._proposals.values():
            d = min(d, prop.next_send, prop.expires)
        return d
