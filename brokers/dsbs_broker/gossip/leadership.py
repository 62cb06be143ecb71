"""Leadership: elections (votes), ISR changes and their acknowledgements for replicated partitions.

Sans-IO, owned and driven by the gossip node (``SwimNode``: ``tick``, ``on_message``); the
rules are ``tables/leaders.py``'s, the records live in the topic table (``TopicStore.partitions``).

* **Elections are votes.** Whenever the member table or the topic table moved, every broker
  looks at the partitions it is a replica of: where the recorded leader is down and this broker
  is the first live replica of the ISR it knows (``leaders.successor``), it stands (``_stand``).
  First it asks the other replicas for the record each holds (a pre-vote: nothing is promised,
  and an answer from the recorded leader, which then runs, ends the candidacy). Once a majority
  of the replicas has answered, and the merged records still make it next in line, it asks for
  votes (STAND_FOR) on leader epoch e+1, e being the highest epoch held or promised. A replica
  grants an epoch once, to one candidate, and only above every epoch it holds or has promised
  and from a record at least as new as its own; the promise is on its disk (fsynced) before
  the BALLOT answer leaves. With a majority of grants (its own included) the candidate writes
  its record in that epoch. Two candidates cannot both win one epoch: their majorities share
  a replica, which granted the epoch once.
* **A promise fences the older epoch.** A replica that promised epoch E takes no pushed record
  of an older epoch, answers its leader's pushes with the promise instead (so an ISR change of
  the old leader is never confirmed by it), and its view shows no leader meanwhile, so its
  fetcher stops following the old leader. A leader that resumes after a pause therefore can
  acknowledge nothing with that replica, and learns from the answers that it is fenced. When
  the promised record does not come (the candidate died, or lost), the next in line stands
  again above the promise once ``create_propose_s`` passed; a fenced leader that still runs
  stands itself, and a replica that cannot stand tells the recorded leader of its promise.
* **A restarted leader does not lead on in its old epoch** (``resume``): every replicated
  partition its files say it leads waits for a majority of its replicas to answer; if the
  merged records still name it, it resigns (``leaders.resigned``: no leader, an ISR without
  it, confirmed like an ISR change), so another in-sync replica is elected, since an OS crash
  may have cost this broker's log what it had not flushed; alone in the ISR it stands for a
  new epoch itself. Kafka's controller likewise moves the leadership of a bounced broker.
* **Pushes and answers.** A record this broker writes is stored, gossiped, and pushed to every
  live replica in a LEADER_AND_ISR with an answer asked, resent every ``create_retry_s`` until
  each answers with the record it then holds (or is declared down). A member answers with
  whatever it holds after merging, so a leader also learns of a newer epoch this way.
* **An ISR change is confirmed** once every live member of the new ISR, and a majority of the
  replicas (this broker included), have answered: until then this broker's own view shows the
  ISR confirmed before it joined with the new one (``view_isr``: Kafka's "maximal ISR"), so the
  high watermark waits for both. A shrink thereby reaches every remaining in-sync replica
  before the leader acknowledges a record without the removed one, and none of them can later
  elect, from an older ISR, a replica that lacks it. The majority also makes a stale leader
  hear of a newer epoch or promise before it confirms a change. ``IsrChanges.change_isr`` (the
  coordinator) returns at the confirmation.
* A change whose record another broker's record supersedes (an election), or a promise
  fences, fails with the error the leader's replica manager expects (FENCED_LEADER_EPOCH,
  NOT_LEADER_OR_FOLLOWER).
* Two records of one leader epoch naming different leaders cannot come from votes; should one
  arrive (an old file, a bug), ``leader_epoch_conflicts`` counts it and the merge keeps one.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Protocol

from brokers.core.errors import (
    FencedLeaderEpoch,
    KafkaError,
    NotEnoughReplicas,
    NotLeaderOrFollower,
    UnknownTopicOrPartition,
)
from brokers.dsbs_broker.config import GossipConfig
from brokers.dsbs_broker.packets.wire import (
    Ballot,
    LeaderAndIsr,
    PartitionRecord,
    Promise,
    StandFor,
    Status,
    encode_message,
)
from brokers.dsbs_broker.tables import leaders
from brokers.dsbs_broker.tables.members import MemberTable
from brokers.dsbs_broker.tables.replica_placement import replicas
from brokers.dsbs_broker.tables.topics import TopicStore

Addr = tuple[str, int]
Key = tuple[str, int]  # topic, partition

# Replicas outside the new ISR are pushed a record for this many create_propose_s, then left to
# gossip: a removed replica that cannot be reached must not hold the change up.
TELL_FOR = 4


class LeadershipHost(Protocol):
    """What leadership needs from the gossip node (``SwimNode``)."""

    node_id: int
    cfg: GossipConfig
    members: MemberTable
    topics: TopicStore
    counters: defaultdict[str, int]

    @property
    def joined(self) -> bool: ...

    def store_partition(self, rec: PartitionRecord) -> bool:
        """Check, store and gossip a partition's record; True if taken."""
        ...

    def persist_promise(self, topic: str, partition: int, token: int, promise: Promise) -> None:
        """Make a promise durable (written and fsynced) before anything that relies on it is
        sent."""
        ...

    def send_message(self, addr: Addr, message: bytes, *, reply: bool = False,
                     pad: bool = False) -> None: ...


@dataclass(frozen=True, slots=True)
class IsrOutcome:
    """How an ISR change asked for by ``change_isr`` ended: ``code`` 0 with the record stored,
    else a Kafka error code and why."""

    code: int
    record: PartitionRecord | None = None
    message: str = ""


@dataclass(slots=True)
class _Candidacy:
    """This broker stands for a partition: first it asks the other replicas for the record they
    hold (``epoch`` 0, a pre-vote), then for their votes on ``epoch``."""

    replicas: tuple[int, ...]
    leader: int  # the recorded leader it would replace (itself when it leads on)
    asked: set[int]  # replicas that have not answered yet (in this phase)
    answered: set[int]  # itself included
    next_send: float
    decide_at: float  # the recorded leader gets until then to answer (it may be running)
    until: float
    epoch: int = 0  # the epoch asked for once votes are asked; 0 while canvassing
    granted: set[int] = field(default_factory=set)  # itself included
    refused: int = 0
    proposal: PartitionRecord | None = None


@dataclass(slots=True)
class _Written:
    """A record this broker wrote, pushed to the live replicas until they answer."""

    record: PartitionRecord
    replicas: tuple[int, ...]
    base: tuple[int, ...]  # the ISR confirmed before it: the view shows both until confirmed
    waiting: set[int]  # live ISR members that have not answered (all must)
    told: set[int]  # other live replicas that have not answered
    answered: set[int]  # itself included
    quorum: bool  # an ISR change: a majority of the replicas must have answered too
    next_send: float
    told_until: float  # once confirmed, replicas still silent are left to gossip then
    rids: list[int] = field(default_factory=list)
    confirmed: bool = False

    def complete(self) -> bool:
        return not self.waiting and (not self.quorum
                                     or 2 * len(self.answered) > len(self.replicas))


class Leadership:
    def __init__(self, host: LeadershipHost) -> None:
        self.host = host
        self._written: dict[Key, _Written] = {}
        self._candidacies: dict[Key, _Candidacy] = {}
        # Outcomes of change_isr requests, by request id, for the coordinator to collect.
        self.completed: dict[int, IsrOutcome] = {}
        self._rid = 0
        self._checked: tuple[int, int] = (-1, -1)
        # Partitions this broker's files say it leads, until a majority's records confirm it
        # still does (``resume``): the view shows them without a leader meanwhile.
        self.resuming: set[Key] = set()
        # The highest leader epoch promised for each partition (with the creation's token),
        # by this broker or, as far as it has heard, by another replica. ``persisted``: the
        # ones this broker made, which its files hold.
        self.promises: dict[Key, tuple[int, Promise]] = {}
        self.persisted: dict[Key, tuple[int, Promise]] = {}
        self._fenced_since: dict[Key, float] = {}
        self._told_at: dict[Key, float] = {}
        self._recheck_at = float("inf")

    def resume(self) -> None:
        """After a start from the files: every replicated partition they say this broker leads
        waits for a majority of its replicas to answer, then is handed on or led in a new
        epoch (module docstring). Views are cached: every change of ``resuming`` touches the
        topic."""
        me = self.host.node_id
        for name in self.host.topics.replicated:
            top = self.host.topics.get(name)
            if top is None:
                continue
            for p in range(top.num_partitions):
                held = self.host.topics.partition(name, p)
                if held is not None and held.leader == me:
                    self.resuming.add((name, p))

    def load_promises(self, entries: dict[Key, tuple[int, Promise]]) -> None:
        """The promises this broker's files hold (before ``resume``)."""
        for key, (token, promise) in entries.items():
            cur = self.persisted.get(key)
            if cur is None or (cur[0], cur[1].epoch) < (token, promise.epoch):
                self.persisted[key] = (token, promise)
                self.promises[key] = (token, promise)

    # --- what the coordinator asks ------------------------------------------------------------
    def status(self, node_id: int) -> Status | None:
        """A member's status in this broker's table, None if it is not there."""
        m = self.host.members.get(node_id)
        return None if m is None else m.status

    def live(self, node_id: int) -> bool:
        """Alive or suspect here."""
        return self.status(node_id) in leaders.LIVE

    def pending(self, key: Key, rec: PartitionRecord) -> Promise | None:
        """The promise known for ``rec``'s partition if it is for a newer epoch than ``rec``'s:
        an election is under way (or was abandoned), and ``rec``'s epoch is fenced."""
        held = self.promises.get(key)
        if held is None or held[0] != rec.token or held[1].epoch <= rec.leader_epoch:
            return None
        return held[1]

    def fenced(self, topic: str, partition: int) -> bool:
        """Is the held record's epoch fenced by a promise here (the view shows no leader)?"""
        rec = self.host.topics.partition(topic, partition)
        return rec is not None and self.pending((topic, partition), rec) is not None

    def view_isr(self, rec: PartitionRecord) -> tuple[int, ...]:
        """The ISR this broker's view shows for ``rec`` (the record it holds): with an ISR
        change of its own unconfirmed, that ISR and the one confirmed before it."""
        w = self._written.get((rec.topic, rec.partition))
        if w is None or w.record != rec or w.confirmed:
            return rec.isr
        both = set(w.base) | set(rec.isr)
        return tuple(r for r in w.replicas if r in both)

    def change_isr(self, topic: str, partition: int, leader_epoch: int, isr: list[int],
                   now: float) -> int:
        """Write ``isr`` as the partition's ISR on behalf of this broker as its leader in
        ``leader_epoch``; returns the request id whose outcome ``completed`` will hold once
        confirmed or superseded. Raises what ``leaders.with_isr`` raises."""
        top = self.host.topics.get(topic)
        rec = self.host.topics.partition(topic, partition)
        if top is None or rec is None or top.replication_factor < 2:
            raise UnknownTopicOrPartition(f"{topic}-{partition} is no replicated partition")
        promise = self.pending((topic, partition), rec)
        if promise is not None:
            raise NotLeaderOrFollower(f"{topic}-{partition}: leader epoch {promise.epoch} is "
                                      f"promised to broker {promise.candidate}")
        reps = replicas(top.ring, top.replication_factor, partition)
        new = leaders.with_isr(rec, self.host.node_id, leader_epoch, isr, reps)
        if set(new.isr) < set(rec.isr) and not leaders.majority(reps, self.status,
                                                                 self.host.node_id):
            raise NotEnoughReplicas(f"{topic}-{partition}: fewer than half of the replicas "
                                    "are live in this broker's view; the ISR cannot shrink")
        self._rid = (self._rid + 1) & 0xFFFFFFFF
        rid = self._rid
        w = self._written.get((topic, partition))
        if new is rec:
            if w is not None and w.record == rec and not w.confirmed:
                w.rids.append(rid)
            else:
                self.completed[rid] = IsrOutcome(0, rec)
            return rid
        self.host.counters["isr_changes"] += 1
        self._write(new, reps, self._confirmed(rec), now, [rid], quorum=True)
        return rid

    def cancel(self, rid: int) -> None:
        """The asker of ``rid`` gave up; the change itself goes on."""
        self.completed.pop(rid, None)
        for w in self._written.values():
            if rid in w.rids:
                w.rids.remove(rid)

    # --- the node's timer -----------------------------------------------------------------------
    def tick(self, now: float) -> None:
        if self._written:
            for tp, w in list(self._written.items()):
                self._advance(tp, w, now)
        for tp, c in list(self._candidacies.items()):
            if now >= c.until:
                del self._candidacies[tp]  # no majority answered: try again later
                self._checked = (-1, -1)
            elif now >= c.next_send:
                self._canvass(tp, c, now)
        if now >= self._recheck_at:
            self._recheck_at = float("inf")
            self._checked = (-1, -1)
        versions = (self.host.members.version, self.host.topics.version)
        if versions != self._checked and self.host.joined:
            self._checked = versions
            self._check(now)

    def next_deadline(self) -> float:
        sends = [w.next_send for w in self._written.values()]
        sends += [c.next_send for c in self._candidacies.values()]
        return min((*sends, self._recheck_at))

    def _wake(self, at: float) -> None:
        self._recheck_at = min(self._recheck_at, at)

    def _advance(self, key: Key, w: _Written, now: float) -> None:
        held = self.host.topics.partition(*key)
        promise = None if held is None else self.pending(key, w.record)
        if held != w.record or promise is not None:
            del self._written[key]
            if not w.confirmed:
                self.host.counters["isr_changes_superseded"] += 1
                self._finish(w, IsrOutcome(*self._superseded(held, w.record, promise)))
            return
        # Whom to ask follows the member table: one declared down is not waited for (it elects
        # nothing while down), one back (or newly seen) is asked again.
        live = {r for r in w.replicas if r != self.host.node_id and self.live(r)} - w.answered
        isr = set(w.record.isr)
        w.waiting = live & isr
        w.told = live - isr
        self._settle(key, w, now)
        if key in self._written and now >= w.next_send:
            self._send(w, now)

    def _settle(self, key: Key, w: _Written, now: float) -> None:
        """Confirm ``w`` once complete; forget it once nobody is left to tell."""
        if not w.complete():
            return
        if not w.confirmed:
            self._confirm(key, w)
        if not w.told or now >= w.told_until:
            del self._written[key]

    def _superseded(self, held: PartitionRecord | None, mine: PartitionRecord,
                    promise: Promise | None = None) -> tuple[int, None, str]:
        error: type[KafkaError]
        if held is None:
            error, why = UnknownTopicOrPartition, "the topic is gone"
        elif promise is not None:
            error, why = FencedLeaderEpoch, (f"leader epoch {promise.epoch} is promised to "
                                             f"broker {promise.candidate}")
        elif held.leader != self.host.node_id:
            error, why = NotLeaderOrFollower, f"broker {held.leader} leads now"
        else:
            error, why = FencedLeaderEpoch, f"leader epoch {held.leader_epoch} is held"
        return error.code, None, (f"{mine.topic}-{mine.partition}: ISR change superseded: "
                                  f"{why}")

    # --- promises ----------------------------------------------------------------------------
    def _learn(self, key: Key, token: int, promise: Promise, now: float, *,
               durable: bool) -> bool:
        """Hold ``promise`` for the partition if it is newer than the one held; ``durable``:
        this broker's own, written and fsynced first. True if taken."""
        if durable and self.persisted.get(key) != (token, promise):
            # Also when only heard of before: the grant itself must be on this disk.
            self.host.persist_promise(key[0], key[1], token, promise)
            self.persisted[key] = (token, promise)
        cur = self.promises.get(key)
        if cur is not None and cur[0] == token and cur[1].epoch >= promise.epoch:
            return False
        self.promises[key] = (token, promise)
        self._fenced_since[key] = now
        self._wake(now + self.host.cfg.create_propose_s)
        self.host.topics.touch(key[0])  # the cached view shows no leader while fenced
        return True

    def _next_epoch(self, key: Key, rec: PartitionRecord) -> int:
        """Above every epoch held or promised (as far as this broker knows)."""
        promise = self.pending(key, rec)
        return max(rec.leader_epoch, promise.epoch if promise is not None else 0) + 1

    # --- elections and dead members --------------------------------------------------------------
    def _check(self, now: float) -> None:
        host = self.host
        me = host.node_id
        for name in sorted(host.topics.replicated):
            top = host.topics.get(name)
            if top is None:
                continue
            for p in range(top.num_partitions):
                reps = replicas(top.ring, top.replication_factor, p)
                if me not in reps:
                    continue
                rec = host.topics.partition(name, p)
                assert rec is not None
                key = (name, p)
                if key in self.resuming:
                    if rec.leader != me:
                        self.resuming.discard(key)  # a newer record came meanwhile
                        host.topics.touch(name)  # the view, cached, must show it
                    elif key not in self._candidacies:
                        self._stand(rec, reps, now)
                    continue
                promise = self.pending(key, rec)
                if promise is not None:
                    if key not in self._candidacies:
                        self._fenced(key, rec, reps, promise, now)
                    continue
                if leaders.successor(rec, reps, self.status, me) is not None:
                    if key not in self._candidacies:
                        self._stand(rec, reps, now)
                    continue
                self._candidacies.pop(key, None)
                new = leaders.without_down(rec, reps, self.status, me)
                if new is not None:
                    host.counters["isr_changes"] += 1
                    self._write(new, reps, self._confirmed(rec), now, [], quorum=True)

    def _fenced(self, key: Key, rec: PartitionRecord, reps: tuple[int, ...], promise: Promise,
                now: float) -> None:
        """``rec``'s epoch is fenced by ``promise`` and the promised record has not come: give
        its candidate ``create_propose_s`` (unless it is down), then stand above it if this
        broker leads or is next in line, else tell the recorded leader, which may not know."""
        me = self.host.node_id
        due = self._fenced_since.setdefault(key, now) + self.host.cfg.create_propose_s
        if now < due and promise.candidate != me and self.status(promise.candidate) not in (
                leaders.DOWN):
            self._wake(due)
            return
        if rec.leader == me or leaders.successor(rec, reps, self.status, me) is not None:
            self._stand(rec, reps, now)
            return
        self._wake(now + self.host.cfg.create_propose_s)
        if (rec.leader != leaders.NO_LEADER and self.live(rec.leader)
                and now >= self._told_at.get(key, 0.0) + self.host.cfg.create_propose_s):
            m = self.host.members.get(rec.leader)
            if m is not None:
                self._told_at[key] = now
                self.host.send_message(m.gossip_addr,
                                       encode_message(LeaderAndIsr(False, rec, promise)))
                self.host.counters["leader_and_isr_out"] += 1

    def _stand(self, rec: PartitionRecord, reps: tuple[int, ...], now: float) -> None:
        """Next in line (or leading on after a restart or a fence): ask every other replica
        for its record first. A majority of the replicas (this one included) must have
        answered before votes are asked, and only if the records they hold, merged with its
        own, still make it next in line. Every confirmed ISR change is held by every live
        member of its ISR, so with two or more of them a majority's answers include the
        latest one: a replica that missed its removal from the ISR learns it here instead of
        electing itself from an older ISR. The recorded leader is asked too, dead or not,
        and has ``create_retry_s`` to answer: an answer means it runs (a death declared in
        error, often a partition's stale news after it healed), and nobody takes over."""
        tp = (rec.topic, rec.partition)
        me = self.host.node_id
        cfg = self.host.cfg
        wait = 0.0 if rec.leader == me else cfg.create_retry_s  # leading on: nobody to wait for
        c = _Candidacy(reps, rec.leader, {r for r in reps if r != me}, {me}, now,
                       now + wait, now + cfg.create_propose_s)
        self._candidacies[tp] = c
        self._canvass(tp, c, now)

    def _canvass(self, tp: Key, c: _Candidacy, now: float) -> None:
        held = self.host.topics.partition(*tp)
        if held is None:
            del self._candidacies[tp]
            return
        if c.epoch:
            self._ask_votes(c, now)
            return
        if 2 * len(c.answered) > len(c.replicas) and now >= c.decide_at:
            self._decide(tp, c, held, now)
            return
        msg = encode_message(LeaderAndIsr(True, held))
        for r in c.asked:
            m = self.host.members.get(r)
            if m is not None:
                self.host.send_message(m.gossip_addr, msg)
                self.host.counters["leader_and_isr_out"] += 1
        c.next_send = max(now + self.host.cfg.create_retry_s, c.decide_at)

    def _decide(self, tp: Key, c: _Candidacy, held: PartitionRecord, now: float) -> None:
        """A majority's records are in: resign, or ask for votes, or give up."""
        me = self.host.node_id
        host = self.host
        if tp in self.resuming:
            self.resuming.discard(tp)
            host.topics.touch(tp[0])  # the view shows whatever the majority held
            if held.leader != me:
                del self._candidacies[tp]
                return
            gone = leaders.resigned(held, c.replicas, self.status, me)
            if gone is not None:
                del self._candidacies[tp]
                host.counters["leader_resignations"] += 1
                self._write(gone, c.replicas, self._confirmed(held), now, [], quorum=True)
                return
        epoch = self._next_epoch(tp, held)
        if held.leader == me:
            proposal = leaders.restood(held, c.replicas, self.status, me, epoch)
        else:
            proposal = leaders.successor(held, c.replicas, self.status, me, epoch)
        if proposal is None:
            del self._candidacies[tp]
            return
        self._learn(tp, held.token, Promise(epoch, me), now, durable=True)  # its own vote
        c.epoch = epoch
        c.proposal = proposal
        c.granted = {me}
        c.asked = {r for r in c.replicas if r != me}
        c.until = now + host.cfg.create_propose_s
        self._ask_votes(c, now)

    def _ask_votes(self, c: _Candidacy, now: float) -> None:
        assert c.proposal is not None
        msg = encode_message(StandFor(c.proposal))
        for r in c.asked:
            m = self.host.members.get(r)
            if m is not None:
                self.host.send_message(m.gossip_addr, msg)
                self.host.counters["stand_for_out"] += 1
        c.next_send = now + self.host.cfg.create_retry_s

    def _elected(self, tp: Key, c: _Candidacy, now: float) -> None:
        """A majority granted ``c.epoch``: write the record, rebuilt from what is held now."""
        del self._candidacies[tp]
        held = self.host.topics.partition(*tp)
        me = self.host.node_id
        if held is None or held.leader_epoch >= c.epoch:
            return
        if held.leader == me:
            new = leaders.restood(held, c.replicas, self.status, me, c.epoch)
        else:
            new = leaders.successor(held, c.replicas, self.status, me, c.epoch)
        if new is None:
            return
        self.host.counters["leader_elections"] += 1
        self._write(new, c.replicas, new.isr, now, [], quorum=False)

    # --- writing, pushing, answers --------------------------------------------------------------
    def _confirmed(self, rec: PartitionRecord) -> tuple[int, ...]:
        """The ISR confirmed for ``rec``'s partition: with a change of ours unconfirmed, the
        one before it."""
        w = self._written.get((rec.topic, rec.partition))
        return w.base if w is not None and w.record == rec and not w.confirmed else rec.isr

    def _write(self, new: PartitionRecord, reps: tuple[int, ...], base: tuple[int, ...],
               now: float, rids: list[int], *, quorum: bool) -> None:
        """Store, gossip and push a record this broker writes. ``quorum``: an ISR change,
        confirmed once a majority of the replicas has also answered (a stale leader thereby
        hears of a newer epoch before it acknowledges anything without a removed member; an
        election has had its majority before it was written)."""
        host = self.host
        key = (new.topic, new.partition)
        prev = self._written.pop(key, None)
        rids = (prev.rids if prev is not None else []) + rids
        if not host.store_partition(new):
            # Cannot happen for a record built from the one held; fail the asker, not the node.
            for rid in rids:
                self.completed[rid] = IsrOutcome(UnknownTopicOrPartition.code, None,
                                                 f"{new.topic}-{new.partition}: refused")
            return
        me = host.node_id
        live = {r for r in reps if r != me and self.live(r)}
        w = _Written(new, reps, base, live & set(new.isr), live - set(new.isr), {me}, quorum,
                     now, now + TELL_FOR * host.cfg.create_propose_s, rids)
        self._written[key] = w
        if w.waiting or w.told:
            self._send(w, now)
        self._settle(key, w, now)

    def _send(self, w: _Written, now: float) -> None:
        host = self.host
        msg = encode_message(LeaderAndIsr(True, w.record))
        for r in (*w.waiting, *w.told):
            m = host.members.get(r)
            if m is not None:
                host.send_message(m.gossip_addr, msg)
                host.counters["leader_and_isr_out"] += 1
        w.next_send = now + host.cfg.create_retry_s

    def _confirm(self, key: Key, w: _Written) -> None:
        """Every live ISR member (and for an ISR change a majority) holds the record."""
        w.confirmed = True
        if w.base != w.record.isr:
            self.host.counters["isr_changes_confirmed"] += 1
            self.host.topics.touch(key[0])  # the view drops the confirmed-before ISR
        self._finish(w, IsrOutcome(0, w.record))

    def _finish(self, w: _Written, outcome: IsrOutcome) -> None:
        for rid in w.rids:
            self.completed[rid] = outcome
        w.rids = []

    def _store(self, rec: PartitionRecord) -> None:
        """Store a member's record, counting a second leader of one epoch (module docstring)."""
        held = self.host.topics.partition(rec.topic, rec.partition)
        if (held is not None and held.token == rec.token
                and held.leader_epoch == rec.leader_epoch and held.leader != rec.leader
                and leaders.NO_LEADER not in (held.leader, rec.leader)):
            self.host.counters["leader_epoch_conflicts"] += 1
        self.host.store_partition(rec)

    def on_message(self, msg: LeaderAndIsr, sender: int, addr: Addr, now: float) -> None:
        """A record pushed by its leader (answer with the one held then), or an answer."""
        host = self.host
        rec = msg.record
        key = (rec.topic, rec.partition)
        if msg.reply:
            held = host.topics.partition(*key)
            promise = None if held is None else self.pending(key, held)
            if held is not None and promise is not None and rec.leader_epoch < promise.epoch:
                # Fenced: an older epoch's record is not taken, and the answer says why, so
                # its leader does not count this replica towards a change.
                host.counters["leader_and_isr_fenced"] += 1
                host.send_message(addr, encode_message(LeaderAndIsr(False, held, promise)),
                                  reply=True)
                return
            self._store(rec)
            held = host.topics.partition(*key)
            if held is None or held.token != rec.token:
                return  # no such topic here yet: the leader's next push (or gossip) comes
            host.send_message(addr, encode_message(
                LeaderAndIsr(False, held, self.pending(key, held))), reply=True)
            return
        self._store(rec)
        held = host.topics.partition(*key)
        if held is None or held.token != rec.token:
            return
        if msg.promise is not None:
            self._learn(key, rec.token, msg.promise, now, durable=False)
        c = self._candidacies.get(key)
        if c is not None and not c.epoch and sender in c.asked:
            c.asked.discard(sender)
            if sender == c.leader and sender != host.node_id:
                del self._candidacies[key]  # it runs: no takeover
            else:
                c.answered.add(sender)
                c.next_send = c.decide_at  # decide then
        w = self._written.get(key)
        if w is None or leaders.order(rec) < leaders.order(w.record):
            return
        if msg.promise is not None and msg.promise.epoch > w.record.leader_epoch:
            return  # fenced: not an answer (``_advance`` fails the change)
        w.told.discard(sender)
        w.waiting.discard(sender)
        w.answered.add(sender)
        self._settle(key, w, 0.0)

    def on_stand(self, msg: StandFor, sender: int, addr: Addr, now: float) -> None:
        """A candidate asks for a vote: grant its epoch if nothing here forbids it."""
        host = self.host
        rec = msg.record
        key = (rec.topic, rec.partition)
        held = host.topics.partition(*key)
        if held is None or held.token != rec.token:
            return  # no such topic here yet: the candidate asks again
        promise = self.promises.get(key)
        mine = promise[1] if promise is not None and promise[0] == rec.token else None
        me = host.node_id
        recorded = held.leader
        grant = (rec.leader == sender != me
                 and rec.leader_epoch > held.leader_epoch
                 and rec.version > held.version  # from a record at least as new as ours
                 and (mine is None or mine.epoch < rec.leader_epoch
                      or (mine.epoch == rec.leader_epoch and mine.candidate == sender))
                 # A leader that runs, serving, does not vote itself out; nor does a
                 # replica vote out a leader it sees alive (the candidate may be the one cut
                 # off): both only delay an election until failure detection agrees.
                 and not (recorded == me and key not in self.resuming
                          and self.pending(key, held) is None)
                 and not (recorded not in (leaders.NO_LEADER, me, sender)
                          and self.status(recorded) == Status.ALIVE))
        if grant:
            self._learn(key, rec.token, Promise(rec.leader_epoch, sender), now, durable=True)
            host.counters["ballots_granted"] += 1
        else:
            host.counters["ballots_refused"] += 1
        host.send_message(addr, encode_message(Ballot(grant, rec.leader_epoch, held,
                                                      self.pending(key, held))), reply=True)

    def on_ballot(self, msg: Ballot, sender: int, now: float) -> None:
        """A replica's answer to this broker's candidacy."""
        rec = msg.record
        key = (rec.topic, rec.partition)
        self._store(rec)
        if msg.promise is not None and msg.promise.candidate != self.host.node_id:
            self._learn(key, rec.token, msg.promise, now, durable=False)
        c = self._candidacies.get(key)
        if c is None or not c.epoch or msg.epoch != c.epoch or sender not in c.asked:
            return
        c.asked.discard(sender)
        if msg.granted:
            c.granted.add(sender)
            if 2 * len(c.granted) > len(c.replicas):
                self._elected(key, c, now)
            return
        c.refused += 1
        if 2 * (len(c.replicas) - c.refused) <= len(c.replicas):
            # No majority is left to grant it: stand again (above what was learnt) later.
            del self._candidacies[key]
            self.host.counters["candidacies_lost"] += 1
            self._wake(now + self.host.cfg.create_retry_s)
