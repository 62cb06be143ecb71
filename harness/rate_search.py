"""The highest rate a system keeps: ramp up geometrically until a try fails, then bisect.

Sans-IO: the caller supplies ``keeps(rate) -> bool`` (run a session at ``rate`` and say whether
it kept its schedule) and gets back the bracket and every try, so the same search serves the
load client's own ceiling (``harness.perf --open-loop``, against the null sink) and, later, each
twin's maximum sustainable rate.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from brokers.core.errors import UserError

__all__ = ["RateSearch", "SearchConfig", "search_max_rate"]


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


def search_max_rate(keeps: Callable[[float], bool], config: SearchConfig) -> RateSearch:
    tries: list[tuple[float, bool]] = []

    def attempt(rate: float) -> bool:
        ok = keeps(rate)
        tries.append((rate, ok))
        return ok

    lo, hi = 0.0, float("inf")
    rate = config.start
    while True:
        if attempt(rate):
            lo = rate
            if rate >= config.ceiling:
                break
            rate = min(rate * config.factor, config.ceiling)
        else:
            hi = rate
            break
    if lo == 0.0 and hi != float("inf"):
        # Even the start failed: bisect down towards zero would never end; report the bracket.
        return RateSearch(0.0, hi, tuple(tries))
    while hi != float("inf") and hi - lo > config.precision * lo:
        mid = (lo + hi) / 2
        if attempt(mid):
            lo = mid
        else:
            hi = mid
    return RateSearch(lo, hi, tuple(tries))
