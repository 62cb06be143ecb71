"""Throughput over time and the longest silence per partition, for fault sessions.

A fault shows up as a dip in records per time bucket and as a gap between two acknowledgements
on the partitions it hit. ``Timeline`` counts events into fixed buckets from a start time and
tracks, per (kind, partition), the longest interval between consecutive events; both cost O(1)
per produce request or fetch (never per record), on the client side only.

Kinds: ``produced`` (records acknowledged), ``consumed`` (records delivered), ``commits``
(successful offset commits; partition -1).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

KINDS = ("produced", "consumed", "commits")


@dataclass(frozen=True)
class Gap:
    # Seconds between the two events (or between an event and the window's edge).
    seconds: float
    partition: int
    # Where the gap began, seconds from the timeline's start.
    start_s: float


class Timeline:
    """Counts events into ``bucket_s`` buckets from ``t0`` (a ``time.perf_counter()``)."""

    def __init__(self, t0: float, bucket_s: float = 0.1) -> None:
        if bucket_s <= 0:
            raise ValueError("bucket_s must be positive")
        self.t0 = t0
        self.bucket_s = bucket_s
        self._buckets: dict[str, list[int]] = {k: [] for k in KINDS}
        # (kind, partition) -> [first event, last event, longest gap, its start] (perf_counter)
        self._spans: dict[tuple[str, int], list[float]] = {}

    def add(self, kind: str, partition: int, n: int, now: float | None = None) -> None:
        t = time.perf_counter() if now is None else now
        i = int((t - self.t0) / self.bucket_s)
        if i >= 0:
            buckets = self._buckets[kind]
            if i >= len(buckets):
                buckets.extend([0] * (i + 1 - len(buckets)))
            buckets[i] += n
        span = self._spans.get((kind, partition))
        if span is None:
            self._spans[(kind, partition)] = [t, t, 0.0, t]
            return
        gap = t - span[1]
        if gap > span[2]:
            span[2], span[3] = gap, span[1]
        span[1] = t

    def produced(self, partition: int, n: int) -> None:
        self.add("produced", partition, n)

    def consumed(self, partition: int, n: int) -> None:
        self.add("consumed", partition, n)

    def committed(self) -> None:
        self.add("commits", -1, 1)

    def longest_gap(self, kind: str, until: float | None = None) -> Gap | None:
        """The longest silence of ``kind`` on any one partition between its first event and
        ``until`` (a perf_counter time; a partition silent from its last event until then
        counts that silence). None when nothing of that kind happened."""
        best: Gap | None = None
        for (k, partition), (_, last, gap, gap_start) in self._spans.items():
            if k != kind:
                continue
            if until is not None and until - last > gap:
                gap, gap_start = until - last, last
            if best is None or gap > best.seconds:
                best = Gap(gap, partition, gap_start - self.t0)
        return best

    def rows(self) -> list[tuple[float, int, int, int]]:
        """(bucket start s, produced, consumed, commits) for every bucket up to the last event."""
        n = max(len(b) for b in self._buckets.values())
        cols = [b + [0] * (n - len(b)) for b in (self._buckets[k] for k in KINDS)]
        return [(round(i * self.bucket_s, 6), cols[0][i], cols[1][i], cols[2][i])
                for i in range(n)]
