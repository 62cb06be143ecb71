"""Leader and ISR of a replicated DSBS partition: the rules every broker applies alike (sans-IO).

A partition of a topic with more than one replica has a record (``wire.PartitionRecord``):
its leader, leader epoch, in-sync replicas and a version that counts every change. The record
travels by gossip like a topic record; these pure functions say what a broker writes and what
it keeps. No broker decides for another: each writes only records that name itself as leader.

* **Before any change** a partition's record is implicit (``initial``): the first replica
  leads in epoch 0 with every replica in sync (their logs are all empty). Nothing is gossiped
  for a partition until something changes, so a replicated topic costs no traffic at creation.
* **Election** (``successor``). When the recorded leader is down (declared dead, or left) or
  has resigned (no leader), the first replica in replica order that is live and in the last
  ISR this broker knows writes a record naming itself in a newer epoch, with the ISR's live
  members, once a majority of the replicas has voted for that epoch (``gossip/leadership.py``).
  Only that broker writes it, so the broker that starts serving is the one the record names. A
  broker waits while an earlier ISR member's state is unknown (a member table still filling
  after a restart) or live: that member's turn comes first. ``restood`` is a leader's record
  in a newer epoch it won (fenced by a promise, or alone in its ISR after a restart);
  ``resigned`` a restarted leader's hand-over (no leader, an ISR without it).
* **ISR changes** (``with_isr``, ``without_down``) are written by the leader, in its epoch, one
  version up. The leader also drops members declared down at once (as ZooKeeper-era Kafka's
  controller does), without waiting for replica.lag.time.max.ms.
* **Majority of replicas** (``majority``). A broker elects itself, and a leader removes members
  from the ISR, only while it sees more than half of the partition's replicas alive (not
  merely suspect). A broker
  cut off from the others by a partition declares them dead like a crash; this rule keeps the
  smaller side from electing a leader of its own, or from shrinking the ISR to itself and
  acknowledging acks=all records the other side never sees. The price: with more than half of
  a partition's replicas down, it has no leader (or an ISR that cannot shrink) until enough
  return, where ZooKeeper-era Kafka would still elect the last in-sync replica.
* **Merge** (``merge``): the higher (leader epoch, version) wins, ties broken by content, so
  the choice is a join (commutative, associative, idempotent): brokers converge on one record
  whatever order records reach them in. An election outranks every record of the older epoch
  (the stale leader's late ISR changes included), and of two elections of one epoch the one
  made from the newer ISR (higher version) wins.

What the votes close, and what remains without a consensus service (acks=1 on a stale leader,
a partition with more than half of its replicas down), is in docs/replication.md.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence

from brokers.core.isr_changes import checked_isr
from brokers.dsbs_broker.packets.wire import PartitionRecord, Status

NO_LEADER = -1

# What a broker knows of a member: its status in the member table, None if not in it.
Liveness = Callable[[int], "Status | None"]
LIVE = (Status.ALIVE, Status.SUSPECT)
DOWN = (Status.DEAD, Status.LEFT)


def initial(topic: str, token: int, partition: int,
            replicas: Sequence[int]) -> PartitionRecord:
    """The implicit record of a partition nobody has changed yet."""
    return PartitionRecord(topic, token, partition, replicas[0], 0, 0, tuple(replicas))


def order(r: PartitionRecord) -> tuple[int, int, int, tuple[int, ...]]:
    """The total order ``merge`` takes the maximum of."""
    return (r.leader_epoch, r.version, r.leader, r.isr)


def merge(a: PartitionRecord, b: PartitionRecord) -> PartitionRecord:
    """What a broker holding ``a`` keeps when ``b`` (same partition and creation) arrives."""
    return b if order(b) > order(a) else a


def _ordered(replicas: Sequence[int], members: Iterable[int]) -> tuple[int, ...]:
    keep = set(members)
    return tuple(r for r in replicas if r in keep)


def majority(replicas: Sequence[int], status: Liveness, me: int) -> bool:
    """Does broker ``me`` see more than half of the replicas alive (itself included)? A
    suspect does not count: a broker cut off from the others suspects them all, one after
    the other, and must not count the last ones it has not declared dead yet."""
    alive = sum(1 for r in replicas if r == me or status(r) == Status.ALIVE)
    return 2 * alive > len(replicas)


def successor(rec: PartitionRecord, replicas: Sequence[int], status: Liveness,
              me: int, epoch: int | None = None) -> PartitionRecord | None:
    """The record broker ``me`` (live) writes to take ``rec``'s partition over, in leader
    epoch ``epoch`` (default: one up; a vote may have promised a later one), or None when it
    must not: the leader is live or unknown, ``me`` is not in the ISR, an ISR member before it
    in replica order is live or unknown, or ``me`` sees no majority of the replicas live (it
    may be the cut-off side of a partition)."""
    if rec.leader == me or (rec.leader != NO_LEADER and status(rec.leader) not in DOWN):
        return None
    if me not in rec.isr or not majority(replicas, status, me):
        return None
    for r in replicas:
        if r == me:
            break
        if r in rec.isr and status(r) not in DOWN:
            return None
    return _led_by(rec, replicas, status, me, epoch)


def _led_by(rec: PartitionRecord, replicas: Sequence[int], status: Liveness, me: int,
            epoch: int | None) -> PartitionRecord:
    new_epoch = rec.leader_epoch + 1 if epoch is None else epoch
    if new_epoch <= rec.leader_epoch:
        raise ValueError(f"leader epoch {new_epoch} is not after {rec.leader_epoch}")
    isr = _ordered(replicas, (r for r in rec.isr if r == me or status(r) not in DOWN))
    return dataclasses.replace(rec, leader=me, leader_epoch=new_epoch,
                               version=rec.version + 1, isr=isr)


def restood(rec: PartitionRecord, replicas: Sequence[int], status: Liveness, me: int,
            epoch: int) -> PartitionRecord | None:
    """The record with which ``me``, ``rec``'s leader, leads on in the newer ``epoch`` a vote
    gave it (after a restart with no other ISR member live, or fenced by a promise made to
    another candidate); None when it is not the leader or sees no majority live."""
    if rec.leader != me or not majority(replicas, status, me):
        return None
    return _led_by(rec, replicas, status, me, epoch)


def resigned(rec: PartitionRecord, replicas: Sequence[int], status: Liveness,
             me: int) -> PartitionRecord | None:
    """The record with which ``me``, ``rec``'s leader, hands the partition to the rest of its
    ISR after a restart: no leader, and an ISR without ``me`` (its log may have lost what an
    OS crash did not flush, so another in-sync replica leads next); None when no other ISR
    member is live or ``me`` sees no majority live."""
    if rec.leader != me or not majority(replicas, status, me):
        return None
    rest = tuple(r for r in rec.isr if r != me and status(r) not in DOWN)
    if not any(status(r) in LIVE for r in rest):
        return None
    return dataclasses.replace(rec, leader=NO_LEADER, version=rec.version + 1, isr=rest)


def with_isr(rec: PartitionRecord, me: int, leader_epoch: int, isr: Iterable[int],
             replicas: Sequence[int]) -> PartitionRecord:
    """``rec`` with ISR ``isr``, written by its leader ``me`` in ``leader_epoch`` (``rec``
    itself when that is its ISR already); raises as ``IsrChanges.change_isr`` says."""
    new = checked_isr(rec.leader, rec.leader_epoch, me, leader_epoch, isr, replicas)
    if new == rec.isr:
        return rec
    return dataclasses.replace(rec, version=rec.version + 1, isr=new)


def without_down(rec: PartitionRecord, replicas: Sequence[int], status: Liveness,
                 me: int) -> PartitionRecord | None:
    """The leader ``me``'s record without the ISR members declared down, or None when none is
    or when ``me`` sees no majority of the replicas live (a leader cut off from the rest must
    not go on alone: the others may have elected a leader of their own)."""
    if rec.leader != me or not majority(replicas, status, me):
        return None
    isr = tuple(r for r in rec.isr if r == me or status(r) not in DOWN)
    if isr == rec.isr:
        return None
    return dataclasses.replace(rec, version=rec.version + 1, isr=isr)


def consistent(rec: PartitionRecord, replicas: Sequence[int]) -> bool:
    """Can ``rec`` describe a partition with these replicas?"""
    reps = set(replicas)
    return ((rec.leader == NO_LEADER or rec.leader in reps) and set(rec.isr) <= reps
            and len(set(rec.isr)) == len(rec.isr))
