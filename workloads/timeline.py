"""Throughput and latency over time: fault timelines and open-loop time series.

A fault shows up as a dip in records per time bucket and as a gap between two acknowledgements
on the partitions it hit; an open-loop session that saturates shows up as a backlog that grows
from one second to the next and an end-to-end p99 that climbs with it. ``Timeline`` counts
events into fixed buckets from a start time, tracks, per (kind, partition), the longest interval
between consecutive events, and keeps the end-to-end latencies of each bucket; all cost O(1) per
produce request or fetched batch (never per record), on the client side only.

Kinds: ``produced`` (records acknowledged), ``consumed`` (records delivered), ``commits``
(successful offset commits; partition -1).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

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
        # Per bucket: end-to-end latencies as (µs, records) pairs. Plain lists, not
        # histograms: an HDR histogram per second would cost ~200 KB each, and a bucket holds
        # one pair per fetched batch.
        self._e2e: list[list[tuple[int, int]]] = []

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

    def e2e(self, value_us: int, count: int, now: float | None = None) -> None:
        """``count`` records consumed now, each ``value_us`` after its intended send."""
        t = time.perf_counter() if now is None else now
        i = int((t - self.t0) / self.bucket_s)
        if i < 0:
            return
        buckets = self._e2e
        if i >= len(buckets):
            buckets.extend([] for _ in range(i + 1 - len(buckets)))
        buckets[i].append((value_us, count))

    def merge(self, other: Timeline) -> None:
        """Add another timeline's buckets and end-to-end samples to this one's, bucket by
        bucket: both must count from the same start (the parts of one session: each load
        worker's timeline starts at the session's start, in its own clock). Gaps are per
        process and are not merged."""
        if other.bucket_s != self.bucket_s:
            raise ValueError("timelines with different buckets cannot be merged")
        for kind in KINDS:
            mine, theirs = self._buckets[kind], other._buckets[kind]
            if len(mine) < len(theirs):
                mine.extend([0] * (len(theirs) - len(mine)))
            for i, n in enumerate(theirs):
                mine[i] += n
        if len(self._e2e) < len(other._e2e):
            self._e2e.extend([] for _ in range(len(other._e2e) - len(self._e2e)))
        for i, pairs in enumerate(other._e2e):
            self._e2e[i].extend(pairs)

    def to_json(self) -> dict[str, Any]:
        """The buckets and end-to-end samples (what :meth:`series` and :meth:`merge` use)."""
        return {"bucket_s": self.bucket_s, "buckets": self._buckets,
                "e2e": [[v for pair in b for v in pair] for b in self._e2e]}

    @classmethod
    def from_json(cls, doc: dict[str, Any], t0: float = 0.0) -> Timeline:
        out = cls(t0, float(doc["bucket_s"]))
        out._buckets = {k: [int(n) for n in doc["buckets"][k]] for k in KINDS}
        out._e2e = [list(zip(b[::2], b[1::2], strict=True)) for b in doc["e2e"]]
        return out

    def longest_gap(self, kind: str, until: float | Mapping[int, float] | None = None
                    ) -> Gap | None:
        """The longest silence of ``kind`` on any one partition between its first event and
        ``until`` (a perf_counter time, or one per partition; a partition silent from its last
        event until then counts that silence). None when nothing of that kind happened.

        Per partition when the partitions' work ends at different times: a producer that sent
        all its records is done, not stalled, while another is still catching up."""
        best: Gap | None = None
        for (k, partition), (_, last, gap, gap_start) in self._spans.items():
            if k != kind:
                continue
            end = until.get(partition) if isinstance(until, Mapping) else until
            if end is not None and end - last > gap:
                gap, gap_start = end - last, last
            if best is None or gap > best.seconds:
                best = Gap(gap, partition, gap_start - self.t0)
        return best

    def rows(self) -> list[tuple[float, int, int, int]]:
        """(bucket start s, produced, consumed, commits) for every bucket up to the last event."""
        n = max(len(b) for b in self._buckets.values())
        cols = [b + [0] * (n - len(b)) for b in (self._buckets[k] for k in KINDS)]
        return [(round(i * self.bucket_s, 6), cols[0][i], cols[1][i], cols[2][i])
                for i in range(n)]

    def series(self, warmup_s: float = 0.0) -> list[dict[str, Any]]:
        """One dict per bucket: records produced (acknowledged) and consumed in it, the backlog
        at its end (acknowledged but not yet consumed, all partitions together: it grows
        without bound once the consumers cannot keep up), the end-to-end p99 of the records
        consumed in it (None without any), and whether it lies in the warm-up."""
        n = max(len(self._e2e), *(len(b) for b in self._buckets.values()))
        produced, consumed = (self._buckets[k] + [0] * (n - len(self._buckets[k]))
                              for k in ("produced", "consumed"))
        e2e = self._e2e + [[] for _ in range(n - len(self._e2e))]
        out: list[dict[str, Any]] = []
        backlog = 0
        for i in range(n):
            backlog += produced[i] - consumed[i]
            start = round(i * self.bucket_s, 6)
            out.append({"t_s": start, "bucket_s": self.bucket_s, "produced": produced[i],
                        "consumed": consumed[i], "backlog": max(backlog, 0),
                        "e2e_records": sum(c for _, c in e2e[i]),
                        "e2e_p99_us": weighted_percentile(e2e[i], 99.0),
                        "warmup": start < warmup_s})
        return out


def weighted_percentile(pairs: list[tuple[int, int]], pct: float) -> int | None:
    """The smallest value at or below which ``pct`` percent of the weight lies (HDR's
    definition, exact here), from (value, weight) pairs; None when there is no weight."""
    total = sum(c for _, c in pairs)
    if total == 0:
        return None
    # ceil, at least the first record, at most the last (pct 100)
    rank = min(total, max(1, -(-total * pct // 100)))
    seen = 0
    for value, count in sorted(pairs):
        seen += count
        if seen >= rank:
            return value
    raise AssertionError("unreachable: rank <= total weight")
