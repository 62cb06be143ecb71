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


def test_a_maximum_at_the_clients_ceiling_is_a_lower_bound_not_a_measurement() -> None:
    """dsbs reached the client's ceiling in one of two tries (version 2 says so), zk never
    (version 1 rows: a failed rate each): dsbs gets no interval, "at least", and its ratio is
    a lower bound; a cell where both were bound has no ratio at all."""
    def row(arch: str, t: int, kept: float, failed: float | None, bound: object,
            cell: str = "latency-32B-b20") -> dict[str, object]:
        return {"workload": "latency", "side": "*", "cell_id": cell, "label": "",
                "arch": arch, "try": t, "kept_rate": kept, "failed_rate": failed,
                "ceiling": 300_000.0 if bound is not None else None, "client_bound": bound}
    found = pd.DataFrame([
        row("zk", 1, 10_000.0, 11_000.0, None), row("zk", 2, 12_000.0, 13_000.0, None),
        row("dsbs", 1, 300_000.0, None, True), row("dsbs", 2, 280_000.0, 290_000.0, False),
        row("zk", 1, 300_000.0, None, None, "c2"), row("dsbs", 1, 300_000.0, None, True, "c2"),
    ])
    out = latency_tables.max_rates(found)
    d = out[(out["arch"] == "dsbs") & (out["cell_id"] == "latency-32B-b20")].iloc[0]
    z = out[(out["arch"] == "zk") & (out["cell_id"] == "latency-32B-b20")].iloc[0]
    assert (d["client_bound"], d["at_least"], d["ceiling"]) == (1, True, 300_000.0)
    assert math.isnan(d["ci_lo"]) and d["ratio_bound"] == ">="
    assert d["ratio"] == pytest.approx(290_000 / 11_000)
    assert z["client_bound"] == 0 and not math.isnan(z["ci_lo"])
    both = out[(out["arch"] == "dsbs") & (out["cell_id"] == "c2")].iloc[0]
    assert math.isnan(both["ratio"])
    from spark_analysis.studies.latency.section import latency_md

    text = latency_md(pd.DataFrame(), out)
    assert "at least 290,000 (client-bound in 1 of 2 tries)" in text
    assert ">= 26.4" in text


def test_nothing_in_nothing_out() -> None:
    assert latency_tables.curves(pd.DataFrame()).empty
    assert latency_tables.max_rates(pd.DataFrame()).empty
