"""`twinbench run --arch local,zk` on the exactly-once smoke workload, one try, then `twinbench
analyze`: real brokers, a real ZooKeeper, confluent-kafka's transactional clients. Every cell
has its transactions.csv row, each read back exactly once, with the transaction protocol's
requests where (and only where) transactions ran; the report has the study's section and its
CSV a ratio per architecture and cell."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.studies.transactions import TRANSACTIONS_STUDY
from harness.workload import load_workload
from tests.integration.test_run_smoke import zookeeper_missing

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.zookeeper]


def rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def test_exactly_once_smoke_runs_and_is_analysed(tmp_path: Path) -> None:
    if reason := zookeeper_missing():
        pytest.skip(reason)
    out, report = tmp_path / "runs", tmp_path / "report"
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "run", "--arch", "local,zk", "--workload",
         "exactly-once-smoke", "--tries", "1", "--out", str(out), "--seed", "11"],
        capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, done.stderr
    loaded = load_workload("exactly-once-smoke").workload
    txn = loaded.study(TRANSACTIONS_STUDY)
    assert txn is not None
    cases = {c.name: c for c in txn.cases()}
    by_arch = {json.loads((r / "manifest.json").read_text())["arch"]: r for r in out.iterdir()}
    assert set(by_arch) == {"local", "zk"}
    for arch, run in by_arch.items():
        manifest = json.loads((run / "manifest.json").read_text())
        assert not manifest["incomplete"] and manifest["failed_cells"] == []
        assert manifest["tables"]["transactions"] == 1
        # Nothing of the paper's sessions: the study's rows and their counters only.
        assert rows(run / "records.csv") == [] and rows(run / "coordination.csv") == []
        got = rows(run / "transactions.csv")
        assert sorted(r["case"] for r in got) == sorted(cases)
        for r in got:
            case = cases[r["case"]]
            assert r["cell_id"] == f"{case.name}-32B-b20" and r["status"] == "ok", r
            assert (r["shape"], int(r["txn_batches"])) == (case.shape, case.batches), r
            assert r["transactional"] == str(case.transactional), r
            units = loaded.messages // (20 * case.batches)
            assert int(r["records"]) == int(r["read"]) == loaded.messages, r
            assert int(r["units"]) == units and float(r["rps"]) > 0, r
            assert int(r["missing"]) == int(r["duplicates"]) == 0, r
            if case.transactional:
                assert int(r["transactions"]) == units, r
                # One EndTxn per commit (more if retried); markers to the one broker after
                # each.
                assert int(r["end_txn"]) >= units and int(r["write_txn_markers"]) >= units, r
                assert float(r["commit_p50_ms"]) > 0, r
                # The coordinator stores ONGOING, PREPARE and COMPLETE per transaction: a
                # journal append each on the single node, a ZooKeeper write each on zk.
                cost = r["coordination_ops"] if arch == "local" else r["coord_messages"]
                assert int(cost) >= 2 * units, r
            else:
                assert int(r["transactions"]) == 0, r
                assert int(r["end_txn"]) == int(r["write_txn_markers"]) == 0, r
            if case.shape == "ctp" and not case.transactional:
                # The consumer's offsets, committed after every batch.
                assert int(r["offset_commits"]) == loaded.messages // 20, r
                assert int(r["offset_commit"]) >= int(r["offset_commits"]), r
            if case.shape == "ctp" and case.transactional:
                assert int(r["txn_offset_commit"]) >= units, r
        counted = {(c["cell_id"], c["counter"]) for c in rows(run / "counters.csv")}
        assert all((f"{c}-32B-b20", "coordination_ops") in counted for c in cases)

    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "analyze", str(out), "--out", str(report)],
        capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, done.stderr
    ratios = rows(report / "transactions_throughput.csv")
    assert sorted((r["arch"], r["shape"], int(r["txn_batches"])) for r in ratios) == sorted(
        (a, c.shape, c.batches) for a in ("local", "zk") for c in cases.values()
        if c.transactional)
    assert all(float(r["ratio"]) > 0 for r in ratios)
    text = (report / "report.md").read_text()
    assert "## Exactly-once" in text and "**single node**" in text and "**ZooKeeper**" in text
    # Unlabelled runs, every session ok: no note says sessions were left out.
    assert "exactly-once sessions" not in text, text
