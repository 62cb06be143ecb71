"""The fault tables, their report section and the figures' inputs, on hand-made frames
(no Spark): intervals computed by hand, one-sided cases, failed sessions, rates and markers."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from spark_analysis import plotting
from spark_analysis.archs import DEFAULT
from spark_analysis.schema import FAULT_COUNTS, FAULT_METRICS
from spark_analysis.studies.faults import figures as fault_figures
from spark_analysis.studies.faults import tables as fault_tables
from spark_analysis.studies.faults.study import FaultTables

T975_2 = 4.302652729749464  # t(0.975, 2): three tries
KEY = {"workload": "faults", "cell_id": "faults-32B-b20", "offset_commit": "every_fetch",
       "metadata_check": "per_request"}


def wide_row(case: str, arch: str, values: dict[str, list[float]], *, sessions: int = 3,
             lost: int = 0, failed: int = 0) -> dict[str, object]:
    """One row as aggregate.fault_stats returns it, from per-try values of some durations."""
    row: dict[str, object] = {**KEY, "case": case, "arch": arch, "side": "*", "runs": 1,
                              "sessions": sessions, "failed_sessions": failed,
                              "hit_controller": 0, "hit_coordinator": 0, "rate": 1000.0,
                              "sent": 1000 * sessions, "acked": 1000 * sessions,
                              "consumed": 1000 * sessions - lost, "group_rebalances": 0}
    for m in FAULT_METRICS:
        v = pd.Series(values.get(m, []), dtype=float)
        row[f"{m}__n"] = len(v)
        row[f"{m}__mean"] = v.mean() if len(v) else None
        row[f"{m}__sd"] = v.std(ddof=1) if len(v) > 1 else None
    row.update({c: 0 for c in FAULT_COUNTS})
    row["lost"] = lost
    return row


@pytest.fixture
def wide() -> pd.DataFrame:
    return pd.DataFrame([
        wide_row("kill-leader", "zk", {"detection_s": [1.0, 1.5, 2.0],
                                       "produce_gap_s": [4.0, 4.5, 5.0],
                                       "group_recovery_s": [0.0, 0.0, 0.0]}),
        wide_row("kill-leader", "dsbs", {"detection_s": [2.0, 3.0, 4.0],
                                         "produce_gap_s": [5.0, 6.0, 7.0],
                                         "group_recovery_s": [0.0, 0.0, 0.0]},
                 lost=12, failed=1),
        # A ZooKeeper outage: no broker hit, so no detection; DSBS has no such case.
        wide_row("stop-zookeeper", "zk", {"produce_gap_s": [0.2], "rejoin_s": [0.5]},
                 sessions=1),
        # An A/A side never reaches the tables.
        {**wide_row("kill-leader", "zk", {"detection_s": [9.0, 9.0]}), "side": "A"},
    ])


def one(df: pd.DataFrame, **match: object) -> pd.Series:
    sel = df
    for k, v in match.items():
        sel = sel[sel[k] == v]
    assert len(sel) == 1, f"{match}: {len(sel)} rows"
    return sel.iloc[0]


def test_fault_stats_interval_by_hand(wide: pd.DataFrame) -> None:
    long = fault_tables.fault_stats(wide)
    assert len(long) == 3 * len(FAULT_METRICS)  # the A/A row is left out
    det = one(long, case="kill-leader", arch="zk", metric="detection_s")
    half = T975_2 * 0.5 / math.sqrt(3)  # sd of 1.0, 1.5, 2.0 is 0.5
    assert (det["n"], det["mean"], det["sd"]) == (3, pytest.approx(1.5), pytest.approx(0.5))
    assert det["ci_lo"] == pytest.approx(1.5 - half) and det["ci_hi"] == pytest.approx(1.5 + half)
    assert det["ci_lo"] == pytest.approx(0.25793, abs=1e-5)  # 1.5 - 1.24207
    gap = one(long, case="kill-leader", arch="dsbs", metric="produce_gap_s")
    assert (gap["mean"], gap["ci_hi"]) == (pytest.approx(6.0),
                                           pytest.approx(6.0 + T975_2 / math.sqrt(3)))
    # One try: a mean, no sd, no interval. None observed: nothing at all.
    zk1 = one(long, case="stop-zookeeper", arch="zk", metric="produce_gap_s")
    assert zk1["n"] == 1 and zk1["mean"] == pytest.approx(0.2)
    assert math.isnan(zk1["sd"]) and math.isnan(zk1["ci_lo"]) and math.isnan(zk1["ci_hi"])
    none = one(long, case="stop-zookeeper", arch="zk", metric="detection_s")
    assert none["n"] == 0 and none["sessions"] == 1 and math.isnan(none["mean"])
    # Metric order follows the report's: detection first, group recovery last.
    sub = long[(long["case"] == "kill-leader") & (long["arch"] == "zk")]
    assert list(sub["metric"]) == list(FAULT_METRICS)


def test_fault_comparison_ratio_and_one_sided_cases(wide: pd.DataFrame) -> None:
    cmp = fault_tables.fault_comparison(fault_tables.fault_stats(wide))
    det = one(cmp, case="kill-leader", metric="detection_s")
    assert det["ratio"] == pytest.approx(2.0)
    assert det["ratio_ci_lo"] < 2.0 < det["ratio_ci_hi"]
    # Both means 0: no ratio.
    assert math.isnan(one(cmp, case="kill-leader", metric="group_recovery_s")["ratio"])
    zk_only = one(cmp, case="stop-zookeeper", metric="produce_gap_s")
    assert (zk_only["zk_sessions"], zk_only["zk_n"]) == (1, 1)
    assert (zk_only["dsbs_sessions"], zk_only["dsbs_n"]) == (0, 0)
    assert math.isnan(zk_only["ratio"])


def test_fault_outcomes_flag_loss(wide: pd.DataFrame) -> None:
    out = fault_tables.fault_outcomes(wide)
    assert list(zip(out["case"], out["arch"], out["status"], strict=True)) == [
        ("kill-leader", "zk", "ok"), ("kill-leader", "dsbs", "failed"),
        ("stop-zookeeper", "zk", "ok")]
    assert one(out, case="kill-leader", arch="dsbs")["lost"] == 12


def test_report_section_says_what_is_missing_and_what_failed(wide: pd.DataFrame) -> None:
    long = fault_tables.fault_stats(wide)
    faults = FaultTables(sessions=pd.DataFrame({"x": [1]}), stats=long,
                         outcomes=fault_tables.fault_outcomes(wide),
                         comparison=fault_tables.fault_comparison(long), archs=DEFAULT)
    text = faults.section()
    lines = text.splitlines()

    def row(case: str, measure: str) -> list[str]:
        hit = [ln for ln in lines if ln.startswith(f"| {case} | {measure} |")]
        assert len(hit) == 1, (case, measure)
        return [c.strip() for c in hit[0].strip("|").split("|")]

    det = row("kill-leader", "detection")
    assert det[2:5] == ["1.5 ± 0.5 (3)", "[0.258, 2.74]", "3 ± 1 (3)"]
    assert det[6] == "2"
    assert row("stop-zookeeper", "unavailability (longest produce gap)")[2:8] == [
        "0.2 (n=1)", "n=1: no interval", "n/a", "n/a", "-", "-"]
    assert row("stop-zookeeper", "detection")[2:4] == ["none", "-"]
    assert ("| kill-leader | dsbs | 3 | 1 | 12 | 0 | 0 | 0 | 0/3 | 0/3 | **FAILED** (lost > 0) |"
            in text)
    assert "All fault sessions: workload `faults`" in text
    head = faults.headline()
    assert "**1 FAILED** (12 acknowledged records lost; kill-leader on dsbs)" in head


def test_no_faults_section_is_one_line() -> None:
    faults = FaultTables()
    assert faults.empty and faults.tables() == {}
    assert faults.headline() == ""
    assert "No fault sessions" in faults.section()


def timeline_rows(try_: int, counts: dict[int, int], bucket: float = 0.1) -> list[dict]:
    return [{**KEY, "case": "kill-leader", "arch": "zk", "run_id": "r", "try": try_,
             "t_s": k * bucket, "bucket_s": bucket, "produced": n, "consumed": n,
             "commits": 1} for k, n in counts.items()]


def test_rates_fill_gaps_and_smooth() -> None:
    # Try 1 skips bucket 2 (nothing acknowledged there); 0.3 s window = 3 buckets.
    df = pd.DataFrame(timeline_rows(1, {0: 10, 1: 10, 3: 10, 4: 10})
                      + timeline_rows(2, {0: 20, 1: 20, 2: 20, 3: 20, 4: 20}))
    r = fault_figures.rates(df, smooth_s=0.3)
    one_try = r[r["try"] == 1].sort_values("k")
    assert list(one_try["k"]) == [0, 1, 2, 3, 4]
    # Centred moving mean of 10, 10, 0, 10, 10 (edges average what they have), / 0.1 s.
    assert list(one_try["produced"]) == pytest.approx([100, 200 / 3, 200 / 3, 200 / 3, 100])
    assert list(one_try["t_s"]) == pytest.approx([0.0, 0.1, 0.2, 0.3, 0.4])
    assert list(r[r["try"] == 2]["consumed"]) == pytest.approx([200] * 5)


def test_mean_over_tries_counts_an_ended_try_as_zero() -> None:
    # Try 2's session ended after bucket 1 (everything consumed): beyond it, it adds 0.
    df = pd.DataFrame(timeline_rows(1, {0: 10, 1: 10, 2: 10, 3: 10})
                      + timeline_rows(2, {0: 30, 1: 30}))
    mean = fault_figures.mean_over_tries(fault_figures.rates(df, smooth_s=0.1), "produced")
    assert list(mean["t_s"]) == pytest.approx([0.0, 0.1, 0.2, 0.3])
    assert list(mean["v"]) == pytest.approx([200, 200, 50, 50])


def test_markers_mean_and_spread_over_tries() -> None:
    rows = []
    for try_, at in ((1, 3.01), (2, 3.03), (3, 3.05)):
        rows.append({**KEY, "case": "kill-leader", "arch": "zk", "run_id": "r", "try": try_,
                     "step": 0, "action": "kill", "target": "leader:0", "node_id": 0,
                     "planned_s": 3.0, "at_s": at, "took_s": 0.001,
                     "result": "ok" if try_ < 3 else "no such broker"})
    m = fault_figures.markers(pd.DataFrame(rows))
    assert len(m) == 1
    got = m.iloc[0]
    assert (got["at_mean"], got["at_min"], got["at_max"]) == (
        pytest.approx(3.03), pytest.approx(3.01), pytest.approx(3.05))
    assert (got["tries"], got["failed"]) == (3, 1)


def test_case_names_qualified_only_when_settings_differ() -> None:
    df = pd.DataFrame([{**KEY, "case": "kill-leader"}, {**KEY, "case": "pause"}])
    names, setting = fault_tables.case_labels(df)
    assert sorted(names.values()) == ["kill-leader", "pause"]
    assert setting is not None and setting["workload"] == "faults"
    df.loc[1, "offset_commit"] = "none"
    names, setting = fault_tables.case_labels(df)
    assert setting is None
    assert "pause (faults faults-32B-b20, none, per_request)" in names.values()
    assert plotting.slug("Kill Leader:0") == "kill-leader-0"


@pytest.mark.filesystem
def test_summary_figure_files(wide: pd.DataFrame, tmp_path: Path) -> None:
    long = fault_tables.fault_stats(wide)
    paths = fault_figures.summary_figure(long, pd.DataFrame(), tmp_path)
    assert [p.name for p in paths] == ["faults-summary.png", "faults-summary.svg"]
    assert all(p.stat().st_size > 1000 for p in paths)
