"""spark_analysis.studies.latency.tables on hand-made rows (pandas only, no Spark)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from spark_analysis import stats
from spark_analysis.studies.latency import tables as latency_tables


def _row(arch: str, cell: str, try_no: int, role: str, **kw: object) -> dict[str, object]:
    base: dict[str, object] = {
        "run_id": f"r-{arch}", "workload": "latency", "side": "*", "arch": arch, "label": "",
        "cell_id": cell, "table": "latency", "scenario": "streaming", "role": role,
        "msg_size": 32, "batch": 20, "try": try_no, "offset_commit": "every_fetch",
        "metadata_check": "per_request", "status": "ok", "records": 1000, "rps": 990.0,
        "target_rate": 1000.0, "achieved_rate": 1000.0, "behind": False,
        "e2e_p50_us": None, "e2e_p99_us": None}
    return base | kw


def test_curves_average_tries_and_count_behind() -> None:
    rows = pd.DataFrame([
        _row("dsbs", "latency-32B-b20-f50", 1, "production"),
        _row("dsbs", "latency-32B-b20-f50", 1, "consumption", e2e_p50_us=2000, e2e_p99_us=9000),
        _row("dsbs", "latency-32B-b20-f50", 2, "production", behind=True, achieved_rate=900.0),
        _row("dsbs", "latency-32B-b20-f50", 2, "consumption", e2e_p50_us=4000, e2e_p99_us=11000),
        _row("zk", "latency-32B-b20-f50", 1, "production", target_rate=400.0),
        _row("zk", "latency-32B-b20-f50", 1, "consumption", e2e_p50_us=5000, e2e_p99_us=7000),
        # A/A rows never enter.
        _row("zk", "latency-32B-b20-f50", 1, "consumption", side="A", e2e_p99_us=1),
    ])
    out = latency_tables.curves(rows)
    assert list(out["arch"]) == ["zk", "dsbs"]  # the baseline first
    d = out[out["arch"] == "dsbs"].iloc[0]
    assert (d["tries"], d["behind"], d["achieved_rate"]) == (2, 1, 950.0)
    assert d["e2e_p99_us"] == 10_000
    assert (d["e2e_p99_ci_lo"], d["e2e_p99_ci_hi"]) == pytest.approx(
        stats.t_interval(10_000, math.sqrt(2_000_000), 2))
    z = out[out["arch"] == "zk"].iloc[0]
    assert z["target_rate"] == 400 and math.isnan(z["e2e_p99_ci_lo"])


def test_max_rates_interval_and_ratio_to_the_baseline() -> None:
    found = pd.DataFrame([
        {"workload": "latency", "side": "*", "cell_id": "latency-32B-b20", "label": "",
         "arch": arch, "try": t, "kept_rate": v}
        for arch, t, v in [("zk", 1, 10_000.0), ("zk", 2, 12_000.0), ("dsbs", 1, 40_000.0),
                           ("dsbs", 2, 48_000.0)]])
    out = latency_tables.max_rates(found)
    assert list(out["arch"]) == ["zk", "dsbs"]
    z, d = out.iloc[0], out.iloc[1]
    assert (z["n"], z["mean"], z["min"], z["max"]) == (2, 11_000, 10_000, 12_000)
    assert d["ratio"] == pytest.approx(44_000 / 11_000) and z["ratio"] == 1
    assert (d["ci_lo"], d["ci_hi"]) == pytest.approx(
        stats.t_interval(44_000, math.sqrt(32_000_000), 2))


def test_nothing_in_nothing_out() -> None:
    assert latency_tables.curves(pd.DataFrame()).empty
    assert latency_tables.max_rates(pd.DataFrame()).empty
