"""`twinbench run --arch zk,dsbs,raft` on the metadata smoke workload: every case at every size
on fresh clusters of the three twins, real processes; metadata.csv has one row per session with the
convergence, coordination messages, memory and idle traffic (docs/result-format.md, format 5),
and nothing goes to the data path's files."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness import runlog
from harness.studies.metadata import METADATA_STUDY
from harness.workload import load_workload
from tests.integration.test_run_smoke import zookeeper_missing

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.zookeeper]


def rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def test_metadata_smoke_measures_every_case_on_the_three_twins(tmp_path: Path) -> None:
    if reason := zookeeper_missing():
        pytest.skip(reason)
    out = tmp_path / "runs"
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "run", "--arch", "zk,dsbs,raft", "--workload",
         "metadata-smoke", "--out", str(out), "--seed", "7"],
        capture_output=True, text=True, timeout=280, check=False)
    assert done.returncode == 0, done.stderr
    md = load_workload("metadata-smoke").workload.study(METADATA_STUDY)
    assert md is not None
    cells = {f"{c.name}-n{n}": (c, n) for c in md.cases for n in c.sizes}
    runs = sorted(out.iterdir())
    by_arch = {json.loads((r / "manifest.json").read_text())["arch"]: r for r in runs}
    assert set(by_arch) == {"zk", "dsbs", "raft"}
    for arch, run in by_arch.items():
        manifest = json.loads((run / "manifest.json").read_text())
        assert manifest["format_version"] == runlog.FORMAT_VERSION
        assert not manifest["incomplete"]
        # No records, no data-path coordination rows: only metadata and counters.
        assert rows(run / "records.csv") == [] and rows(run / "coordination.csv") == []
        got = rows(run / "metadata.csv")
        assert sorted(r["cell_id"] for r in got) == sorted(cells)
        for r in got:
            case, n = cells[r["cell_id"]]
            assert r["status"] == "ok" and r["kind"] == case.kind and int(r["n"]) == n, r
            assert 0 < float(r["converge_s"]) < md.timeout_s, r
            # Every change takes coordination messages on either design.
            assert int(r["coordination_ops"]) > 0 and int(r["coord_messages"]) > 0, r
            if arch == "raft":  # both count the transport messages the brokers sent
                assert int(r["coord_messages"]) == int(r["coordination_ops"]), r
            if arch != "zk":  # no service process beside the brokers: no service CPU
                assert r["service_cpu_s"] == "", r
            assert int(r["rss_total_bytes"]) >= int(r["rss_max_bytes"]) > 1_000_000, r
            assert float(r["idle_s"]) >= md.idle_s, r
            if case.kind in ("topic-storm", "partition-scale"):
                assert int(r["topics"]) == case.topics(n)
                assert int(r["topics"]) * int(r["partitions"]) == case.total_partitions(n)
                # (Every broker may list the change before the last answer to its creation
                # arrives: the two race.)
                assert 0 < float(r["create_s"]) < md.timeout_s, r
                assert float(r["metadata_p50_ms"]) > 0, r
            elif case.kind == "group-churn":
                assert int(r["partitions"]) == case.partitions
                # One member has no half to leave; four do.
                assert (r["leave_s"] == "") == (n == 1), r
                assert float(r["commit_p50_ms"]) > 0 and r["commit_ops"] != "", r
                if arch == "zk":  # an offset znode per partition, written per commit
                    assert float(r["commit_ops"]) >= case.partitions, r
                if arch == "raft":  # one log entry per commit, appended to the two other
                    # voters, each of which answers: at least four messages, any partitions
                    assert float(r["commit_ops"]) >= 4, r
            else:
                assert case.kind == "broker-join" and int(r["brokers"]) == n + 1, r
                # The join is timed from the launch: its start-up is part of it.
                assert 0 < float(r["create_s"]) <= float(r["converge_s"]), r
                assert 0 < float(r["leave_s"]) < md.timeout_s, r
        # The counters behind the row are in counters.csv, per session.
        counted = {(c["cell_id"], c["counter"]) for c in rows(run / "counters.csv")}
        assert all((cell, "coordination_ops") in counted for cell in cells)
    # More topics take more coordination messages (the smoke's sizes differ five-fold).
    for run in by_arch.values():
        storm = {r["n"]: int(r["coordination_ops"]) for r in rows(run / "metadata.csv")
                 if r["kind"] == "topic-storm"}
        assert storm["5"] > storm["1"], storm
