"""`twinbench run` on a fault workload, both architectures interleaved: every fault is
injected, measured and undone, nothing acknowledged is lost, and the run log has the fault rows
(docs/result-format.md, format 2)."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness import netns
from harness.runlog import FORMAT_VERSION

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.zookeeper]


def rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def fault_runs(tmp_path_factory) -> dict[str, Path]:
    reason = netns.available()
    if reason is not None:
        pytest.skip(f"faults-smoke partitions a broker: {reason}")
    from harness.zookeeper import find_classpath, find_java

    if find_java() is None or find_classpath() is None:
        pytest.skip("no ZooKeeper jars or java on this machine (make setup installs them)")
    out = tmp_path_factory.mktemp("fault-runs")
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "run", "--arch", "both", "--workload",
         "faults-smoke", "--out", str(out), "--quiet", "--seed", "7"],
        capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    dirs = [Path(line) for line in done.stdout.split()]
    return {json.loads((d / "manifest.json").read_text())["arch"]: d for d in dirs}


def test_every_case_ran_on_its_architectures_without_loss(fault_runs):
    for arch, run_dir in fault_runs.items():
        manifest = json.loads((run_dir / "manifest.json").read_text())
        assert manifest["format_version"] == FORMAT_VERSION and not manifest["incomplete"]
        assert manifest["cluster"]["network"] == "netns"
        faults = {r["case"]: r for r in rows(run_dir / "faults.csv")}
        expected = {"kill-leader", "pause-broker", "partition-broker"}
        if arch == "zk":
            expected.add("stop-zookeeper")
        assert set(faults) == expected
        for case, r in faults.items():
            assert r["status"] == "ok", (arch, case, r)
            assert int(r["lost"]) == 0 and int(r["unreachable"]) == 0, (arch, case, r)
            # Every record acknowledged was consumed (duplicates may add to it).
            assert int(r["consumed"]) >= int(r["acked"]) > 0, (arch, case, r)
            assert float(r["rejoin_s"]) >= 0, (arch, case)
        kill = faults["kill-leader"]
        # A killed leader's partition is unavailable until it is back: at least the 4 s
        # between the kill and the restart, seen as a gap in acknowledgements there.
        assert float(kill["produce_gap_s"]) > 3.5, kill
        assert float(kill["detection_s"]) > 0, kill
        events = rows(run_dir / "fault_events.csv")
        assert events and all(e["result"] == "ok" for e in events), events
        kinds = {(e["case"], e["action"]) for e in events}
        assert ("kill-leader", "kill") in kinds and ("kill-leader", "restart") in kinds
        timeline = rows(run_dir / "timeline.csv")
        produced = sum(int(t["produced"]) for t in timeline if t["case"] == "kill-leader")
        assert produced == int(kill["acked"])


def test_zookeeper_outage_is_zk_only_and_its_brokers_come_back(fault_runs):
    zk = {r["case"]: r for r in rows(fault_runs["zk"] / "faults.csv")}["stop-zookeeper"]
    assert zk["target_role"] == "zookeeper" and zk["target_node"] == ""
    assert "stop-zookeeper" not in {r["case"] for r in rows(fault_runs["dsbs"] / "faults.csv")}
