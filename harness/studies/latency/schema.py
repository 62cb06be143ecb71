"""The latency study's keys: ``rate_search`` (each side's maximum sustainable rate) and
``rate_fractions`` (sessions at fractions of it). A fixed ``rate`` is the core's (open-loop
load, harness/workload.py): this study searches for the rate instead."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from brokers.core.errors import UserError
from harness.schema import Ctx, keys
from harness.studies.latency.search import SearchConfig

# What one load-client process schedules on time against the null sink on the 2-core
# development VM (`python -m harness.bench.perf --open-loop`: 325,000 records/s; docs/latency.md),
# rounded down. Only a hint now, for the warning about a fixed `rate` above it when this
# machine's own ceiling was never measured; rate searches use the measured one (ceiling.py).
CLIENT_CEILING_RPS = 300_000.0


@dataclass(frozen=True)
class RateSearchPlan:
    # First rate tried, records/s, all producers together; should be comfortably kept.
    start: float
    # Ramp: each kept rate is multiplied by this until one fails; then bisection.
    factor: float = field(default=2.0, kw_only=True)
    # The search ends when the bracket is at most this fraction of its lower end wide.
    precision: float = field(default=0.1, kw_only=True)
    # Never tried above this (a rate the load client cannot schedule measures the client);
    # None: the load client's own ceiling, measured on this machine (ceiling.py).
    ceiling: float | None = field(default=None, kw_only=True)
    # A rate is kept when the producers kept their schedule, nothing was lost, and the backlog
    # (acknowledged, not yet consumed) when production ended was at most this many seconds of
    # the rate: a bounded backlog, as OpenMessaging Benchmark's rate search asks.
    max_backlog_s: float = field(default=1.0, kw_only=True)


@dataclass(frozen=True)
class Latency:
    search: RateSearchPlan
    # Afterwards, sessions at these fractions of each side's maximum (the mean over tries),
    # one cell each (cell id suffix -f<percent>).
    fractions: tuple[float, ...] = ()


_SEARCH_KEYS = keys(RateSearchPlan)


def parse(ctx: Ctx, data: Mapping[str, Any], core: Mapping[str, Any]) -> Latency | None:
    raw = data.get("rate_search")
    if "rate_fractions" in data and raw is None:
        raise ctx.fail("rate_fractions", "fractions of what? give rate_search too")
    if raw is None:
        return None
    if "rate" in data:
        raise ctx.fail("rate", "give rate or rate_search, not both")
    if not isinstance(raw, dict) or "start" not in raw:
        raise ctx.fail("rate_search", "must be a mapping with at least start (records/s)")
    ctx.check_keys(raw, _SEARCH_KEYS, "rate_search")
    if "duration_s" not in data:
        raise ctx.fail("rate_search", "each step is a time-bounded session: give duration_s")
    if data.get("restart", "never") != "never":
        raise ctx.fail("rate_search", "searches run on one cluster per side: restart: never")
    if data.get("faults") is not None:
        raise ctx.fail("rate_search", "a fault workload paces its load with faults.rate")
    nums = {k: ctx.number(f"rate_search.{k}", v) for k, v in raw.items()}
    try:
        # The search's own checks (start > 0, factor > 1, ...), named after the file's key.
        SearchConfig(start=nums["start"], factor=nums.get("factor", 2.0),
                     precision=nums.get("precision", 0.1),
                     ceiling=nums.get("ceiling", float("inf")))
    except UserError as exc:
        raise ctx.fail("rate_search", str(exc)) from None
    if nums.get("max_backlog_s", 1.0) <= 0:
        raise ctx.fail("rate_search.max_backlog_s", "must be > 0")
    fractions: tuple[float, ...] = ()
    if "rate_fractions" in data:
        listed = [ctx.number("rate_fractions", f)
                  for f in ctx.string_list("rate_fractions", data["rate_fractions"])]
        if any(f > 2 for f in listed) or len(set(listed)) != len(listed):
            raise ctx.fail("rate_fractions", "must be distinct fractions in (0, 2] of the "
                           "maximum sustainable rate (1 = the maximum)")
        fractions = tuple(listed)
    return Latency(RateSearchPlan(**nums), fractions)
