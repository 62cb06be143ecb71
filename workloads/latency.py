"""Latency recording into HDR histograms without paying the histogram on the hot path.

``hdrh``'s ``record_value`` is pure Python (~1 µs); the load client records one value per request
and one per fetched batch, so values are appended to plain lists (tens of ns) and folded into the
histogram in bulk when the lists grow or when someone reads the histogram.

Unit: microseconds, trackable range 1 µs .. 60 s, 3 significant digits (design: per-request
latency samples are stored with every run). Values outside the range are clamped and counted in
``clamped`` so a report can say so instead of silently dropping them.
"""

from __future__ import annotations

from hdrh.histogram import HdrHistogram

__all__ = ["HIGHEST_US", "LOWEST_US", "SIGNIFICANT_FIGURES", "LatencyRecorder"]

LOWEST_US = 1
HIGHEST_US = 60_000_000
SIGNIFICANT_FIGURES = 3
# Fold pending samples into the histogram after this many (bounds memory on long runs).
_FLUSH_AT = 8192


class LatencyRecorder:
    __slots__ = ("_counts", "_hist", "_values", "clamped", "name")

    def __init__(self, name: str = "") -> None:
        self.name = name
        self._hist = HdrHistogram(LOWEST_US, HIGHEST_US, SIGNIFICANT_FIGURES)
        self._values: list[int] = []
        self._counts: list[int] = []
        # Samples outside [LOWEST_US, HIGHEST_US] (recorded at the nearest bound).
        self.clamped = 0

    def record(self, value_us: int, count: int = 1) -> None:
        """Record ``count`` samples of ``value_us`` (cheap; folded later)."""
        self._values.append(value_us)
        self._counts.append(count)
        if len(self._values) >= _FLUSH_AT:
            self._flush()

    def _flush(self) -> None:
        hist = self._hist
        for v, c in zip(self._values, self._counts, strict=True):
            if v < LOWEST_US:
                v = LOWEST_US
                self.clamped += c
            elif v > HIGHEST_US:
                v = HIGHEST_US
                self.clamped += c
            hist.record_value(v, c)
        self._values.clear()
        self._counts.clear()

    @property
    def histogram(self) -> HdrHistogram:
        self._flush()
        return self._hist

    def merge(self, other: LatencyRecorder) -> None:
        self._flush()
        self._hist.add(other.histogram)
        self.clamped += other.clamped

    @property
    def count(self) -> int:
        return self.histogram.get_total_count()

    def percentile(self, p: float) -> int:
        return self.histogram.get_value_at_percentile(p)

    def summary(self) -> dict[str, float]:
        """count, mean, p50/p90/p99/p99.9, max (µs): what a run log row stores."""
        h = self.histogram
        if h.get_total_count() == 0:
            return {"count": 0}
        return {
            "count": h.get_total_count(),
            "mean_us": h.get_mean_value(),
            "p50_us": h.get_value_at_percentile(50),
            "p90_us": h.get_value_at_percentile(90),
            "p99_us": h.get_value_at_percentile(99),
            "p999_us": h.get_value_at_percentile(99.9),
            "max_us": h.get_max_value(),
        }

    def encode(self) -> str:
        """The histogram in HdrHistogram's compressed base64 form (portable across languages)."""
        return self.histogram.encode().decode("ascii")
