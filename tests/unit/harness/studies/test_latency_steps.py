"""The open-loop time series (workloads.timeline) and the rate search's verdicts
(harness.studies.latency.steps), with fake clocks and hand-built session results: no I/O."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.driver.plan import Cell, Side
from harness.driver.session import OpenLoopResult, RoleResult, SessionResult
from harness.studies.latency import RateSearchPlan
from harness.studies.latency.search import RateSearch
from harness.studies.latency.steps import (
    CONSUMED_FRACTION,
    Step,
    backlog_at,
    max_rate_row,
    mean_max,
    search_config,
    step_row,
    step_verdict,
)
from workloads.latency import LatencyRecorder
from workloads.timeline import Timeline, weighted_percentile
from workloads.verify import VerifyReport


def test_series_counts_backlog_and_p99_per_second() -> None:
    t = Timeline(100.0, bucket_s=1.0)
    # Second 0: 1,000 acknowledged, 600 consumed -> backlog 400.
    t.add("produced", 0, 1_000, now=100.2)
    t.add("consumed", 0, 600, now=100.9)
    t.e2e(2_000, 599, now=100.9)
    t.e2e(50_000, 1, now=100.9)
    # Second 1: nothing produced, the consumers catch up.
    t.add("consumed", 0, 400, now=101.5)
    t.e2e(900_000, 400, now=101.5)
    # Second 2: a quiet second still has a row.
    t.add("produced", 0, 10, now=103.1)
    rows = t.series(warmup_s=1.0)
    assert [r["t_s"] for r in rows] == [0.0, 1.0, 2.0, 3.0]
    assert [r["backlog"] for r in rows] == [400, 0, 0, 10]
    assert [r["warmup"] for r in rows] == [True, False, False, False]
    # p99 of 600 records: rank 594 lies among the 599 at 2 ms.
    assert rows[0]["e2e_p99_us"] == 2_000 and rows[0]["e2e_records"] == 600
    assert rows[1]["e2e_p99_us"] == 900_000
    assert rows[2]["e2e_p99_us"] is None and rows[2]["e2e_records"] == 0


def test_a_stall_shows_in_the_buckets_after_it() -> None:
    # 10 records/s for 5 s; the consumer stalls in seconds 1-2 and then delivers everything.
    t = Timeline(0.0, bucket_s=1.0)
    for sec in range(5):
        t.add("produced", 0, 10, now=sec + 0.5)
    t.add("consumed", 0, 10, now=0.6)
    t.add("consumed", 0, 30, now=3.2)
    t.add("consumed", 0, 10, now=4.6)
    assert [r["backlog"] for r in t.series()] == [0, 10, 20, 0, 0]


@given(st.lists(st.tuples(st.integers(1, 10**7), st.integers(1, 50)), min_size=1,
                max_size=60),
       st.sampled_from([50.0, 90.0, 99.0, 99.9, 100.0]))
def test_weighted_percentile_is_the_expanded_samples_percentile(pairs, pct) -> None:
    expanded = sorted(v for v, c in pairs for _ in range(c))
    rank = -(-len(expanded) * pct // 100)
    assert weighted_percentile(pairs, pct) == expanded[max(1, int(rank)) - 1]


def test_weighted_percentile_of_nothing_is_none() -> None:
    assert weighted_percentile([], 99) is None


PLAN = RateSearchPlan(1_000, max_backlog_s=1.0)


def _result(*, achieved: float = 10_000, consumed: int = 30_000, consumed_s: float = 3.0,
            backlog: int = 0, behind: bool = False, lost: int = 0) -> SessionResult:
    e2e = LatencyRecorder()
    e2e.record(4_000, consumed)
    delay = LatencyRecorder()
    delay.record(1_000, 100)
    series = [{"t_s": float(i), "bucket_s": 1.0, "backlog": backlog if i == 2 else 0}
              for i in range(4)]
    role = RoleResult("consumption", 3, consumed, consumed_s, LatencyRecorder(), e2e, 0)
    report = VerifyReport(records=consumed, unique=consumed, lost=lost, duplicates=0,
                          out_of_order=0, unexpected=0, expected=consumed + lost)
    ol = OpenLoopResult(10_000, achieved, behind, delay, LatencyRecorder(), series)
    return SessionResult(role, role, report, consumed, False, ol)


@pytest.mark.parametrize(("kw", "verdict"), [
    ({}, "kept"),
    ({"behind": True}, "behind"),
    ({"lost": 3}, "lost"),
    # More than one second of the rate left unconsumed when production ended.
    ({"backlog": 10_001}, "backlog"),
    ({"backlog": 10_000}, "kept"),
    # Consumers below 90% of the achieved rate (a backlog drained after production).
    ({"consumed_s": 3.0 / (CONSUMED_FRACTION - 0.01)}, "backlog"),
])
def test_step_verdicts(kw, verdict) -> None:
    step = step_verdict(_result(**kw), 10_000, PLAN, duration_s=3.0)
    assert step.verdict == verdict
    assert step.kept == (verdict == "kept")
    assert step.e2e_p99_us == pytest.approx(4_000, rel=0.001)


def test_backlog_at_reads_the_last_second_of_production() -> None:
    series = [{"bucket_s": 1.0, "backlog": b} for b in (5, 6, 7, 8)]
    assert backlog_at(series, 3.0) == 7
    assert backlog_at(series, 2.5) == 7
    assert backlog_at(series, 10.0) == 8
    assert backlog_at([], 3.0) == 0


def test_rows_and_the_mean_maximum() -> None:
    side = Side(0, "zk", "", "every_fetch", "per_request")
    cell = Cell("latency", 32, 20, fraction=0.5)
    row = step_row("r", side, cell, 2, 3, 4_000.0, Step("error"))
    assert row["cell_id"] == "latency-32B-b20" and row["verdict"] == "error"
    found = [RateSearch(10_000, 12_000, ()), RateSearch(20_000, float("inf"), ())]
    bound = max_rate_row("r", side, cell, 1, found[1], 20_000.0)
    assert bound["failed_rate"] is None and bound["client_bound"] is True
    assert bound["ceiling"] == 20_000.0
    measured = max_rate_row("r", side, cell, 1, found[0], 20_000.0)
    assert measured["failed_rate"] == 12_000 and measured["client_bound"] is False
    assert mean_max(found) == 15_000 and mean_max([]) == 0.0
    assert cell.cell_id == "latency-32B-b20-f50"


def test_the_search_uses_the_workloads_ceiling_else_the_clients() -> None:
    plan = RateSearchPlan(1_000.0)
    assert search_config(plan, 250_000.0).ceiling == 250_000.0
    assert search_config(RateSearchPlan(1_000.0, ceiling=5_000.0), 250_000.0).ceiling == 5_000.0
