"""Leadership: elections, ISR changes and their acknowledgements for replicated partitions.

Sans-IO, owned and driven by the gossip node (``SwimNode``: ``tick``, ``on_message``); the
rules are ``tables/leaders.py``'s, the records live in the topic table (``TopicStore.partitions``).

* **Elections.** Whenever the member table or the topic table moved, every broker looks at the
  partitions it is a replica of: where the recorded leader is down and this broker is the first
  live replica of the ISR it knows (``leaders.successor``), it asks the other live replicas for
  the record each holds; once a majority of the replicas (itself included) has answered, and
  if the records they hold still make it next in line, it writes a record naming itself, one
  leader epoch up (``_stand``). A leader also drops ISR members declared down at once
  (``leaders.without_down``). Nothing is decided before the broker has joined (a SYNC answer
  and a live peer): a restarted broker's tables may be stale.
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
  hear of a newer epoch (an answer carries the record the replica holds) before it confirms a
  change. ``IsrChanges.change_isr`` (the coordinator) returns at the confirmation.
* A change whose record another broker's record supersedes (an election) fails with the
  error the leader's replica manager expects (FENCED_LEADER_EPOCH, NOT_LEADER_OR_FOLLOWER).
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
from brokers.dsbs_broker.packets.wire import LeaderAndIsr, PartitionRecord, Status, encode_message
from brokers.dsbs_broker.tables import leaders
from brokers.dsbs_broker.tables.members import MemberTable
from brokers.dsbs_broker.tables.replica_placement import replicas
from brokers.dsbs_broker.tables.topics import TopicStore

Addr = tuple[str, int]

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
    """This broker is next in line for a partition: it asks the other live replicas for the
    record they hold before it takes over."""

    replicas: tuple[int, ...]
    leader: int  # the recorded leader it would replace
    asked: set[int]  # replicas that have not answered yet
    answered: set[int]  # itself included
    next_send: float
    decide_at: float  # the recorded leader gets until then to answer (it may be running)
    until: float


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
        self._written: dict[tuple[str, int], _Written] = {}
        self._candidacies: dict[tuple[str, int], _Candidacy] = {}
        # Outcomes of change_isr requests, by request id, for the coordinator to collect.
        self.completed: dict[int, IsrOutcome] = {}
        self._rid = 0
        self._checked: tuple[int, int] = (-1, -1)
        # Partitions this broker's files say it leads, until a majority's records confirm it
        # still does (``resume``): the view shows them without a leader meanwhile.
        self.resuming: set[tuple[str, int]] = set()

    def resume(self) -> None:
        """After a start from the files: every replicated partition they say this broker leads
        waits for a majority of its replicas to answer before it is served (another broker
        may have taken it over while this one was down, and the join brings the newer records
        of a few topics only). Views are cached: every change of ``resuming`` touches the
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

    # --- what the coordinator asks ------------------------------------------------------------
    def status(self, node_id: int) -> Status | None:
        """A member's status in this broker's table, None if it is not there."""
        m = self.host.members.get(node_id)
        return None if m is None else m.status

    def live(self, node_id: int) -> bool:
        """Alive or suspect here."""
        return self.status(node_id) in leaders.LIVE

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
        versions = (self.host.members.version, self.host.topics.version)
        if versions != self._checked and self.host.joined:
            self._checked = versions
            self._check(now)

    def next_deadline(self) -> float:
        sends = [w.next_send for w in self._written.values()]
        sends += [c.next_send for c in self._candidacies.values()]
        return min(sends, default=float("inf"))

    def _advance(self, key: tuple[str, int], w: _Written, now: float) -> None:
        held = self.host.topics.partition(*key)
        if held != w.record:
            del self._written[key]
            if not w.confirmed:
                self.host.counters["isr_changes_superseded"] += 1
                self._finish(w, IsrOutcome(*self._superseded(held, w.record)))
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

    def _settle(self, key: tuple[str, int], w: _Written, now: float) -> None:
        """Confirm ``w`` once complete; forget it once nobody is left to tell."""
        if not w.complete():
            return
        if not w.confirmed:
            self._confirm(key, w)
        if not w.told or now >= w.told_until:
            del self._written[key]

    def _superseded(self, held: PartitionRecord | None,
                    mine: PartitionRecord) -> tuple[int, None, str]:
        error: type[KafkaError]
        if held is None:
            error, why = UnknownTopicOrPartition, "the topic is gone"
        elif held.leader != self.host.node_id:
            error, why = NotLeaderOrFollower, f"broker {held.leader} leads now"
        else:
            error, why = FencedLeaderEpoch, f"leader epoch {held.leader_epoch} is held"
        return error.code, None, (f"{mine.topic}-{mine.partition}: ISR change superseded: "
                                  f"{why}")

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
                if (name, p) in self.resuming:
                    if rec.leader != me:
                        self.resuming.discard((name, p))  # a newer record came meanwhile
                        host.topics.touch(name)  # the view, cached, must show it
                    elif (name, p) not in self._candidacies:
                        self._stand(rec, reps, now)
                    continue
                if leaders.successor(rec, reps, self.status, me) is not None:
                    if (name, p) not in self._candidacies:
                        self._stand(rec, reps, now)
                    continue
                self._candidacies.pop((name, p), None)
                new = leaders.without_down(rec, reps, self.status, me)
                if new is not None:
                    host.counters["isr_changes"] += 1
                    self._write(new, reps, self._confirmed(rec), now, [], quorum=True)

    def _stand(self, rec: PartitionRecord, reps: tuple[int, ...], now: float) -> None:
        """Next in line (or resuming after a restart): ask every other replica for its
        record first. A majority of the replicas (this one included) must have answered
        before it takes over, and it takes over only if the records they hold, merged with
        its own, still make it next in line. Every confirmed ISR change is held by every
        live member of its ISR, so with two or more of them a majority's answers include the
        latest one: a replica that missed its removal from the ISR learns it here instead of
        electing itself from an older ISR. The recorded leader is asked too, dead or not,
        and has ``create_retry_s`` to answer: an answer means it runs (a death declared in
        error, often a partition's stale news after it healed), and nobody takes over."""
        tp = (rec.topic, rec.partition)
        me = self.host.node_id
        cfg = self.host.cfg
        wait = 0.0 if rec.leader == me else cfg.create_retry_s  # resuming: nobody to wait for
        c = _Candidacy(reps, rec.leader, {r for r in reps if r != me}, {me}, now,
                       now + wait, now + cfg.create_propose_s)
        self._candidacies[tp] = c
        self._canvass(tp, c, now)

    def _canvass(self, tp: tuple[str, int], c: _Candidacy, now: float) -> None:
        held = self.host.topics.partition(*tp)
        if held is None:
            del self._candidacies[tp]
            return
        if 2 * len(c.answered) > len(c.replicas) and now >= c.decide_at:
            del self._candidacies[tp]
            if tp in self.resuming:
                self.resuming.discard(tp)  # the view now shows whatever the majority held
                self.host.topics.touch(tp[0])
                return
            new = leaders.successor(held, c.replicas, self.status, self.host.node_id)
            if new is not None:
                self.host.counters["leader_elections"] += 1
                self._write(new, c.replicas, new.isr, now, [], quorum=False)
            return
        msg = encode_message(LeaderAndIsr(True, held))
        for r in c.asked:
            m = self.host.members.get(r)
            if m is not None:
                self.host.send_message(m.gossip_addr, msg)
                self.host.counters["leader_and_isr_out"] += 1
        c.next_send = max(now + self.host.cfg.create_retry_s, c.decide_at)

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

    def _confirm(self, key: tuple[str, int], w: _Written) -> None:
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

    def on_message(self, msg: LeaderAndIsr, sender: int, addr: Addr) -> None:
        """A record pushed by its leader (answer with the one held then), or an answer."""
        host = self.host
        rec = msg.record
        host.store_partition(rec)
        held = host.topics.partition(rec.topic, rec.partition)
        if held is None or held.token != rec.token:
            return  # no such topic here yet: the leader's next push (or gossip) comes
        if msg.reply:
            host.send_message(addr, encode_message(LeaderAndIsr(False, held)), reply=True)
            return
        c = self._candidacies.get((rec.topic, rec.partition))
        if c is not None and sender in c.asked:
            c.asked.discard(sender)
            if sender == c.leader:
                del self._candidacies[(rec.topic, rec.partition)]  # it runs: no takeover
            else:
                c.answered.add(sender)
                c.next_send = c.decide_at  # decide then
        key = (rec.topic, rec.partition)
        w = self._written.get(key)
        if w is None or leaders.order(rec) < leaders.order(w.record):
            return
        w.told.discard(sender)
        w.waiting.discard(sender)
        w.answered.add(sender)
        self._settle(key, w, 0.0)
