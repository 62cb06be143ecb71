"""The highest rate a system keeps: ramp up geometrically until a try fails, then bisect.

Sans-IO: :class:`RateSearcher` owns no clock and runs nothing; the caller asks it for the next
rate to try, runs a session at that rate however it likes, and tells it whether the rate was
kept. The same search thus serves the load client's own ceiling (``harness.bench.perf --open-loop``,
``search_max_rate`` with a blocking ``keeps`` callable, against the null sink) and each twin's
maximum sustainable rate (``twinbench run`` with ``rate_search``, harness/studies/latency/steps.py),
where the searches of both architectures advance in lockstep so their tries interleave.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from brokers.core.errors import UserError

__all__ = ["RateSearch", "RateSearcher", "SearchConfig", "search_max_rate"]


@dataclass(frozen=True)
class SearchConfig:
    # First rate tried (records/s); should be comfortably sustainable.
    start: float
    # Ramp: each passing try multiplies the rate by this.
    factor: float = 2.0
    # Bisection stops when the bracket's width is at most this fraction of its lower end.
    precision: float = 0.05
    # Never try above this (a cap on the ramp: e.g. what the load client itself can schedule).
    ceiling: float = float("inf")

    def __post_init__(self) -> None:
        if not self.start > 0:
            raise UserError("search start rate must be positive")
        if not self.factor > 1:
            raise UserError("search factor must be > 1")
        if not 0 < self.precision < 1:
            raise UserError("search precision must be within (0, 1)")
        if not self.ceiling >= self.start:
            raise UserError("search ceiling must be >= its start")


@dataclass(frozen=True)
class RateSearch:
    # Highest rate that kept its schedule (0 when even the start failed).
    kept: float
    # Lowest rate that failed (inf when the ceiling itself was kept).
    failed: float
    # (rate, kept) in the order tried.
    tries: tuple[tuple[float, bool], ...]


class RateSearcher:
    """Ramp (``start``, then times ``factor`` while kept, capped at ``ceiling``) until a rate
    fails, then bisect the bracket until it is ``precision`` wide. ``next_rate()`` is None once
    the search is over; ``result()`` then says what it found."""

    def __init__(self, config: SearchConfig) -> None:
        self.config = config
        self.tries: list[tuple[float, bool]] = []
        self.lo, self.hi = 0.0, float("inf")
        self._ramping = True
        self._next: float | None = config.start

    def next_rate(self) -> float | None:
        return self._next

    def record(self, kept: bool) -> None:
        rate = self._next
        if rate is None:
            raise RuntimeError("the search is over; nothing to record")
        self.tries.append((rate, kept))
        cfg = self.config
        if kept:
            self.lo = rate
        else:
            self.hi = rate
        if self._ramping:
            if kept and rate < cfg.ceiling:
                self._next = min(rate * cfg.factor, cfg.ceiling)
                return
            self._ramping = False
        lo, hi = self.lo, self.hi
        if lo == 0.0 or hi == float("inf") or hi - lo <= cfg.precision * lo:
            # Done: the ceiling was kept, the bracket is narrow enough, or even the start
            # failed (bisecting towards zero would never end; the bracket says so).
            self._next = None
            return
        self._next = (self.lo + self.hi) / 2

    def result(self) -> RateSearch:
        return RateSearch(self.lo, self.hi, tuple(self.tries))


def search_max_rate(keeps: Callable[[float], bool], config: SearchConfig) -> RateSearch:
    """The whole search with a blocking ``keeps(rate) -> bool``."""
    searcher = RateSearcher(config)
    while (rate := searcher.next_rate()) is not None:
        searcher.record(keeps(rate))
    return searcher.result()
