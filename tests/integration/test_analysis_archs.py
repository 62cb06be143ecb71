"""A third architecture through the whole analysis: runs of zk, dsbs and "kraft" (synthetic,
format 2, labels in the manifests as the harness writes them) give every table, figure and
report section a KRaft side and a KRaft/ZK comparison beside DSBS/ZK, with no change to
spark_analysis; the paper's numbers stay beside its own pair only."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
from pyspark.sql import SparkSession

from brokers.core.errors import UserError
from spark_analysis import figures, job, regress, synth
from spark_analysis.session import SPARK_PANDAS_WARNINGS

pytestmark = [pytest.mark.integration,
              *(pytest.mark.filterwarnings(f"ignore:{m}") for m in SPARK_PANDAS_WARNINGS)]

KRAFT = {"display_name": "KRaft", "short_name": "KRaft", "color": "#55A868", "order": 2,
         "baseline": False, "cost_column": "coordination_ops", "cost_label": "Raft messages"}


def value(arch: str, label: str, cell: synth.Cell, scenario: str, role: str, try_: int) -> float:
    """The fixtures' numbers for zk and dsbs; KRaft at 1.5x ZK."""
    if arch == "kraft":
        return 1.5 * synth.fixture_value(synth.ZK, label, cell, scenario, role, try_)
    return synth.fixture_value(arch, label, cell, scenario, role, try_)


def with_kraft_labels(run: Path) -> Path:
    path = run / "manifest.json"
    m = json.loads(path.read_text())
    m["architectures"] = {"kraft": KRAFT}
    path.write_text(json.dumps(m))
    return run


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("runs")
    for i, arch in enumerate((synth.ZK, synth.DSBS, "kraft"), 1):
        run = synth.write_run(root, arch=arch, label="", workload="three", index=i,
                              cells=synth.FIXTURE_CELLS, tries=3, value=value, hour=9 + i,
                              format_version=2, labels=True)
        fault = synth.write_fault_run(root, arch=arch, index=10 + i, tries=2, labels=True)
        if arch == "kraft":
            with_kraft_labels(run)
            with_kraft_labels(fault)
    return root


@pytest.fixture(scope="module")
def analysis(spark: SparkSession, runs: Path, tmp_path_factory: pytest.TempPathFactory
             ) -> tuple[job.Analysis, Path]:
    out = tmp_path_factory.mktemp("report")
    return job.analyze([runs], out, spark=spark), out


def test_the_architectures_come_from_the_manifests(analysis: tuple[job.Analysis, Path]
                                                   ) -> None:
    a, _ = analysis
    assert a.archs.names == ("zk", "dsbs", "kraft")
    assert a.archs.baseline.name == "zk"
    assert {"size_grid_kraft", "batch_sweep_kraft", "size_grid_zk"} <= set(a.appendix)


def test_each_other_architecture_is_compared_with_the_baseline(
        analysis: tuple[job.Analysis, Path]) -> None:
    cmp = analysis[0].comparison
    split = cmp[(cmp["cell_id"] == "size_grid-8B-b20") & (cmp["scenario"] == "split")
                & (cmp["role"] == "production") & (cmp["metric"] == "rps")]
    assert len(split) == 2
    dsbs = split[split["dsbs_n"].notna()].iloc[0]
    kraft = split[split["kraft_n"].notna()].iloc[0]
    assert math.isnan(dsbs["kraft_mean"]) and math.isnan(kraft["dsbs_mean"])
    assert dsbs["ratio"] == pytest.approx(2.0) and kraft["ratio"] == pytest.approx(1.5)
    assert kraft["zk_mean"] == dsbs["zk_mean"] == pytest.approx(1100.0)
    assert kraft["verdict"].startswith("KRaft faster")
    # The paper's numbers belong to its own pair.
    assert pd.notna(dsbs["paper_ratio"]) and pd.isna(kraft["paper_ratio"])


def test_coordination_cost_and_faults_have_a_kraft_side(analysis: tuple[job.Analysis, Path]
                                                        ) -> None:
    a, _ = analysis
    assert set(a.coordination["arch"]) == {"zk", "dsbs", "kraft"}
    kraft = a.coordination[a.coordination["arch"] == "kraft"]
    assert kraft["coord_ops_per_1k"].notna().all()
    f = a.faults
    assert list(dict.fromkeys(f.outcomes["arch"])) == ["zk", "dsbs", "kraft"]
    kill = f.comparison[(f.comparison["case"] == "kill-leader")
                        & (f.comparison["metric"] == "detection_s")]
    assert len(kill) == 2  # DSBS/ZK and KRaft/ZK
    kraft_row = kill[kill["kraft_sessions"].notna()].iloc[0]
    assert kraft_row["ratio"] == pytest.approx(1.0)  # the fixture's KRaft detects as ZK does
    stop = f.comparison[(f.comparison["case"] == "stop-zookeeper")
                        & (f.comparison["metric"] == "rejoin_s")]
    assert set(stop["zk_n"]) == {2} and stop["ratio"].isna().all()


def test_figures_and_report_show_it(analysis: tuple[job.Analysis, Path]) -> None:
    a, out = analysis
    assert (out / "paper-ratio-vs-policy-dsbs.png").is_file()
    assert (out / "paper-ratio-vs-policy-kraft.png").is_file()
    assert not (out / "paper-ratio-vs-policy.png").exists()
    assert (out / "paper-coordination-cost.png").is_file()
    assert (out / "faults-kill-leader.png").is_file()
    text = (out / "report.md").read_text()
    assert text.startswith("# twinbench analysis: ZooKeeper vs DSBS vs KRaft")
    assert "| KRaft/ZK |" in text and "| DSBS/ZK |" in text
    assert "KRaft rps mean ± sd (n)" in text and "KRaft mean ± sd (n)" in text
    # Redrawn from the CSVs alone, with the same labels.
    assert figures.read_archs(out) == a.archs


def test_a_reference_other_than_zk_is_every_ratio_s_denominator(spark: SparkSession,
                                                                 runs: Path) -> None:
    """`twinbench analyze --reference kraft`: the same tables with KRaft as the reference."""
    a = job.compute(spark, [runs], reference="kraft")
    assert a.archs.baseline.name == "kraft"
    cmp = a.comparison
    split = cmp[(cmp["cell_id"] == "size_grid-8B-b20") & (cmp["scenario"] == "split")
                & (cmp["role"] == "production") & (cmp["metric"] == "rps")]
    by_other = {("zk" if pd.notna(r["zk_n"]) else "dsbs"): r["ratio"]
                for _, r in split.iterrows()}
    # The fixture: dsbs at 2x ZK, KRaft at 1.5x ZK.
    assert by_other == pytest.approx({"zk": 1 / 1.5, "dsbs": 2 / 1.5})
    assert split["kraft_mean"].notna().all() and split["paper_ratio"].isna().all()


def test_architectures_side_by_side_are_not_a_regression_run(runs: Path) -> None:
    # A regression compares each architecture with itself built from the base.
    with pytest.raises(UserError, match="no architecture ran as both head and base"):
        regress.read_runs([runs])
