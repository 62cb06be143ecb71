"""harness.bench.perf_cluster's table: medians, spread and the ratios to the ceilings (pure)."""

from __future__ import annotations

import math

import pytest

from harness.bench.perf_cluster import (
    NULL_SINK,
    UNCOORDINATED,
    Sample,
    efficiency_min,
    table,
    twins_for,
)


def _s(side: str, rps: float, rep: int, role: str = "production", cpu: float | None = None
       ) -> Sample:
    return Sample(side, 32, 20, "split", role, rep, 1000, 1000 / rps, rps, cpu)


def test_medians_spread_and_ratios() -> None:
    samples = [_s("zk", r, i, cpu=c) for i, (r, c) in enumerate(((40.0, 9.0), (50.0, 7.0),
                                                                  (60.0, 8.0)))]
    samples += [_s("dsbs", r, i) for i, r in enumerate((90.0, 100.0, 110.0))]
    samples += [_s(UNCOORDINATED, 200.0, i) for i in range(3)]
    samples += [_s(NULL_SINK, 400.0, i) for i in range(3)]
    samples += [_s("zk", 10.0, 0, "consumption"), _s(UNCOORDINATED, 40.0, 0, "consumption")]
    rows = {(r["role"], r["side"]): r for r in table(samples, ["zk", "dsbs"])}
    zk = rows[("production", "zk")]
    assert zk["median_rps"] == 50 and zk["cv"] == pytest.approx(10 / 50)
    assert zk["cpu_ms_per_1k"] == 8.0
    assert zk["ratio_uncoordinated"] == 0.25 and zk["ratio_null-sink"] == 0.125
    assert rows[("production", "dsbs")]["ratio_uncoordinated"] == 0.5
    # The ceilings themselves get no ratio; one repetition has no spread.
    assert "ratio_uncoordinated" not in rows[("production", UNCOORDINATED)]
    consumed = rows[("consumption", "zk")]
    assert consumed["cv"] is None and consumed["ratio_null-sink"] is None
    assert consumed["cpu_ms_per_1k"] is None
    assert efficiency_min(list(rows.values())) == 0.25


def test_no_ratio_no_efficiency() -> None:
    assert math.isnan(efficiency_min(table([_s("zk", 5.0, 0)], ["zk"])))


def test_the_sides_are_the_compared_architectures_that_run_the_shape() -> None:
    # `local` is under test but runs one broker: asking it for three failed the whole benchmark.
    assert twins_for(3) == ["zk", "dsbs", "raft"]
    assert twins_for(65) == []  # more brokers than any architecture runs
