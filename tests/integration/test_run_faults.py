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

from harness.cluster import netns
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
    from harness.services.zookeeper import find_classpath, find_java

    if find_java() is None or find_classpath() is None:
        pytest.skip("no ZooKeeper jars or java on this machine (make setup installs them)")
    out = tmp_path_factory.mktemp("fault-runs")
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "run", "--arch", "zk,dsbs", "--workload",
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
        # Every acknowledged record is attributed to its partition, and the partitions add
        # up to the session's totals.
        parts = rows(run_dir / "fault_partitions.csv")
        for case, r in faults.items():
            mine = [p for p in parts if p["case"] == case]
            assert {int(p["partition"]) for p in mine} <= set(range(manifest["cluster"]
                                                                  ["partitions"])), mine
            for column in ("acked", "lost", "unreachable"):
                assert sum(int(p[column]) for p in mine) == int(r[column]), (arch, case, column)
        for case, r in faults.items():
            assert r["status"] == "ok", (arch, case, r)
            assert int(r["lost"]) == 0 and int(r["unreachable"]) == 0, (arch, case, r)
            # Every record acknowledged was consumed (duplicates may add to it).
            assert int(r["consumed"]) >= int(r["acked"]) > 0, (arch, case, r)
            assert float(r["rejoin_s"]) >= 0, (arch, case)
        kill = faults["kill-leader"]
        # A killed leader's partition is unavailable until it is back: at least the 7 s
        # between the kill and the restart, seen as a gap in acknowledgements there.
        assert float(kill["produce_gap_s"]) > 6.5, kill
        # Every survivor saw the broker gone before it came back (the schedule leaves room).
        assert kill["detection_s"] != "", (arch, "no survivor-wide detection", kill)
        assert 0 < float(kill["detection_s"]) < 7, (arch, kill)
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


# Replication factor 3 through the driver's fault path (workloads/faults-rf3.yaml's setting,
# one case, short): the leader of a partition cut off by a network partition while producers
# write at acks=-1 with min.insync.replicas 2. `make bench-faults-rf3` runs every case, 5 tries.
RF3_PARTITION = """\
name: faults-rf3-sample
brokers: 3
partitions: 3
producers: 3
consumers: 3
tries: 1
replication_factor: 3
acks: -1
min_insync_replicas: 2
policies:
  offset_commit: every_fetch
  metadata_check: per_request
options:
  dsbs: {gossip_preset: local}
  zk: {session_timeout_ms: 4000}
network: netns
faults:
  rate: 1500
  duration_s: 8
  drain_s: 30
  probe_ms: 50
  cases:
    - name: partition-leader
      schedule:
        - {at_s: 1, action: partition, broker: "leader:2"}
        - {at_s: 6, action: heal, broker: "leader:2"}
cells:
  - table: faults
    msg_sizes: [32]
    batches: [20]
"""


def test_a_partitioned_leader_at_replication_factor_3_loses_no_acknowledged_record(
        tmp_path: Path) -> None:
    """On both twins: the cut-off leader is replaced or fenced, and once healed every record
    acknowledged at acks=-1 is consumed (the stale leader's unacknowledged tail truncated)."""
    if (reason := netns.available()) is not None:
        pytest.skip(f"the case partitions a broker: {reason}")
    from harness.services.zookeeper import find_classpath, find_java

    if find_java() is None or find_classpath() is None:
        pytest.skip("no ZooKeeper jars or java on this machine (make setup installs them)")
    workload = tmp_path / "rf3.yaml"
    workload.write_text(RF3_PARTITION)
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "run", "--arch", "both", "--workload",
         str(workload), "--out", str(tmp_path / "runs"), "--quiet", "--seed", "11"],
        capture_output=True, text=True, timeout=280)
    assert done.returncode == 0, done.stderr
    runs = [Path(line) for line in done.stdout.split()]
    assert len(runs) == 3  # every compared architecture: zk, dsbs and raft
    for run_dir in runs:
        manifest = json.loads((run_dir / "manifest.json").read_text())
        assert manifest["workload"]["replication_factor"] == 3 and not manifest["incomplete"]
        (r,) = rows(run_dir / "faults.csv")
        what = (manifest["arch"], r)
        assert r["case"] == "partition-leader" and r["status"] == "ok", what
        assert int(r["acked"]) > 0 and int(r["lost"]) == 0 and int(r["unreachable"]) == 0, what
        assert int(r["consumed"]) >= int(r["acked"]), what
