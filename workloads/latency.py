"""Latency recording into HDR histograms without paying the histogram on the hot path.

``hdrh``'s ``record_value`` is pure Python (~2-3 µs); the load client records one value per
request and one per fetched batch, so values are appended to a plain list (tens of ns) and folded
into the histogram only when someone reads it (after the measurement) or when a million samples
have piled up. Folding first counts equal values (``collections.Counter``, in C), so it costs one
``record_value`` per distinct microsecond value, not per sample.

Unit: microseconds, trackable range 1 µs .. 60 s, 3 significant digits (design: per-request
latency samples are stored with every run). Values outside the range are clamped and counted in
``clamped`` so a report can say so instead of silently dropping them.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from hdrh.histogram import HdrHistogram

__all__ = ["HIGHEST_US", "LOWEST_US", "SIGNIFICANT_FIGURES", "LatencyRecorder"]

LOWEST_US = 1
HIGHEST_US = 60_000_000
SIGNIFICANT_FIGURES = 3
# Fold pending samples into the histogram after this many (bounds memory on long runs).
_FLUSH_AT = 1 << 20


class LatencyRecorder:
    __slots__ = ("_counts", "_hist", "_values", "clamped", "name")

    def __init__(self, name: str = "") -> None:
        self.name = name
        self._hist = HdrHistogram(LOWEST_US, HIGHEST_US, SIGNIFICANT_FIGURES)
        # Single samples, and (value, count) pairs for values recorded with count > 1.
        self._values: list[int] = []
        self._counts: list[tuple[int, int]] = []
        # Samples outside [LOWEST_US, HIGHEST_US] (recorded at the nearest bound).
        self.clamped = 0

    def record(self, value_us: int, count: int = 1) -> None:
        """Record ``count`` samples of ``value_us`` (cheap; folded later)."""
        if count == 1:
            values = self._values
            values.append(value_us)
            if len(values) >= _FLUSH_AT:
                self._flush()
        else:
            self._counts.append((value_us, count))
            if len(self._counts) >= _FLUSH_AT:
                self._flush()

    def _flush(self) -> None:
        hist = self._hist
        folded = Counter(self._values)
        for v, c in self._counts:
            folded[v] += c
        for v, c in folded.items():
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

    def to_json(self) -> dict[str, Any]:
        """Lossless wire form (a load worker's results travel to the driver this way)."""
        return {"name": self.name, "hist": self.encode(), "clamped": self.clamped}

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> LatencyRecorder:
        out = cls(str(doc["name"]))
        out._hist.decode_and_add(str(doc["hist"]))
        out.clamped = int(doc["clamped"])
        return out
