"""Maximum sustainable rate searches (``rate_search`` workloads): verdicts and rows.

A step of a search is one time-bounded open-loop streaming session at the rate the search asks
for (harness/studies/latency/search.py). The step *keeps* its rate when

* the producers kept their schedule (``behind`` is false: the client, not the broker, would
  otherwise be what limits the rate),
* verification found nothing lost, reordered or corrupted, and no consumer gave up, and
* the consumers kept up: they consumed, after the warm-up, at least ``CONSUMED_FRACTION`` of
  the rate the producers achieved (their time runs to their last record, so a backlog left to
  drain after production lowers it), and the backlog when production ended (records
  acknowledged but not yet consumed, from the session's 1-second series) was at most
  ``max_backlog_s`` seconds of the rate. Beyond the maximum, consumers fall further behind
  every second and the backlog grows without bound; a short session would hide that behind
  an absolute bound alone.

Every step becomes a rate_search.csv row and every finished search a max_rate.csv row
(docs/result-format.md); the runner (harness/driver/runner.py) steps the searches of all
sides of an epoch in lockstep, alternating which side goes first, as it does sessions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from harness.driver.plan import Cell, Side
from harness.driver.session import SessionResult
from harness.studies.latency.schema import RateSearchPlan
from harness.studies.latency.search import RateSearch, SearchConfig

__all__ = ["Step", "max_rate_row", "mean_max", "search_config", "step_row", "step_verdict"]

VERDICTS = ("kept", "behind", "backlog", "lost", "error")
# Consumers must consume at least this share of the achieved rate (10% slack for the batch
# granularity of a short session's last second).
CONSUMED_FRACTION = 0.9


@dataclass(frozen=True)
class Step:
    # kept | behind | backlog | lost | error (VERDICTS)
    verdict: str
    # Records/s sent after the warm-up, all producers together (0 for an error).
    achieved_rate: float = 0.0
    # Records/s consumed after the warm-up.
    consumed_rate: float = 0.0
    # Acknowledged but unconsumed records when production ended.
    backlog_end: int = 0
    e2e_p99_us: int | None = None
    send_delay_p99_us: int | None = None

    @property
    def kept(self) -> bool:
        return self.verdict == "kept"


def search_config(plan: RateSearchPlan, ceiling: float) -> SearchConfig:
    """The search of ``plan`` under ``ceiling`` (the workload's own, or the client's)."""
    return SearchConfig(start=plan.start, factor=plan.factor, precision=plan.precision,
                        ceiling=plan.ceiling if plan.ceiling is not None else ceiling)


def backlog_at(series: list[dict[str, Any]], duration_s: float) -> int:
    """The backlog at the end of the last bucket of the production schedule (or at the end of
    the series when it is shorter)."""
    if not series:
        return 0
    bucket_s = series[0]["bucket_s"]
    last = max(0, math.ceil(duration_s / bucket_s) - 1)
    return int(series[min(last, len(series) - 1)]["backlog"])


def step_verdict(result: SessionResult, rate: float, plan: RateSearchPlan,
                 duration_s: float) -> Step:
    ol = result.open_loop
    assert ol is not None, "a search step is an open-loop session"
    cons = result.consumption
    backlog = backlog_at(ol.series, duration_s)
    consumed = cons.records / cons.wall_s if cons.wall_s > 0 else 0.0
    e2e = cons.e2e.percentile(99) if cons.e2e is not None and cons.e2e.count else None
    delay = ol.send_delay.percentile(99) if ol.send_delay.count else None
    if result.failed or result.timed_out:
        verdict = "lost"
    elif ol.behind:
        verdict = "behind"
    elif (backlog > plan.max_backlog_s * rate
          or consumed < CONSUMED_FRACTION * ol.achieved_rate):
        verdict = "backlog"
    else:
        verdict = "kept"
    return Step(verdict, ol.achieved_rate, consumed, backlog, e2e, delay)


def step_row(run_id: str, side: Side, cell: Cell, try_no: int, step_no: int, rate: float,
             step: Step) -> dict[str, Any]:
    return {"run_id": run_id, "arch": side.arch, "label": side.label, "cell_id": cell.base_id,
            "try": try_no, "step": step_no, "rate": round(rate, 3), "verdict": step.verdict,
            "achieved_rate": round(step.achieved_rate, 3),
            "consumed_rate": round(step.consumed_rate, 3), "backlog_end": step.backlog_end,
            "e2e_p99_us": step.e2e_p99_us, "send_delay_p99_us": step.send_delay_p99_us}


def max_rate_row(run_id: str, side: Side, cell: Cell, try_no: int, found: RateSearch,
                 ceiling: float) -> dict[str, Any]:
    bound = math.isinf(found.failed)
    return {"run_id": run_id, "arch": side.arch, "label": side.label, "cell_id": cell.base_id,
            "try": try_no, "kept_rate": round(found.kept, 3),
            # inf (the ceiling itself was kept) is written as empty: no rate failed.
            "failed_rate": None if bound else round(found.failed, 3),
            "steps": len(found.tries), "ceiling": round(ceiling, 3),
            # The search stopped at the ceiling, not at a rate the brokers failed: the
            # maximum is at least kept_rate, and the client's, not the brokers'.
            "client_bound": bound}


def mean_max(found: list[RateSearch]) -> float:
    """What a side's rate fractions are fractions of: the mean of its tries' kept rates."""
    return sum(f.kept for f in found) / len(found) if found else 0.0
