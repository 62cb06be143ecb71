"""Sparse offset and time index of one segment, in memory with a Kafka-style file form.

One entry is added for the batch that starts after at least ``index_interval_bytes`` of batches
since the previous entry, so locating any offset costs one bisect plus a walk over roughly one
interval of batch headers. The batch at position 0 is implicit (never stored).

Files (written when a segment is closed, read back and sanity-checked on open):

* ``<base>.index``: entries of (relative offset u32, position u32), big-endian, as in Kafka.
* ``<base>.timeindex``: entries of (timestamp i64, relative offset u32), big-endian, one per
  ``.index`` entry. Unlike Kafka's, the timestamp is the largest maxTimestamp of all batches
  *before* the entry's batch. That value is non-decreasing, so a bisect for a target time finds the
  last entry that provably precedes the answer, and the walk from there is bounded by one interval
  even when producer clocks make batch timestamps go backwards.
"""

from __future__ import annotations

import struct
from array import array
from bisect import bisect_left, bisect_right

INDEX_ENTRY = struct.Struct(">II")
TIME_ENTRY = struct.Struct(">qI")
# Sentinel "no timestamp yet"; Kafka uses -1 for missing timestamps as well.
NO_TIMESTAMP = -1


class SparseIndex:
    """Parallel arrays (relative offset, position, max timestamp before) for one segment."""

    __slots__ = ("positions", "rels", "ts_before")

    def __init__(self) -> None:
        # array('I') is 4 bytes on every platform CPython supports; 'q' is 8.
        self.rels = array("I")
        self.positions = array("I")
        self.ts_before = array("q")

    def __len__(self) -> int:
        return len(self.rels)

    def append(self, rel: int, position: int, ts_before: int) -> None:
        self.rels.append(rel)
        self.positions.append(position)
        self.ts_before.append(ts_before)

    def position_for_offset(self, rel: int) -> int:
        """Start of a batch at or before the batch holding relative offset ``rel``."""
        i = bisect_right(self.rels, rel) - 1
        return self.positions[i] if i >= 0 else 0

    def position_at_or_before(self, position: int) -> int:
        """The last indexed batch boundary <= ``position`` (0 when none)."""
        i = bisect_right(self.positions, position) - 1
        return self.positions[i] if i >= 0 else 0

    def position_for_time(self, timestamp: int) -> int:
        """Start of a batch such that every batch before it has maxTimestamp < ``timestamp``."""
        i = bisect_left(self.ts_before, timestamp) - 1
        return self.positions[i] if i >= 0 else 0

    def encode(self) -> tuple[bytes, bytes]:
        """(``.index`` bytes, ``.timeindex`` bytes)."""
        n = len(self.rels)
        idx = bytearray(n * INDEX_ENTRY.size)
        tix = bytearray(n * TIME_ENTRY.size)
        for i in range(n):
            INDEX_ENTRY.pack_into(idx, i * INDEX_ENTRY.size, self.rels[i], self.positions[i])
            TIME_ENTRY.pack_into(tix, i * TIME_ENTRY.size, self.ts_before[i], self.rels[i])
        return bytes(idx), bytes(tix)

    @classmethod
    def decode(cls, index_bytes: bytes, time_bytes: bytes, log_size: int) -> SparseIndex | None:
        """Parse both files; None if they are not a plausible index of a log of ``log_size`` bytes.

        Plausible = whole entries, the same count in both files, offsets and positions strictly
        increasing and inside the log, timestamps non-decreasing. That catches torn, zero-filled
        and stale (post-truncation) files; the caller still re-validates the tail from the last
        entry, which catches an entry pointing into the middle of a batch.
        """
        if len(index_bytes) % INDEX_ENTRY.size or len(time_bytes) % TIME_ENTRY.size:
            return None
        n = len(index_bytes) // INDEX_ENTRY.size
        if len(time_bytes) // TIME_ENTRY.size != n:
            return None
        out = cls()
        prev_rel = prev_pos = 0
        prev_ts = NO_TIMESTAMP
        for i in range(n):
            rel, pos = INDEX_ENTRY.unpack_from(index_bytes, i * INDEX_ENTRY.size)
            ts, trel = TIME_ENTRY.unpack_from(time_bytes, i * TIME_ENTRY.size)
            if rel <= prev_rel or pos <= prev_pos or pos >= log_size or trel != rel or ts < prev_ts:
                return None
            out.append(rel, pos, ts)
            prev_rel, prev_pos, prev_ts = rel, pos, ts
        return out
