"""The transactions workload's history and its checks (pure, no I/O).

What the run records (``TxnHistory``): every transaction the transactional producer began, the
records it wrote to each partition of the source topic and how it ended as the producer saw it
(``committed``: commit_transaction returned; ``aborted``: abort_transaction returned;
``unknown``: neither, the producer gave up or was replaced); the source records the
consume-transform-produce worker saw its own transactions commit a copy of; both topics read
back at read_committed after everything healed; and the partitions whose read_committed
reading never reached the high watermark (a transaction nobody ended). ``check`` returns one
list per kind of violation:

* ``torn``: a transaction of which some records are visible at read_committed and others are
  not: committed in some partitions and aborted (or lost) in others. The property the issue
  names: never half.
* ``commit_lost``: a transaction whose commit was acknowledged, none of whose records is
  visible.
* ``abort_visible``: a transaction whose abort was acknowledged, with records visible.
* ``duplicated``: a source record visible twice at read_committed (the producer is
  idempotent and transactional: a retried batch must not land twice).
* ``copied_twice``: a source record whose copy is visible twice in the sink: the
  consume-transform-produce loop was not exactly once (its offsets and its output did not
  commit together).
* ``copied_phantom``: a copy in the sink of a record not visible in the source at
  read_committed (a read_committed consumer handed an aborted or open record on, or a copy
  written for a record that was later lost).
* ``copy_lost``: a record the worker's acknowledged commit copied, whose copy is not in the
  sink.
* ``hung``: a partition read_committed never read to its end after everything healed and the
  transaction timeout passed: a transaction left open, which blocks every read_committed
  consumer of the partition.
* ``offsets_pending``: a partition whose offsets in the worker's group were still pending in a
  transaction after everything healed and every transaction had ended, so that a consumer
  asking for stable offsets (every read_committed librdkafka consumer) cannot start there. A
  TxnOffsetCommit that reaches the group's coordinator after its transaction's marker (held in
  a paused broker's socket, say) leaves such an offset: Kafka 2.8 has the same hanging
  transaction (what KIP-890 later closed). Liveness; counted, claimed by none.
* ``uncopied``: a committed source record never copied before the run gave up waiting
  (liveness: whether the worker kept up; counted, claimed by none).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

KINDS = ("torn", "commit_lost", "abort_visible", "duplicated", "copied_twice",
         "copied_phantom", "copy_lost", "hung", "offsets_pending", "uncopied")
SAFETY = tuple(k for k in KINDS if k not in ("offsets_pending", "uncopied"))
# What each architecture claims (docs/transactions.md, "Faults"): a violation of these fails a
# run; the rest are counted and reported. DSBS keeps a transaction's decision safe through one
# failure at a time (docs/dsbs-metadata.md#transactions); the nemesis overlaps failures (a
# coordinator killed while the peer holding its decision is paused), and then a decision can be
# lost: torn transactions, and what follows from them, are counted there, not claimed. Its
# data path (the idempotent producer's batches) is claimed as everywhere.
CLAIMS: dict[str, tuple[str, ...]] = {"dsbs": ("duplicated",)}


def claims(arch: str) -> tuple[str, ...]:
    """The kinds of violation ``arch`` claims never to show."""
    return CLAIMS.get(arch, SAFETY)
OUTCOMES = ("committed", "aborted", "unknown")
COPY_PREFIX = "copy:"  # the worker's record for source record v is COPY_PREFIX + v


@dataclass
class Txn:
    name: str  # "t<n>": unique within a run
    records: dict[int, list[str]]  # partition -> the values written there, in order
    outcome: str = "unknown"  # one of OUTCOMES, as the producer saw it


@dataclass
class TxnHistory:
    txns: list[Txn] = field(default_factory=list)
    copied: set[str] = field(default_factory=set)  # source values an acknowledged copy took
    source: dict[int, list[tuple[int, str]]] = field(default_factory=dict)  # read_committed
    sink: dict[int, list[tuple[int, str]]] = field(default_factory=dict)  # read_committed
    hung: list[str] = field(default_factory=list)  # "<topic> p<n>: stable <lso>, end <hw>"
    offsets_pending: list[str] = field(default_factory=list)  # "<group> p<n>: ..."


def check(h: TxnHistory) -> dict[str, list[str]]:
    """Every violation in ``h``, by kind (``KINDS``); an empty list where there is none."""
    found: dict[str, list[str]] = {k: [] for k in KINDS}
    visible = Counter(v for log in h.source.values() for _, v in log)
    for value, n in sorted(visible.items()):
        if n > 1:
            found["duplicated"].append(f"{value} visible {n} times")
    for t in h.txns:
        values = [v for vs in t.records.values() for v in vs]
        seen = [v for v in values if visible[v]]
        if seen and len(seen) < len(values):
            missing = sorted(set(values) - set(seen))
            found["torn"].append(f"{t.name} ({t.outcome}): {len(seen)} of {len(values)} "
                                 f"records visible; missing {', '.join(missing[:3])}")
        elif t.outcome == "committed" and not seen:
            found["commit_lost"].append(f"{t.name}: committed, none of {len(values)} visible")
        elif t.outcome == "aborted" and seen:
            found["abort_visible"].append(f"{t.name}: aborted, {len(seen)} records visible")
    copies = Counter(v.removeprefix(COPY_PREFIX) for log in h.sink.values() for _, v in log)
    for value, n in sorted(copies.items()):
        if n > 1:
            found["copied_twice"].append(f"{value} copied {n} times")
        if not visible[value]:
            found["copied_phantom"].append(f"{value} copied, not visible in the source")
    for value in sorted(h.copied):
        if not copies[value]:
            found["copy_lost"].append(f"{value}: its copy's commit was acknowledged")
    for value in sorted(visible):
        if not copies[value] and value not in h.copied:
            found["uncopied"].append(value)
    found["hung"] = list(h.hung)
    found["offsets_pending"] = list(h.offsets_pending)
    return found
