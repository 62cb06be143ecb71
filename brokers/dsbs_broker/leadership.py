"""Leadership: elections, ISR changes and their acknowledgements for replicated partitions.

Sans-IO, owned and driven by the gossip node (``SwimNode``: ``tick``, ``on_message``); the
rules are ``leaders.py``'s, the records live in the topic table (``TopicStore.partitions``).

* **Elections.** Whenever the member table or the topic table moved, every broker looks at the
  partitions it is a replica of: where the recorded leader is down and this broker is the first
  live replica of the ISR it knows, it writes a record naming itself, one leader epoch up
  (``leaders.successor``). A leader also drops ISR members declared down at once
  (``leaders.without_down``). Nothing is decided before the broker has joined (a SYNC answer
  and a live peer): a restarted broker's tables may be stale.
* **Pushes and answers.** A record this broker writes is stored, gossiped, and pushed to every
  live replica in a LEADER_AND_ISR with an answer asked, resent every ``create_retry_s`` until
  each answers with the record it then holds (or is declared down). A member answers with
  whatever it holds after merging, so a leader also learns of a newer epoch this way.
* **An ISR change is confirmed** once every live member of the new ISR has answered: until
  then this broker's own view shows the ISR confirmed before it joined with the new one
  (``view_isr``: Kafka's "maximal ISR"), so the high watermark waits for both. A shrink thereby
  reaches every remaining in-sync replica before the leader acknowledges a record without the
  removed one, and none of them can later elect, from an older ISR, a replica that lacks it.
  ``IsrChanges.change_isr`` (the coordinator) returns at the confirmation.
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
from brokers.dsbs_broker import leaders
from brokers.dsbs_broker.config import GossipConfig
from brokers.dsbs_broker.membership import MemberTable
from brokers.dsbs_broker.metadata import TopicStore
from brokers.dsbs_broker.placement import replicas
from brokers.dsbs_broker.wire import LeaderAndIsr, PartitionRecord, encode_message

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
class _Written:
    """A record this broker wrote, until every live member of its ISR has answered."""

    record: PartitionRecord
    replicas: tuple[int, ...]
    base: tuple[int, ...]  # the ISR confirmed before it: the view shows both until confirmed
    waiting: set[int]  # live ISR members that have not answered
    told: set[int]  # other live replicas, sent to until they answer; not waited for
    next_send: float
    told_until: float  # then the others are left to gossip
    rids: list[int] = field(default_factory=list)


class Leadership:
    def __init__(self, host: LeadershipHost) -> None:
        self.host = host
        self._written: dict[tuple[str, int], _Written] = {}
        # Outcomes of change_isr requests, by request id, for the coordinator to collect.
        self.completed: dict[int, IsrOutcome] = {}
        self._rid = 0
        self._checked: tuple[int, int] = (-1, -1)

    # --- what the coordinator asks ------------------------------------------------------------
    def status(self, node_id: int) -> bool | None:
        m = self.host.members.get(node_id)
        return None if m is None else m.live

    def view_isr(self, rec: PartitionRecord) -> tuple[int, ...]:
        """The ISR this broker's view shows for ``rec`` (the record it holds): with an ISR
        change of its own unconfirmed, that ISR and the one confirmed before it."""
        w = self._written.get((rec.topic, rec.partition))
        if w is None or w.record != rec or not w.waiting:
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
            if w is not None and w.record == rec and w.waiting:
                w.rids.append(rid)
            else:
                self.completed[rid] = IsrOutcome(0, rec)
            return rid
        self.host.counters["isr_changes"] += 1
        self._write(new, reps, self._confirmed(rec), now, [rid])
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
        versions = (self.host.members.version, self.host.topics.version)
        if versions != self._checked and self.host.joined:
            self._checked = versions
            self._check(now)

    def next_deadline(self) -> float:
        return min((w.next_send for w in self._written.values()), default=float("inf"))

    def _advance(self, key: tuple[str, int], w: _Written, now: float) -> None:
        held = self.host.topics.partition(*key)
        if held != w.record:
            del self._written[key]
            self.host.counters["isr_changes_superseded"] += 1
            self._finish(w, IsrOutcome(*self._superseded(held, w.record)))
            return
        for r in [r for r in (*w.waiting, *w.told) if self.status(r) is not True]:
            w.waiting.discard(r)  # declared down: it elects nothing while down
            w.told.discard(r)
        if now >= w.told_until:
            w.told.clear()
        if not w.waiting:
            self._confirm(key, w)
        if not w.waiting and not w.told:
            del self._written[key]
        elif now >= w.next_send:
            self._send(w, now)

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
                new = leaders.successor(rec, reps, self.status, me)
                if new is not None:
                    host.counters["leader_elections"] += 1
                    self._write(new, reps, new.isr, now, [])
                    continue
                new = leaders.without_down(rec, reps, self.status, me)
                if new is not None:
                    host.counters["isr_changes"] += 1
                    self._write(new, reps, self._confirmed(rec), now, [])

    # --- writing, pushing, answers --------------------------------------------------------------
    def _confirmed(self, rec: PartitionRecord) -> tuple[int, ...]:
        """The ISR confirmed for ``rec``'s partition: with a change of ours unconfirmed, the
        one before it."""
        w = self._written.get((rec.topic, rec.partition))
        return w.base if w is not None and w.record == rec and w.waiting else rec.isr

    def _write(self, new: PartitionRecord, reps: tuple[int, ...], base: tuple[int, ...],
               now: float, rids: list[int]) -> None:
        host = self.host
        key = (new.topic, new.partition)
        if not host.store_partition(new):
            # Cannot happen for a record built from the one held; fail the asker, not the node.
            self._finish(_Written(new, reps, base, set(), set(), now, now, rids),
                         IsrOutcome(UnknownTopicOrPartition.code, None,
                                    f"{new.topic}-{new.partition}: record refused"))
            return
        live = {r for r in reps if r != host.node_id and self.status(r) is True}
        prev = self._written.pop(key, None)
        w = _Written(new, reps, base, live & set(new.isr), live - set(new.isr), now,
                     now + TELL_FOR * host.cfg.create_propose_s,
                     (prev.rids if prev is not None else []) + rids)
        self._written[key] = w
        if w.waiting or w.told:
            self._send(w, now)
        if not w.waiting:
            self._confirm(key, w)
            if not w.told:
                del self._written[key]

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
        """Every live ISR member holds the record (the others may still be told)."""
        if w.base != w.record.isr:
            self.host.counters["isr_changes_confirmed"] += 1
            self.host.topics.touch(key[0])  # the view drops the confirmed-before ISR
        self._finish(w, IsrOutcome(0, w.record))
        w.base = w.record.isr

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
        w = self._written.get((rec.topic, rec.partition))
        if w is None or leaders.order(rec) < leaders.order(w.record):
            return
        key = (rec.topic, rec.partition)
        w.told.discard(sender)
        if sender in w.waiting:
            w.waiting.discard(sender)
            if not w.waiting:
                self._confirm(key, w)
        if not w.waiting and not w.told:
            del self._written[key]
