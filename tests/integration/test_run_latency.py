"""`twinbench run --arch zk,dsbs,raft` on the latency smoke workload, then `twinbench analyze` on
it: each of the three twins' maximum sustainable rate searched step by step on real processes,
sessions at fractions of it, their per-second series, and the report's latency section."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import twinbench_common.runlog as fmt
from harness.cli import main as analyze_cli
from harness.studies.latency import LATENCY_STUDY
from harness.studies.latency.search import RateSearcher
from harness.studies.latency.steps import VERDICTS, search_config
from harness.workload import load_workload
from tests.integration.test_run_smoke import zookeeper_missing
from tests.support.cli import twinbench

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_latency_smoke_searches_then_runs_fractions_and_is_analysed(
        tmp_path: Path, spark: SparkSession) -> None:
    if reason := zookeeper_missing():
        pytest.skip(reason)
    out = tmp_path / "runs"
    done = twinbench("run", "--arch", "zk,dsbs,raft", "--workload", "latency-smoke", "--out",
                     str(out), "--seed", "11", timeout=600)
    assert done.returncode == 0, done.stderr
    wl = load_workload("latency-smoke").workload
    latency = wl.study(LATENCY_STUDY)
    assert latency is not None and wl.duration_s is not None
    runs = sorted(out.iterdir())
    by_arch = {json.loads((r / "manifest.json").read_text())["arch"]: r for r in runs}
    assert set(by_arch) == {"zk", "dsbs", "raft"}
    for run in runs:
        steps = _rows(run / "rate_search.csv")
        assert list(steps[0]) == list(fmt.RATE_SEARCH.names())
        assert {s["verdict"] for s in steps} <= set(VERDICTS)
        # The search's ceiling is the load client's own on this machine (measured by this run
        # or kept from an earlier one), recorded in the manifest and beside the result.
        ceiling = json.loads((run / "manifest.json").read_text())["client_ceiling"]
        assert ceiling["source"] in {"measured", "cached"} and ceiling["rps"] > 0
        assert set(ceiling["fingerprint"]) == {"cpu_model", "cpus", "python", "client_code"}
        # Replaying the verdicts through the search gives back exactly the rates tried: the
        # driver followed the search, step by step.
        searcher = RateSearcher(search_config(latency.search, ceiling["rps"]))
        for s in steps:
            assert float(s["rate"]) == pytest.approx(searcher.next_rate(), rel=1e-6)
            searcher.record(s["verdict"] == "kept")
        assert searcher.next_rate() is None
        found = searcher.result()
        (best,) = _rows(run / "max_rate.csv")
        assert float(best["kept_rate"]) == pytest.approx(found.kept, rel=1e-6)
        assert int(best["steps"]) == len(steps)
        assert float(best["ceiling"]) == pytest.approx(ceiling["rps"], rel=1e-6)
        # A rate failed (below), so the maximum is the brokers', not the client's.
        assert best["client_bound"] == "False"
        # Far below what any twin sustains on any machine: the first step is kept.
        assert steps[0]["verdict"] == "kept", steps[0]
        # It ramped until a rate failed, then bisected: some rate is off the ramp.
        plan = latency.search
        ramp = {plan.start * plan.factor ** k for k in range(len(steps))}
        assert any(float(s["rate"]) not in ramp for s in steps), steps
        records = _rows(run / "records.csv")
        series = _rows(run / "series.csv")
        assert list(series[0]) == list(fmt.SERIES.names())
        for fraction in latency.fractions:
            cell = f"latency-32B-b20-f{fraction * 100:g}"
            mine = [r for r in records if r["cell_id"] == cell]
            assert {r["role"] for r in mine} == {"production", "consumption"}
            for r in mine:
                assert float(r["target_rate"]) == pytest.approx(fraction * found.kept,
                                                                rel=1e-3)
            buckets = [b for b in series if b["cell_id"] == cell]
            assert [float(b["t_s"]) for b in buckets] == [float(i)
                                                          for i in range(len(buckets))]
            assert len(buckets) >= wl.duration_s
            cons = next(r for r in mine if r["role"] == "consumption")
            assert cons["lost"] == "0", cons
            # Every record consumed has its end-to-end latency in the series, warm-up too.
            consumed = sum(int(b["consumed"]) for b in buckets)
            assert sum(int(b["e2e_records"]) for b in buckets) == consumed
            assert consumed >= int(cons["records"])
            assert all(int(b["backlog"]) >= 0 for b in buckets)
            assert [b["warmup"] for b in buckets][:1] == ["True"]
    report = tmp_path / "report"
    # In this process, on the run's Spark session (tests/integration/conftest.py): the same
    # command line without starting another JVM.
    assert analyze_cli(["analyze", *map(str, runs), "--out", str(report)]) == 0
    maxima = {m["arch"]: m for m in _rows(report / "max_rates.csv")}
    assert set(maxima) == {"zk", "dsbs", "raft"}
    curves = _rows(report / "latency_curves.csv")
    assert len(curves) == len(maxima) * len(latency.fractions)
    for arch, m in maxima.items():
        # Each maximum is the one its run found, its ratio to ZooKeeper's (the baseline).
        (best,) = _rows(by_arch[arch] / "max_rate.csv")
        assert float(m["mean"]) == pytest.approx(float(best["kept_rate"]))
        assert float(m["ratio"]) == pytest.approx(
            float(m["mean"]) / float(maxima["zk"]["mean"])), m
        # A curve per twin, at the fractions of its own maximum.
        targets = sorted(float(c["target_rate"]) for c in curves if c["arch"] == arch)
        assert targets == pytest.approx(
            sorted(f * float(m["mean"]) for f in latency.fractions), rel=1e-3)
    text = (report / "report.md").read_text()
    assert "**Maximum sustainable rate**" in text and "**Latency at each rate**" in text
    assert list(report.glob("latency-*.png"))
    # Open-loop cells stay out of the paper's tables.
    assert "latency-32B-b20-f" not in (report / "comparison.csv").read_text()
