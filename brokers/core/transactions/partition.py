"""What one partition leader knows of the transactions writing to it (sans-IO).

Kafka's rules, as a read_committed consumer depends on them:

* A transactional batch (the attribute bit) opens its producer's transaction in this partition
  at its base offset, unless one is already open; the transaction stays open until the
  producer's marker (a control batch) lands, commit or abort.
* The last stable offset (LSO) is the first offset of the oldest open transaction, or the high
  watermark when none is open (never above it). read_committed consumers read below it only.
* An aborted transaction is remembered as (producer id, first offset, marker offset), so a
  Fetch can list the ones overlapping what it returns and the client drops their records;
  committed ones need no entry. An entry is dropped once retention passed its marker.
* A marker for a producer with nothing open here is still written (the coordinator does not
  know whether any batch arrived) and changes nothing else.
* Markers are numbered: the coordinator puts the transaction's sequence number (one more for
  each transaction of a transactional id, ``txn_state.TxnRecord.txn_seq``) in the marker's
  coordinator-epoch field, and a marker numbered at or below the last one written here for its
  producer is a repeat: answered as written, not appended. Without this a marker that arrives
  late (a predecessor coordinator's, or a retry whose first copy was held in a one-way cut)
  would end the producer's *next* transaction here: commit records that transaction later
  aborts, or abort records it later commits. Kafka fences the first case with the
  coordinator epoch (the transaction log partition's leader epoch); one number per transaction
  fences both. 0 (a marker from before numbering) fences nothing.

``PartitionTxns.load`` rebuilds all of it from the log's batches, oldest first, so nothing extra
has to be persisted beyond the log (``states`` decides when a log needs the scan).
"""

from __future__ import annotations

from bisect import bisect_left
from typing import NamedTuple


class AbortedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int  # the abort marker's offset


class PartitionTxns:
    """The open and the aborted transactions of one partition."""

    __slots__ = ("_aborted", "_numbered", "_open")

    def __init__(self) -> None:
        self._open: dict[int, int] = {}  # producer id -> first offset of its open transaction
        self._aborted: list[AbortedTxn] = []  # by marker offset (appended in log order)
        # producer id -> (the highest transaction number of its markers here, that marker's
        # offset): what a late repeat is recognised by.
        self._numbered: dict[int, tuple[int, int]] = {}

    @property
    def open_transactions(self) -> dict[int, int]:
        return dict(self._open)

    @property
    def aborted(self) -> list[AbortedTxn]:
        return list(self._aborted)

    def on_data(self, producer_id: int, base_offset: int) -> None:
        """A transactional batch of ``producer_id`` was appended at ``base_offset``."""
        self._open.setdefault(producer_id, base_offset)

    def on_marker(self, producer_id: int, offset: int, commit: bool, txn_seq: int = 0) -> None:
        """``producer_id``'s marker (of its transaction number ``txn_seq``) was appended at
        ``offset``."""
        first = self._open.pop(producer_id, None)
        if first is not None and not commit:
            self._aborted.append(AbortedTxn(producer_id, first, offset))
        last = self._numbered.get(producer_id)
        if txn_seq > 0 and (last is None or txn_seq >= last[0]):
            self._numbered[producer_id] = (txn_seq, offset)

    def repeated_marker(self, producer_id: int, txn_seq: int) -> int | None:
        """The offset of the marker already written here that makes a marker numbered
        ``txn_seq`` a repeat (its own, or a later transaction's), or None: write it."""
        last = self._numbered.get(producer_id)
        if txn_seq <= 0 or last is None or txn_seq > last[0]:
            return None
        return last[1]

    def is_open(self, producer_id: int) -> bool:
        return producer_id in self._open

    def last_stable_offset(self, high_watermark: int) -> int:
        if not self._open:
            return high_watermark
        return min(high_watermark, min(self._open.values()))

    def aborted_between(self, start: int, end: int) -> list[AbortedTxn]:
        """The aborted transactions a fetch of [start, end) must report: every one whose
        records may lie in the range (its marker at or after ``start``, its first offset before
        ``end``), as Kafka collects them."""
        i = bisect_left(self._aborted, start, key=lambda a: a.last_offset)
        return [a for a in self._aborted[i:] if a.first_offset < end]

    def drop_before(self, log_start: int) -> None:
        """Forget aborted transactions whose marker retention or DeleteRecords removed."""
        i = bisect_left(self._aborted, log_start, key=lambda a: a.last_offset)
        if i:
            del self._aborted[:i]

    def load(self, batches: list[tuple[int, int, bool, bool | None, int]]) -> None:
        """Rebuild from the log: (base offset, producer id, transactional, marker commits or
        None for a data batch, the marker's transaction number) of every batch with a
        producer, oldest first."""
        for base, producer_id, transactional, commit, txn_seq in batches:
            if commit is not None:
                self.on_marker(producer_id, base, commit, txn_seq)
            elif transactional:
                self.on_data(producer_id, base)
