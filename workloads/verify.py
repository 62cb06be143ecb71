"""Consumer-side verification: count, per-partition order, loss and duplicates.

Every record carries (producer id, sequence). A producer numbers its records 0, 1, 2, ... and
sends consecutive sequences in each batch, so the common case is a batch whose sequences form
one run ``s0 .. s0+n-1`` from one producer; that case costs a handful of O(1) bytearray
operations per batch, never per record, and no Python set of tuples. Anything else falls back to
a per-record loop that gives the same answers.

State per producer is one ``bytearray`` indexed by sequence: 0 = not seen, otherwise the
partition's tag (:func:`tag`: partition + 1) it was first seen in. Loss is computed at report
time against what producers say was acknowledged (:meth:`Verifier.expect`, whose flags carry the
partition's tag the same way), so a record the broker stored without acknowledging (a retried
request) is not mistaken for loss, a record acknowledged but never delivered is, and each one is
counted in the partition it was acknowledged in (``VerifyReport.by_partition``): what a fault
analysis needs to tell a partition that lost data from one that has no leader to read it from.

Definitions (per record):
* duplicate: its (producer, sequence) was already seen (in any partition);
* out of order: not a duplicate, and its sequence is lower than the highest sequence already seen
  from the same producer in the same partition;
* lost: acknowledged to its producer but never seen by any consumer sharing this verifier;
* unexpected: seen but not acknowledged (legal: e.g. a request that timed out but was stored).
"""

from __future__ import annotations

import base64
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["PartitionReport", "Verifier", "VerifyReport", "fill", "pack_flags", "tag",
           "unpack_flags"]

# A flag byte is 0 (no) or a partition's tag. Partitions from 254 up share the last tag: they
# are counted, but not told apart, per partition (fault sessions use a handful).
_LAST_TAG = 255


def tag(partition: int) -> int:
    """The flag byte that says "yes, in ``partition``"."""
    return partition + 1 if 0 <= partition < _LAST_TAG - 1 else _LAST_TAG


def partition_of(flag: int) -> int:
    """The partition a tag stands for (-1: one of the partitions from 254 up)."""
    return flag - 1 if flag != _LAST_TAG else -1


_FILLS: dict[int, bytes] = {}


def fill(partition: int, n: int) -> bytes:
    """``n`` flag bytes for ``partition`` (a slice of one cached run: no per-record work)."""
    t = tag(partition)
    run = _FILLS.get(t)
    if run is None or len(run) < n:
        run = _FILLS[t] = bytes([t]) * max(n, 65536)
    return run[:n]


@dataclass(frozen=True)
class PartitionReport:
    """One partition's share of a report (by the partition each record was acknowledged in;
    duplicates by the partition they were delivered in)."""

    expected: int
    lost: int
    duplicates: int


@dataclass(frozen=True)
class VerifyReport:
    # Records delivered that were ours (including duplicates).
    records: int
    # Distinct (producer, sequence) pairs delivered.
    unique: int
    # Acknowledged to a producer but never delivered.
    lost: int
    # Deliveries of a (producer, sequence) already delivered.
    duplicates: int
    # Deliveries below the highest sequence already seen from that producer in that partition.
    out_of_order: int
    # Delivered but never acknowledged (allowed; informational).
    unexpected: int
    # Acknowledged records in total (what the consumers should have seen).
    expected: int
    # Records that were not ours (foreign layout) and batches failing their CRC.
    foreign: int = 0
    corrupt_batches: int = 0
    # Records per partition.
    per_partition: dict[int, int] = field(default_factory=dict)
    # Acknowledged, lost and duplicated per partition (-1: partitions from 254 up).
    by_partition: dict[int, PartitionReport] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return (
            self.lost == 0
            and self.duplicates == 0
            and self.out_of_order == 0
            and self.corrupt_batches == 0
        )


_ONES = b"\x01" * 65536


class Verifier:
    """Shared by all consumers of one run (or merged from several with :meth:`merge`)."""

    def __init__(self) -> None:
        # producer id -> bytearray indexed by sequence; 1 = delivered at least once.
        self._seen: dict[int, bytearray] = {}
        # producer id -> bytearray of acknowledged sequences (from the producers).
        self._acked: dict[int, bytearray] = {}
        # (partition, producer id) -> highest sequence delivered so far.
        self._high: dict[tuple[int, int], int] = {}
        self.records = 0
        self.duplicates = 0
        self.out_of_order = 0
        self.foreign = 0
        self.corrupt_batches = 0
        self.per_partition: dict[int, int] = {}
        self.duplicates_by_partition: dict[int, int] = {}

    # -- expectations -------------------------------------------------------------------------
    def expect(self, producer_id: int, acked: bytes | bytearray) -> None:
        """Declare which sequences ``producer_id`` had acknowledged: byte i is 0, or the tag of
        the partition record i was acknowledged in (:func:`tag`; 1 is partition 0)."""
        have = self._acked.get(producer_id)
        if have is None:
            self._acked[producer_id] = bytearray(acked)
            return
        if len(have) < len(acked):
            have.extend(bytes(len(acked) - len(have)))
        for i, b in enumerate(acked):
            if b:
                have[i] = b

    # -- the hot path -------------------------------------------------------------------------
    def add_batch(self, partition: int, producer_ids: Sequence[int], sequences: Sequence[int]):
        """Record the delivery of one batch's records (in partition order)."""
        n = len(sequences)
        if n == 0:
            return
        self.records += n
        self.per_partition[partition] = self.per_partition.get(partition, 0) + n
        pid = producer_ids[0]
        s0 = sequences[0]
        end = s0 + n
        if (
            n <= len(_ONES)
            and sequences[-1] == end - 1
            and producer_ids.count(pid) == n
            and (n < 3 or tuple(sequences) == tuple(range(s0, end)))
        ):
            seen = self._seen.get(pid)
            if seen is None:
                seen = self._seen[pid] = bytearray(max(end, 1024))
            elif len(seen) < end:
                seen.extend(bytes(max(end - len(seen), len(seen))))
            key = (partition, pid)
            high = self._high.get(key, -1)
            if s0 > high and seen.count(0, s0, end) == n:
                seen[s0:end] = fill(partition, n)
                self._high[key] = end - 1
                return
        self._add_slow(partition, producer_ids, sequences)

    def _add_slow(self, partition: int, producer_ids: Sequence[int], sequences: Sequence[int]):
        for pid, seq in zip(producer_ids, sequences, strict=True):
            seen = self._seen.get(pid)
            if seen is None:
                seen = self._seen[pid] = bytearray(max(seq + 1, 1024))
            elif len(seen) <= seq:
                seen.extend(bytes(max(seq + 1 - len(seen), len(seen))))
            if seen[seq]:
                self.duplicates += 1
                by = self.duplicates_by_partition
                by[partition] = by.get(partition, 0) + 1
                continue
            seen[seq] = tag(partition)
            key = (partition, pid)
            high = self._high.get(key, -1)
            if seq < high:
                self.out_of_order += 1
            else:
                self._high[key] = seq

    def add_foreign(self, count: int) -> None:
        self.foreign += count

    def add_corrupt(self, batches: int = 1) -> None:
        self.corrupt_batches += batches

    # -- combining and reporting --------------------------------------------------------------
    def merge(self, other: Verifier) -> None:
        """Fold another verifier's deliveries into this one (consumers in other processes).

        Order is judged per verifier; a record seen by both counts as a duplicate.
        """
        for pid, acked in other._acked.items():
            self.expect(pid, acked)
        self.foreign += other.foreign
        self.corrupt_batches += other.corrupt_batches
        self.duplicates += other.duplicates
        for p, c in other.duplicates_by_partition.items():
            self.duplicates_by_partition[p] = self.duplicates_by_partition.get(p, 0) + c
        self.out_of_order += other.out_of_order
        self.records += other.records
        for p, c in other.per_partition.items():
            self.per_partition[p] = self.per_partition.get(p, 0) + c
        for key, high in other._high.items():
            self._high[key] = max(high, self._high.get(key, -1))
        for pid, theirs in other._seen.items():
            mine = self._seen.get(pid)
            if mine is None:
                self._seen[pid] = bytearray(theirs)
                continue
            if len(mine) < len(theirs):
                mine.extend(bytes(len(theirs) - len(mine)))
            theirs = theirs.ljust(len(mine), b"\x00")
            m = _bits(mine)
            # Seen by both: a duplicate, in the partition the other verifier saw it in.
            for flag in _tags(theirs):
                both = (_bits(theirs, flag) & m).bit_count()
                if both:
                    self.duplicates += both
                    p = partition_of(flag)
                    self.duplicates_by_partition[p] = (
                        self.duplicates_by_partition.get(p, 0) + both)
            # Keep this verifier's tag where both saw it, take the other's elsewhere.
            keep = int.from_bytes(bytes(mine).translate(_TO_FF), "little")
            mixed = ((int.from_bytes(mine, "little") & keep)
                     | (int.from_bytes(theirs, "little") & ~keep))
            mine[:] = mixed.to_bytes(len(mine), "little")

    def to_json(self) -> dict[str, Any]:
        """Lossless wire form: the delivered-sequence maps compressed (a load worker's
        verifier travels to the driver, which merges them: :meth:`merge`)."""
        return {
            "seen": {str(k): pack_flags(v) for k, v in self._seen.items()},
            "acked": {str(k): pack_flags(v) for k, v in self._acked.items()},
            "high": [[p, pid, h] for (p, pid), h in self._high.items()],
            "records": self.records, "duplicates": self.duplicates,
            "out_of_order": self.out_of_order, "foreign": self.foreign,
            "corrupt_batches": self.corrupt_batches,
            "per_partition": {str(k): v for k, v in self.per_partition.items()},
            "duplicates_by_partition": {str(k): v for k, v
                                        in self.duplicates_by_partition.items()},
        }

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Verifier:
        out = cls()
        out._seen = {int(k): unpack_flags(v) for k, v in doc["seen"].items()}
        out._acked = {int(k): unpack_flags(v) for k, v in doc["acked"].items()}
        out._high = {(int(p), int(pid)): int(h) for p, pid, h in doc["high"]}
        out.records = int(doc["records"])
        out.duplicates = int(doc["duplicates"])
        out.out_of_order = int(doc["out_of_order"])
        out.foreign = int(doc["foreign"])
        out.corrupt_batches = int(doc["corrupt_batches"])
        out.per_partition = {int(k): int(v) for k, v in doc["per_partition"].items()}
        out.duplicates_by_partition = {int(k): int(v) for k, v
                                       in doc.get("duplicates_by_partition", {}).items()}
        return out

    def report(self) -> VerifyReport:
        unique = 0
        lost = 0
        unexpected = 0
        expected = 0
        # partition -> [acknowledged, lost]
        parts: dict[int, list[int]] = {}
        for pid in self._seen.keys() | self._acked.keys():
            seen = self._seen.get(pid, bytearray())
            acked = bytes(self._acked.get(pid, bytearray()))
            width = max(len(seen), len(acked))
            acked = acked.ljust(width, b"\x00")
            s = _bits(seen.ljust(width, b"\x00"))
            a = _bits(acked)
            unique += s.bit_count()
            expected += a.bit_count()
            lost += (a & ~s).bit_count()
            unexpected += (s & ~a).bit_count()
            # Per partition: a pass over the flags per partition present, in C (a handful).
            for flag in _tags(acked):
                a_p = _bits(acked, flag)
                counts = parts.setdefault(partition_of(flag), [0, 0])
                counts[0] += a_p.bit_count()
                counts[1] += (a_p & ~s).bit_count()
        for p in self.duplicates_by_partition:
            parts.setdefault(p, [0, 0])
        by_partition = {p: PartitionReport(expected=e, lost=lo,
                                           duplicates=self.duplicates_by_partition.get(p, 0))
                        for p, (e, lo) in sorted(parts.items())}
        return VerifyReport(
            records=self.records,
            unique=unique,
            lost=lost,
            duplicates=self.duplicates,
            out_of_order=self.out_of_order,
            unexpected=unexpected,
            expected=expected,
            foreign=self.foreign,
            corrupt_batches=self.corrupt_batches,
            per_partition=dict(self.per_partition),
            by_partition=by_partition,
        )


def pack_flags(flags: bytes | bytearray) -> str:
    """Flags (one byte each, mostly runs of 0 or 1) as compressed base64 text."""
    return base64.b64encode(zlib.compress(bytes(flags), 1)).decode("ascii")


def unpack_flags(text: str) -> bytearray:
    return bytearray(zlib.decompress(base64.b64decode(text)))


def _bits(flags: bytes | bytearray, only: int | None = None) -> int:
    """An int with one set bit per non-zero byte (bit position = 8 * byte index); with
    ``only``, per byte equal to that tag.

    Normalising bytes to 0/1 first lets ``int.bit_count`` count flags in C.
    """
    table = _TO_01 if only is None else _ONLY[only]
    return int.from_bytes(bytes(flags).translate(table), "little")


def _tags(flags: bytes | bytearray) -> list[int]:
    """The distinct non-zero bytes of ``flags``: a memchr per possible tag, in C, stopping at
    the first hit (no Python work per record)."""
    return [t for t in range(1, 256) if t in flags]


_TO_01 = bytes([0] + [1] * 255)
_TO_FF = bytes([0] + [255] * 255)
_ONLY = [bytes(1 if i == t else 0 for i in range(256)) for t in range(256)]
