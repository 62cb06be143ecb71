"""The Spark job on the committed fixture runs (tests/fixtures/runs, written by
spark_analysis.synth.write_fixtures), against tables computed by hand.

One analysis of the fixtures serves the whole module, and one local[1] SparkSession the whole
run (tests/integration/conftest.py): starting Spark costs seconds, and every test here reads the
same small result.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pandas as pd
import pytest
from pyspark.sql import SparkSession

from brokers.core.errors import UserError
from harness.cli import main as twinbench
from spark_analysis import job, loader, synth
from spark_analysis.session import SPARK_PANDAS_WARNINGS

pytestmark = [pytest.mark.integration,
              *(pytest.mark.filterwarnings(f"ignore:{m}") for m in SPARK_PANDAS_WARNINGS)]

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "runs"
T975_3 = 3.182446305284263  # t(0.975, 3): four tries


@pytest.fixture(scope="module")
def analysis(spark: SparkSession) -> job.Analysis:
    return job.compute(spark, [FIXTURES])


def row(df: pd.DataFrame, **match: object) -> pd.Series:
    sel = df
    for k, v in match.items():
        sel = sel[sel[k] == v]
    assert len(sel) == 1, f"{match}: {len(sel)} rows"
    return sel.iloc[0]


def test_inputs_counted(analysis: job.Analysis) -> None:
    assert len(analysis.runs) == 6
    assert analysis.input_rows == 6 * 6 * 4 * 4  # runs x cells x scenario*role x tries
    assert analysis.max_try == 4
    assert analysis.notes == []


def test_appendix_size_grid_zk_exactly(analysis: job.Analysis) -> None:
    t = analysis.appendix["size_grid_zk"]
    assert list(t.columns) == ["scenario", "role", "metric",
                               *[f"8B try {k}" for k in range(1, 5)], "8B avg",
                               *[f"16B try {k}" for k in range(1, 5)], "16B avg"]
    assert list(zip(t["scenario"], t["role"], t["metric"], strict=True)) == [
        (s, r, m) for s in ("split", "streaming") for r in ("production", "consumption")
        for m in ("rps", "kbps")]
    # By hand: split production ZK = 1000, 1100, 1200, 1300; consumption 80%; streaming half;
    # kbps = rps x size / 1000.
    expected = {
        ("split", "production", "rps"): [1000, 1100, 1200, 1300, 1150],
        ("split", "production", "kbps"): [8, 8.8, 9.6, 10.4, 9.2],
        ("split", "consumption", "rps"): [800, 880, 960, 1040, 920],
        ("streaming", "production", "rps"): [500, 550, 600, 650, 575],
        ("streaming", "consumption", "kbps"): [3.2, 3.52, 3.84, 4.16, 3.68],
    }
    for (s, r, m), values in expected.items():
        got = row(t, scenario=s, role=r, metric=m)
        assert list(got[[f"8B try {k}" for k in range(1, 5)] + ["8B avg"]]) == \
            pytest.approx(values, rel=1e-12)
    got = row(t, scenario="split", role="production", metric="kbps")
    assert got["16B avg"] == pytest.approx(18.4)


def test_appendix_batch_sweep_dsbs(analysis: job.Analysis) -> None:
    t = analysis.appendix["batch_sweep_dsbs"]
    assert [c for c in t.columns if c.endswith("avg")] == ["b1 avg", "b20 avg"]
    got = row(t, scenario="split", role="production", metric="rps")
    assert list(got[["b1 try 1", "b1 try 4", "b1 avg", "b20 avg"]]) == \
        pytest.approx([200, 260, 230, 2300])


def test_comparison_cell_by_hand(analysis: job.Analysis) -> None:
    c = row(analysis.comparison, cell_id="size_grid-8B-b20", scenario="split",
            role="production", metric="rps")
    sd_zk = math.sqrt(50000 / 3)
    assert (c["zk_n"], c["zk_mean"], c["zk_sd"]) == (4, pytest.approx(1150), pytest.approx(sd_zk))
    assert (c["dsbs_mean"], c["dsbs_sd"]) == (pytest.approx(2300), pytest.approx(2 * sd_zk))
    half = T975_3 * sd_zk / 2
    assert c["zk_ci_lo"] == pytest.approx(1150 - half)
    assert c["zk_ci_hi"] == pytest.approx(1150 + half)
    assert c["ratio"] == pytest.approx(2.0)
    assert (c["ratio_ci_lo"], c["ratio_ci_hi"]) == (pytest.approx(1.6444, abs=1e-4),
                                                    pytest.approx(2.4325, abs=1e-4))
    assert c["p_welch"] < 0.01 and c["verdict"].startswith("DSBS faster")
    assert c["paper_ratio"] == pytest.approx(178361 / 83751)  # the paper's 8 B split production
    policy = row(analysis.comparison, cell_id="policy-32B-b20-none-cached", scenario="split",
                 role="production", metric="rps")
    assert policy["ratio"] == pytest.approx(1.25)
    assert math.isnan(policy["paper_ratio"])  # the paper has no policy sweep
    assert len(analysis.comparison) == 6 * 4 * 2  # cells x scenario*role x metrics


def test_aa_calibration_and_noise_floor(analysis: job.Analysis) -> None:
    aa = analysis.aa
    assert set(aa["arch"]) == {"zk", "dsbs"}
    prod = row(aa, arch="zk", cell_id="size_grid-8B-b20", scenario="split", role="production",
               metric="rps")
    assert prod["ratio"] == pytest.approx(1.02) and prod["p_welch"] > 0.5
    assert prod["verdict"].startswith("not significant")
    floor = analysis.noise.set_index("arch")
    expected = math.sqrt((math.log(1.02) ** 2 + math.log(0.98) ** 2) / 2)
    assert floor.loc["zk", "log_rms"] == pytest.approx(expected)
    assert floor.loc["dsbs", "cells"] == 24 and floor.loc["dsbs", "significant"] == 0


def test_latency_and_coordination_cost(analysis: job.Analysis) -> None:
    lat = row(analysis.latency, cell_id="size_grid-8B-b20", scenario="split",
              role="production", arch="zk")
    # p50 of a try = 1e6 x batch / rps (the fixture's model), rounded to 4 decimals in the file.
    p50 = [round(1e6 * 20 / r, 4) for r in (1000, 1100, 1200, 1300)]
    assert lat["lat_p50_us"] == pytest.approx(sum(p50) / 4)
    assert lat["lat_max_us"] == pytest.approx(1e6 * 20 / 1000 * 10)  # max of maxima: try 1
    assert math.isnan(lat["e2e_p50_us"])  # production rows have no end-to-end latency
    cost = analysis.coordination
    zk = row(cost, cell_id="size_grid-8B-b20", scenario="split", arch="zk")
    dsbs = row(cost, cell_id="size_grid-8B-b20", scenario="split", arch="dsbs")
    assert (zk["coord_messages_per_1k"], zk["service_cpu_s"], zk["broker_cpu_s"]) == (
        20.0, 0.25, 1.0)
    assert dsbs["coord_messages_per_1k"] == 2.0 and math.isnan(dsbs["service_cpu_s"])
    dist = analysis.latency_distribution
    curve = dist[(dist["cell_id"] == "size_grid-8B-b20") & (dist["arch"] == "zk")
                 & (dist["scenario"] == "split") & (dist["role"] == "production")]
    assert curve["count"].iloc[0] == 4 * 200  # four tries' histograms merged
    assert curve["value_us"].is_monotonic_increasing


def test_failed_rows_are_excluded(spark: SparkSession, tmp_path: Path) -> None:
    root = tmp_path / "runs"
    shutil.copytree(FIXTURES, root)
    zk = next(p for p in root.iterdir() if p.name.endswith("-zk-tiny-000001"))
    lines = (zk / "records.csv").read_text().splitlines()
    # Try 4 of 8 B split production lost data: status failed, rps absurdly high.
    for i, line in enumerate(lines):
        if "size_grid-8B-b20,size_grid,split,production,8,20,4," in line:
            lines[i] = line.replace(",1300,", ",999999,").rsplit(",", 1)[0] + ",failed"
    (zk / "records.csv").write_text("\n".join(lines) + "\n")
    a = job.compute(spark, [root])
    c = row(a.comparison, cell_id="size_grid-8B-b20", scenario="split", role="production",
            metric="rps")
    assert (c["zk_n"], c["zk_mean"], c["zk_failed_rows"]) == (3, pytest.approx(1100), 1)


def test_malformed_row_is_a_user_error(spark: SparkSession, tmp_path: Path) -> None:
    root = tmp_path / "runs"
    shutil.copytree(FIXTURES, root)
    run = sorted(root.iterdir())[0]
    with (run / "records.csv").open("a") as fh:
        fh.write("x,zk,,size_grid-8B-b20,size_grid,split,production,eight,20,1"
                 + ",0" * 17 + ",every_fetch,per_request,ok\n")
    with pytest.raises(UserError, match="malformed row"):
        job.compute(spark, [root])


def test_header_only_runs(spark: SparkSession, tmp_path: Path) -> None:
    root = tmp_path / "runs"
    shutil.copytree(FIXTURES, root)
    for run in root.iterdir():
        records = run / "records.csv"
        records.write_text(records.read_text().splitlines()[0] + "\n")
    with pytest.raises(UserError, match="hold no measurements"):
        job.compute(spark, [root])


def test_cli_reports_one_line_errors(spark: SparkSession, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert twinbench(["analyze", str(tmp_path), "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("twinbench: error: ") and "no run directories here" in err
    assert "\n" not in err


def test_cli_writes_report(spark: SparkSession, tmp_path: Path) -> None:
    out = tmp_path / "report"
    assert twinbench(["analyze", str(FIXTURES), "--out", str(out), "--no-figures"]) == 0
    report = (out / "report.md").read_text()
    for heading in ("## Summary", "## The DSBS paper's experiments",
                    "### The paper's appendix tables", "### ZooKeeper vs DSBS",
                    "### Latency percentiles", "### Coordination cost", "### A/A calibration",
                    "## Method"):
        assert heading in report
    assert "Fieller" in report and "low-powered" in report
    for name in ("comparison", "appendix_size_grid_zk", "appendix_batch_sweep_dsbs",
                 "latency", "coordination_cost", "aa_calibration", "noise_floor"):
        assert (out / f"{name}.csv").is_file()


def regression_run(root: Path, index: int, dsbs_factor: float = 1.0) -> Path:
    """One regression run (``make regress``'s shape) of the fixture cells: zk, zk@base, dsbs
    and dsbs@base sharing a start and a seed, with counters.csv and regression.json; try
    ``t``'s rps move by a few percent so the bands have a spread to measure; ``dsbs_factor``
    multiplies the head dsbs arm's rps in every cell."""
    for arm in ("zk", "zk@base", "dsbs", "dsbs@base"):
        def value(a_: str, lbl: str, cell: synth.Cell, s: str, r: str, t: int) -> float:
            wobble = 1 + 0.02 * ((t * 7 + len(a_)) % 3 - 1)
            factor = dsbs_factor if a_ == "dsbs" else 1.0
            return synth.fixture_value(a_.partition("@")[0], lbl, cell, s, r, t) * factor * wobble
        synth.write_run(root, arch=arm, label="", workload="tiny", index=index,
                        cells=synth.FIXTURE_CELLS, tries=4, value=value, latency_tries=0,
                        format_version=2, counters=True)
    (root / "regression.json").write_text(json.dumps(
        {"kind": "twinbench.regression", "version": 1, "workload": "tiny",
         "head": {"commit": "f" * 40}, "base": {"given": "HEAD~1", "commit": "e" * 40},
         "same_brokers": False, "pairs": [["zk", "zk@base"], ["dsbs", "dsbs@base"]]}))
    return root


def test_cli_checks_head_against_base_layer_by_layer(spark: SparkSession, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "report"
    same = regression_run(tmp_path / "same", 1)
    assert twinbench(["analyze", str(same), "--out", str(out), "--no-figures",
                      "--check-regression"]) == 0
    printed = capsys.readouterr().out
    assert "all layers within their bands" in printed
    for layer in ("exact:", "cost:", "throughput:"):
        assert layer in printed
    report = (out / "report.md").read_text()
    assert "## Regression: head against base" in report and "split/production" in report
    # The head's DSBS 1.5x faster everywhere: throughput fails for dsbs alone, counts do not.
    moved = regression_run(tmp_path / "moved", 2, dsbs_factor=1.5)
    assert twinbench(["analyze", str(moved), "--out", str(out), "--no-figures",
                      "--check-regression"]) == 1
    printed = capsys.readouterr().out
    assert "REGRESSION in throughput" in printed
    flagged = [line for line in printed.splitlines() if line.rstrip().endswith("REGRESSION")]
    assert flagged and all(line.split()[0] == "dsbs" for line in flagged)


# --- format 2: fault sessions -------------------------------------------------------------------


@pytest.fixture(scope="module")
def fault_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The format-1 fixtures plus a ZooKeeper and a DSBS run of a fault workload (format 2,
    synth.fault_fixture_value's numbers, three tries), whose records.csv rows have scenario
    `faults`."""
    root = tmp_path_factory.mktemp("fault-runs")
    shutil.copytree(FIXTURES, root, dirs_exist_ok=True)
    for arch, index in (("zk", 7), ("dsbs", 8)):
        synth.write_fault_run(root, arch=arch, index=index, tries=3, hour=20)
    return root


@pytest.fixture(scope="module")
def fault_analysis(spark: SparkSession, fault_runs: Path) -> job.Analysis:
    return job.compute(spark, [fault_runs])


def test_faults_scenario_leaks_into_no_paper_table(analysis: job.Analysis,
                                                   fault_analysis: job.Analysis) -> None:
    """Adding fault runs (records, coordination and latency rows of scenario `faults`) changes
    none of the paper's tables: not the appendix, the comparison (so not the regression,
    fig01-fig12 or paper-ratio-vs-policy), the A/A noise floor, latency, latency distribution
    (paper-latency-distribution) or coordination cost (paper-coordination-cost)."""
    before, after = analysis, fault_analysis
    assert len(after.runs) == 8 and after.input_rows == before.input_rows
    assert after.max_try == before.max_try
    for name in ("cell_stats", "tries", "comparison", "aa", "noise", "latency",
                 "latency_distribution", "coordination"):
        a, b = getattr(before, name), getattr(after, name)
        sort = [c for c in a.columns if a[c].dtype != float][:12]
        pd.testing.assert_frame_equal(a.sort_values(sort).reset_index(drop=True),
                                      b.sort_values(sort).reset_index(drop=True),
                                      check_dtype=False, obj=name)
    assert before.appendix.keys() == after.appendix.keys()
    for name, table in before.appendix.items():
        pd.testing.assert_frame_equal(table, after.appendix[name], obj=name)
    assert set(after.cell_stats["scenario"]) == {"split", "streaming"}
    assert "faults" not in set(after.comparison["workload"])


def test_fault_tables_by_hand(fault_analysis: job.Analysis) -> None:
    f = fault_analysis.faults
    assert len(f.sessions) == 3 * 3 + 3 * 2  # zk: three cases, dsbs: two (no stop-zookeeper)
    det = row(f.stats, case="kill-leader", arch="zk", metric="detection_s")
    half = 4.302652729749464 * 0.5 / math.sqrt(3)  # t(0.975, 2) x sd / sqrt(n): 1.0, 1.5, 2.0
    assert (det["n"], det["mean"], det["sd"]) == (3, pytest.approx(1.5), pytest.approx(0.5))
    assert (det["ci_lo"], det["ci_hi"]) == (pytest.approx(1.5 - half), pytest.approx(1.5 + half))
    gap = row(f.comparison, case="pause-broker", metric="produce_gap_s")
    # outage 3.0 s + detection: ZK 4.0, 4.5, 5.0; DSBS 5.0, 6.0, 7.0.
    assert (gap["zk_mean"], gap["dsbs_mean"]) == (pytest.approx(4.5), pytest.approx(6.0))
    assert gap["ratio"] == pytest.approx(6.0 / 4.5)
    zk_only = row(f.comparison, case="stop-zookeeper", metric="rejoin_s")
    assert (zk_only["zk_n"], zk_only["dsbs_sessions"]) == (3, 0)
    assert row(f.stats, case="stop-zookeeper", arch="zk", metric="detection_s")["n"] == 0
    out = row(f.outcomes, case="kill-leader", arch="dsbs")
    assert (out["sessions"], out["lost"], out["status"]) == (3, 0, "ok")
    assert out["hit_coordinator"] == 3 and out["acked"] == out["consumed"]
    # The timeline: 100 buckets of 0.1 s per session, policies joined from faults.csv.
    tl = f.timeline
    assert len(tl) == 15 * 100
    assert set(tl["offset_commit"]) == {"every_fetch"}
    ev = f.events
    assert len(ev) == 15 * 2 and set(ev["action"]) >= {"kill", "restart", "stop-zookeeper"}


def test_a_lost_record_fails_the_case_visibly(spark: SparkSession, tmp_path: Path) -> None:
    def value(arch: str, case: synth.FaultCase, try_: int) -> dict[str, float | int | None]:
        v = synth.fault_fixture_value(arch, case, try_)
        if arch == "dsbs" and case.name == "kill-leader" and try_ == 2:
            v["lost"] = 7
        return v

    for arch, index in (("zk", 1), ("dsbs", 2)):
        synth.write_fault_run(tmp_path / "runs", arch=arch, index=index, tries=2, value=value)
    out = tmp_path / "report"
    a = job.analyze([tmp_path / "runs"], out, spark=spark, figures=False)
    got = row(a.faults.outcomes, case="kill-leader", arch="dsbs")
    assert (got["failed_sessions"], got["lost"], got["status"]) == (1, 7, "failed")
    text = (out / "report.md").read_text()
    assert "**1 FAILED** (7 acknowledged records lost; kill-leader on dsbs)" in text
    assert ("| kill-leader | dsbs | 2 | 1 | 7 | 0 | 0 | 0 | 0/2 | 2/2 | **FAILED** (lost > 0) |"
            in text)


def test_faults_only_runs_analyze_and_draw(spark: SparkSession, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """Fault runs alone (no split/streaming rows at all) are a complete analysis: the paper's
    sections say they have no data, the Faults section and faults-<case> / faults-summary are
    there, and every figure redraws from the CSVs alone."""
    runs, out = tmp_path / "runs", tmp_path / "report"
    for arch, index in (("zk", 1), ("dsbs", 2)):
        synth.write_fault_run(runs, arch=arch, index=index, tries=2)
    assert twinbench(["analyze", str(runs), "--out", str(out)]) == 0
    assert "analyzed 2 runs (0 rows, 10 fault sessions)" in capsys.readouterr().out
    text = (out / "report.md").read_text()
    assert "## Faults" in text and "No cell was measured on both architectures" in text
    assert "| stop-zookeeper | rejoin | 0.5 ± 0 (2) | [0.5, 0.5] | n/a | n/a | - | - |" in text
    for name in ("fault_sessions", "fault_stats", "fault_outcomes", "fault_comparison",
                 "fault_timeline", "fault_events"):
        assert (out / f"{name}.csv").is_file()
    figs = sorted(p.name for p in out.glob("*.png")) + sorted(p.name for p in out.glob("*.svg"))
    assert sorted(figs) == sorted(f"{stem}.{ext}" for ext in ("png", "svg") for stem in (
        "faults-kill-leader", "faults-pause-broker", "faults-stop-zookeeper",
        "faults-summary"))
    assert "![faults-kill-leader](faults-kill-leader.png)" in text
    # The figures redraw from the CSVs alone, as the notebook's note promises.
    from spark_analysis import figures, studies

    again = figures.redraw(out, tmp_path / "redraw")
    assert sorted(p.name for p in again) == sorted(figs)
    assert list(figures.read_results(out)) == list(studies.STUDIES)


def _jobs(spark: SparkSession, root: Path, group: str) -> int:
    spark.sparkContext.setJobGroup(group, group)
    try:
        job.compute(spark, [root])
    finally:
        spark.sparkContext.setJobGroup("", "")
    return len(spark.sparkContext.statusTracker().getJobIdsForGroup(group))


def test_header_only_fault_files_cost_no_spark_job(spark: SparkSession, tmp_path: Path) -> None:
    """A format-2 run without faults (three header-only files) costs exactly the Spark jobs a
    format-1 run of the same measurements costs."""
    for version in (1, 2):
        for arch, index in (("zk", 1), ("dsbs", 2)):
            synth.write_run(tmp_path / f"v{version}", arch=arch, label="", workload="tiny",
                            index=index, cells=synth.FIXTURE_CELLS[:2], tries=2,
                            value=synth.fixture_value, format_version=version)
    v1 = _jobs(spark, tmp_path / "v1", "format-1")
    v2 = _jobs(spark, tmp_path / "v2", "format-2")
    assert v1 > 0 and v2 == v1
    a = job.compute(spark, [tmp_path / "v2"])
    assert a.faults.empty


def test_header_only_everything_is_still_an_error(spark: SparkSession, tmp_path: Path) -> None:
    run = synth.write_run(tmp_path, arch="zk", label="", workload="tiny", index=1,
                          cells=synth.FIXTURE_CELLS[:1], tries=1, value=synth.fixture_value,
                          format_version=2)
    records = run / "records.csv"
    records.write_text(records.read_text().splitlines()[0] + "\n")
    with pytest.raises(UserError, match="hold no measurements"):
        job.compute(spark, [tmp_path])


def test_format_2_and_3_records_read_together(spark: SparkSession, tmp_path: Path) -> None:
    """Format 3 added records.csv columns: older runs read beside it get them empty, and the
    paper's tables come out the same."""
    root = tmp_path / "runs"
    shutil.copytree(FIXTURES, root)
    synth.write_run(root, arch="zk", label="", workload="tiny", index=9,
                    cells=synth.FIXTURE_CELLS[:1], tries=1, value=synth.fixture_value,
                    format_version=3)
    run = next(p for p in root.iterdir() if p.name.endswith("-zk-tiny-000009"))
    lines = (run / "records.csv").read_text().splitlines()
    # An open-loop production row: target 1000/s, kept.
    assert lines[1].endswith(",ok,,,,,,,")
    lines[1] = lines[1][: -len(",,,,")] + ",1000.0,998.5,120.0,True"
    (run / "records.csv").write_text("\n".join(lines) + "\n")
    logs = loader.load_runs(spark, [root])
    df = logs.records.toPandas()
    new = df[df["run_id"] == run.name]
    old = df[df["run_id"] != run.name]
    assert len(new) == len(lines) - 1 and len(old) > 0
    assert old["behind"].isna().all() and old["target_rate"].isna().all()
    assert new["behind"].tolist().count(True) == 1
    assert new["target_rate"].dropna().tolist() == [1000.0]


def test_open_loop_cells_stay_out_of_the_paper_tables(spark: SparkSession, analysis: job.Analysis,
                                                      tmp_path: Path) -> None:
    root = tmp_path / "runs"
    shutil.copytree(FIXTURES, root)
    base = analysis.comparison  # the same fixtures, before the open-loop rows are added
    run = next(p for p in root.iterdir() if p.name.endswith("-zk-tiny-000001"))
    lines = (run / "records.csv").read_text().splitlines()
    # The same rows again as an open-loop cell: absurd rates that must not reach any table.
    extra = [line.replace("size_grid-8B-b20,", "size_grid-8B-b20-r5000,")
                 .replace(",1300,", ",999999,")
             for line in lines[1:] if "size_grid-8B-b20," in line]
    (run / "records.csv").write_text("\n".join([*lines, *extra]) + "\n")
    again = job.compute(spark, [root]).comparison
    assert not again["cell_id"].str.endswith("-r5000").any()
    pd.testing.assert_frame_equal(again.reset_index(drop=True), base.reset_index(drop=True))


def test_rtt_sweeps_get_their_section_model_and_figure(spark: SparkSession,
                                                       tmp_path: Path) -> None:
    """Format-6 round-trip-time runs that follow the model: the model predicts every point,
    the limit is ZK's round trips per record over DSBS's (2: one ZooKeeper request behind each
    data request), rtt-* is drawn (and redrawn from the CSVs), and no rtt cell reaches the
    paper's tables."""
    root = tmp_path / "runs"
    for arch, index in ((synth.ZK, 1), (synth.DSBS, 2)):
        synth.write_rtt_run(root, arch=arch, index=index)
    out = tmp_path / "report"
    analysis = job.analyze([root], out, spark=spark)
    cmp = analysis.rtt.comparison
    assert sorted(set(cmp["rtt_ms"])) == [0.0, 1.0, 10.0]
    assert set(cmp["role"]) == {"production", "consumption"}
    assert cmp["ratio_model"].to_numpy() == pytest.approx(cmp["ratio"].to_numpy(), rel=0.01)
    assert cmp["ratio_limit"].to_numpy() == pytest.approx(2.0)
    zero = row(cmp, rtt_ms=0.0, role="production")
    assert zero["ratio"] == pytest.approx(synth.RTT_WORK_S["zk"] / synth.RTT_WORK_S["dsbs"],
                                          rel=0.01)
    assert zero["n_baseline"] == zero["n_other"] == 2
    assert analysis.comparison.empty or not analysis.comparison["cell_id"].str.contains(
        "-rtt").any()
    assert (out / "rtt_comparison.csv").is_file()
    drawn = sorted(p.name for p in out.glob("rtt-*.png"))
    assert drawn
    from spark_analysis import figures

    again = figures.redraw(out, tmp_path / "redraw")
    assert sorted(p.name for p in again if p.suffix == ".png") == drawn
    report = (out / "report.md").read_text()
    assert "## Round-trip time" in report and "| split | production | 10 |" in report


def test_kafka_perf_rows_go_to_the_clients_section_alone(spark: SparkSession,
                                                         analysis: job.Analysis,
                                                         tmp_path: Path) -> None:
    """A side loaded by Kafka's perf tools (client kafka-perf, harness/driver/kafka_perf.py)
    on the same cells: none of the paper's tables moves, and the clients section sets the
    tools' records/s beside ours."""
    root = tmp_path / "runs"
    shutil.copytree(FIXTURES, root)
    base = analysis.comparison
    ours = next(p for p in root.iterdir() if p.name.endswith("-zk-tiny-000001"))
    tools = root / ours.name.replace("000001", "000901")
    shutil.copytree(ours, tools)
    for f in tools.iterdir():
        f.write_text(f.read_text().replace(ours.name, tools.name))
    manifest = json.loads((tools / "manifest.json").read_text())
    manifest["client"] = {"name": "kafka-perf", "release": "3.9.2"}
    (tools / "manifest.json").write_text(json.dumps(manifest))
    lines = (tools / "records.csv").read_text().splitlines()
    (tools / "records.csv").write_text("\n".join(
        [lines[0], *(line.replace(",1000,8,", ",2000,16,") for line in lines[1:])]) + "\n")
    again = job.compute(spark, [root])
    pd.testing.assert_frame_equal(again.comparison.reset_index(drop=True),
                                  base.reset_index(drop=True))
    compare = again.results["clients"].tables()["clients_compare"]
    r = row(compare, cell_id="size_grid-8B-b20", scenario="split", role="production",
            arch="zk", workload="tiny")
    mine = pd.read_csv(tools / "records.csv")
    mine = mine[(mine["cell_id"] == "size_grid-8B-b20") & (mine["scenario"] == "split")
                & (mine["role"] == "production")]
    assert r["tools_n"] == len(mine) and r["tools_mean"] == pytest.approx(mine["rps"].mean())
    assert r["ours_mean"] < r["tools_mean"]
    assert r["ratio"] == pytest.approx(r["tools_mean"] / r["ours_mean"])


def test_real_kafka_runs_get_their_own_section_beside_the_twins(spark: SparkSession,
                                                                tmp_path: Path) -> None:
    """A kafka-zk run on the same cells as the twins (a zk run relabelled, at half the
    records/s): the Real Kafka study compares the four architectures' cells, sets the zk twin
    beside Kafka on ZooKeeper and gives each one's coordination per 1,000 records."""
    root = tmp_path / "runs"
    shutil.copytree(FIXTURES, root)
    ours = next(p for p in root.iterdir() if p.name.endswith("-zk-tiny-000001"))
    kafka = root / ours.name.replace("-zk-", "-kafka-zk-").replace("000001", "000801")
    shutil.copytree(ours, kafka)
    for f in kafka.iterdir():
        f.write_text(f.read_text().replace(ours.name, kafka.name)
                     .replace(f"{kafka.name},zk,", f"{kafka.name},kafka-zk,"))
    manifest = json.loads((kafka / "manifest.json").read_text())
    manifest["arch"] = "kafka-zk"
    (kafka / "manifest.json").write_text(json.dumps(manifest))
    lines = (kafka / "records.csv").read_text().splitlines()
    (kafka / "records.csv").write_text("\n".join(
        [lines[0], *(line.replace(",1000,8,", ",500,4,") for line in lines[1:])]) + "\n")
    before = job.compute(spark, [FIXTURES])
    assert "kafka" not in before.results or before.results["kafka"].empty
    got = job.compute(spark, [root])
    tables = got.results["kafka"].tables()
    four = tables["kafka_four"]
    cell = four[(four["cell_id"] == "size_grid-8B-b20") & (four["scenario"] == "split")
                & (four["role"] == "production") & (four["workload"] == "tiny")]
    assert {"zk", "kafka-zk"} <= set(cell["arch"])
    fid = row(tables["kafka_fidelity"], cell_id="size_grid-8B-b20", scenario="split",
              role="production", workload="tiny")
    mine = pd.read_csv(kafka / "records.csv")
    mine = mine[(mine["cell_id"] == "size_grid-8B-b20") & (mine["scenario"] == "split")
                & (mine["role"] == "production")]
    assert fid["kafka_n"] == len(mine) and fid["kafka_rps"] == pytest.approx(mine["rps"].mean())
    assert fid["ratio"] == pytest.approx(fid["kafka_rps"] / fid["twin_rps"])
    coord = pd.read_csv(kafka / "coordination.csv")
    coord = coord[(coord["cell_id"] == "size_grid-8B-b20") & (coord["scenario"] == "split")]
    assert fid["kafka_coord_messages_per_1k"] == pytest.approx(
        coord["zk_requests"].sum() * 1000 / coord["messages"].sum())
    text = got.results["kafka"].section()
    assert "Kafka/twin" in text and "KRaft/ZK (Kafka)" in text


def test_topic_creation_and_failover_join_the_fidelity_table(spark: SparkSession,
                                                             tmp_path: Path) -> None:
    """Metadata and fault runs of the zk twin and Kafka on ZooKeeper (no rate cell at all):
    the Real Kafka study pairs their topic creation per size and their failover per case,
    each mean the mean of that architecture's sessions."""
    root = tmp_path / "runs"
    twin = synth.write_metadata_run(root, arch="zk", workload="km", index=1, tries=3,
                                    sizes=(1, 10))
    kafka = synth.write_metadata_run(root, arch="kafka-zk", workload="km", index=2, tries=3,
                                     sizes=(1, 10))
    synth.write_fault_run(root, arch="zk", workload="kf", index=3, tries=3, hour=10)
    synth.write_fault_run(root, arch="kafka-zk", workload="kf", index=4, tries=3, hour=10)
    got = job.compute(spark, [root])
    events = got.results["kafka"].tables()["kafka_fidelity_events"]
    r = row(events, source="metadata", case="topic-storm", size=10, measure="converge_s")
    mine, theirs = (pd.read_csv(d / "metadata.csv") for d in (twin, kafka))
    assert r["twin_n"] == 3 and r["twin_mean"] == pytest.approx(
        mine[mine["n"] == 10]["converge_s"].mean())
    assert r["kafka_mean"] == pytest.approx(theirs[theirs["n"] == 10]["converge_s"].mean())
    assert r["ratio"] == pytest.approx(r["kafka_mean"] / r["twin_mean"])
    leader = row(events, source="faults", case="kill-leader", measure="produce_gap_s")
    assert leader["twin_n"] == 3 and leader["kafka_n"] == 3
    assert "Fidelity in events" in got.results["kafka"].section()
