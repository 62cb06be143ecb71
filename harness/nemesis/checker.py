"""What the clients saw during a nemesis run, and the checks over it (pure, no I/O).

The history (``History``) is what the run recorded: records the producer saw acknowledged
(value and offset), what the consumer group was handed (with the time the poll that handed it
started), the commits the group saw acknowledged (with the time each returned), committed
offsets a monitor read back, every partition read back at the end, and the leader and leader
epoch each broker's Metadata showed. ``check`` returns one count per kind of violation, with a
few examples each:

* ``lost``: acknowledged, and not in the partition read back after everything healed.
* ``unconsumed``: acknowledged, and never handed to the group before the run gave up waiting
  (liveness: whether the records are there is ``lost``'s question).
* ``rewritten``: an offset seen with two different records (a truncation written over).
* ``reordered``: acknowledged records of one partition that the log holds out of the order the
  producer sent them in (one producer writes each partition's sequence in order), each record
  at its first copy.
* ``duplicated``: an acknowledged record the log holds twice (the producer is idempotent, so a
  retried batch must be answered from its first copy). Counted apart from ``reordered``: a late
  second copy would otherwise read as one record out of order, and the two have different
  causes (a broker that forgot a producer's sequences, or a record really appended out of
  turn).
* ``consumed_below_commit``: the group handed out an offset below one it had committed, and
  the commit was acknowledged before the poll began (a commit that did not hold): a member
  (re)started reading a partition below the commit.
* ``stale_member_read``: the same, but as the next record of a run the member was already
  reading (its previous record of the partition was the offset before): a member still
  reading from its own position after the group, rebalanced without it, committed past it.
  The classic group protocol fences such a member's commits, never its fetches (Kafka's
  consumers do this too while their session has not lapsed), so it is counted, not claimed.
* ``offsets_backwards``: a committed offset read back below one acknowledged before the read.
* ``two_leaders_one_epoch``: two brokers shown as leader of a partition in one leader epoch.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from dataclasses import dataclass, field

KINDS = ("lost", "unconsumed", "rewritten", "reordered", "duplicated", "consumed_below_commit",
         "stale_member_read", "offsets_backwards", "two_leaders_one_epoch")
# What each architecture guarantees (docs/replication.md, "Guarantees, as measured"): a
# violation of these fails a run; the others are counted and reported. ``unconsumed`` is
# liveness (the group did not catch up in time; ``lost`` says whether the records are there),
# claimed by none, nor is ``stale_member_read`` (the classic group protocol allows it). DSBS
# keeps committed offsets in order only while brokers' views agree (no consensus:
# docs/dsbs-metadata.md), so its offset counts are reported, not claimed.
SAFETY = ("lost", "rewritten", "reordered", "duplicated", "consumed_below_commit",
          "offsets_backwards", "two_leaders_one_epoch")
_OFFSETS = ("consumed_below_commit", "offsets_backwards")
CLAIMS: dict[str, tuple[str, ...]] = {"dsbs": tuple(k for k in SAFETY if k not in _OFFSETS)}


def claims(arch: str) -> tuple[str, ...]:
    """The kinds of violation ``arch`` claims never to show."""
    return CLAIMS.get(arch, SAFETY)
EXAMPLES = 5


@dataclass(frozen=True)
class Delivery:
    polled_at: float  # when the poll that handed it over began
    partition: int
    offset: int
    value: str
    member: int = -1  # which member of the group


@dataclass(frozen=True)
class Commit:
    done_at: float  # when the acknowledged commit returned
    partition: int
    offset: int  # the next offset to consume, as Kafka commits it
    member: int = -1


@dataclass(frozen=True)
class CommittedRead:
    asked_at: float  # when the read (OffsetFetch) began
    partition: int
    offset: int
    broker: int = -1  # the coordinator that answered


@dataclass(frozen=True)
class LeaderSeen:
    at: float
    broker: int  # whose Metadata showed it
    partition: int
    leader_epoch: int
    leader: int


@dataclass
class History:
    partitions: int
    acked: dict[int, list[tuple[str, int]]] = field(default_factory=dict)  # (value, offset)
    deliveries: list[Delivery] = field(default_factory=list)
    commits: list[Commit] = field(default_factory=list)
    committed_reads: list[CommittedRead] = field(default_factory=list)
    final: dict[int, list[tuple[int, str]]] = field(default_factory=dict)  # (offset, value)
    leaders: list[LeaderSeen] = field(default_factory=list)


def sequence(value: str) -> int:
    """The producer's sequence number in a record value ``p<partition>-<seq>``."""
    return int(value.rsplit("-", 1)[1])


def _floors(commits: list[Commit]) -> dict[int, list[tuple[float, Commit]]]:
    """Per partition: (time, the highest commit acknowledged by then), in time order."""
    out: dict[int, list[tuple[float, Commit]]] = defaultdict(list)
    best: dict[int, Commit] = {}
    for c in sorted(commits, key=lambda c: c.done_at):
        if c.partition not in best or c.offset > best[c.partition].offset:
            best[c.partition] = c
        out[c.partition].append((c.done_at, best[c.partition]))
    return out


def _floor_at(floors: list[tuple[float, Commit]], t: float) -> Commit | None:
    """The highest commit acknowledged strictly before ``t``."""
    lo, hi = 0, len(floors)
    while lo < hi:
        mid = (lo + hi) // 2
        if floors[mid][0] < t:
            lo = mid + 1
        else:
            hi = mid
    return floors[lo - 1][1] if lo else None


def check(h: History) -> dict[str, list[str]]:
    """Every violation in ``h``, by kind (``KINDS``); an empty list where there is none."""
    found: dict[str, list[str]] = {k: [] for k in KINDS}
    by_offset: dict[tuple[int, int], str] = {}

    def seen(p: int, offset: int, value: str, where: str) -> None:
        prev = by_offset.setdefault((p, offset), value)
        if prev != value:
            found["rewritten"].append(f"p{p}@{offset}: {prev!r} then {value!r} ({where})")

    for p, recs in sorted(h.acked.items()):
        for value, offset in recs:
            seen(p, offset, value, "acknowledged")
    for p, log in sorted(h.final.items()):
        for at, record in log:
            seen(p, at, record, "read back")
    for d in h.deliveries:
        seen(d.partition, d.offset, d.value, "consumed")
    consumed = {(d.partition, d.value) for d in h.deliveries}
    for p in range(h.partitions):
        final = h.final.get(p, [])
        in_log = {v for _, v in final}
        acked = h.acked.get(p, [])
        acked_values = {v for v, _ in acked}
        for value, offset in acked:
            if value not in in_log:
                found["lost"].append(f"p{p}: {value} (acknowledged at offset {offset})")
            if (p, value) not in consumed:
                found["unconsumed"].append(f"p{p}: {value}")
        order: list[int] = []
        copies: set[str] = set()
        for at, v in sorted(final):
            if v not in acked_values:
                continue
            if v in copies:
                found["duplicated"].append(f"p{p}: {v} again at offset {at}")
                continue
            copies.add(v)
            order.append(sequence(v))
        for a, b in itertools.pairwise(order):
            if b <= a:
                found["reordered"].append(f"p{p}: sequence {b} after {a}")
    floors = _floors(h.commits)
    # Each member's last offset of each partition, in the order it was handed them.
    last: dict[tuple[int, int], int] = {}
    for d in h.deliveries:
        c = _floor_at(floors.get(d.partition, []), d.polled_at)
        continued = last.get((d.member, d.partition)) == d.offset - 1
        last[(d.member, d.partition)] = d.offset
        if c is not None and d.offset < c.offset:
            found["stale_member_read" if continued else "consumed_below_commit"].append(
                f"p{d.partition}@{d.offset} handed to member {d.member} in a poll at "
                f"{d.polled_at:.2f} s, after member {c.member}'s commit of {c.offset} returned "
                f"at {c.done_at:.2f} s")
    for r in h.committed_reads:
        c = _floor_at(floors.get(r.partition, []), r.asked_at)
        if c is not None and r.offset < c.offset:
            found["offsets_backwards"].append(
                f"p{r.partition}: committed offset read as {r.offset} from broker {r.broker} "
                f"at {r.asked_at:.2f} s, "
                f"after member {c.member}'s commit of {c.offset} returned at "
                f"{c.done_at:.2f} s")
    leaders: dict[tuple[int, int], set[int]] = defaultdict(set)
    for s in h.leaders:
        if s.leader >= 0 and s.leader_epoch >= 0:
            leaders[(s.partition, s.leader_epoch)].add(s.leader)
    for (p, epoch), who in sorted(leaders.items()):
        if len(who) > 1:
            found["two_leaders_one_epoch"].append(f"p{p} epoch {epoch}: {sorted(who)}")
    return found


def counts(found: dict[str, list[str]]) -> dict[str, int]:
    return {k: len(found[k]) for k in KINDS}


def examples(found: dict[str, list[str]]) -> dict[str, list[str]]:
    return {k: v[:EXAMPLES] for k, v in found.items() if v}
