"""`twinbench cluster` outlives its members and `twinbench fault` acts on it: real clusters,
real signals, real ZooKeeper, real network namespaces."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cluster import netns
from harness.cluster.kafka_probe import KafkaProbe
from harness.cluster.processes import ManagedProcess, pid_alive
from tests.support.ops import eventually

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def twinbench(*args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True,
                          text=True, timeout=timeout)


def one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("twinbench: error: "), done.stderr
    return lines[0]


class RunningCluster:
    """A `twinbench cluster` child process and its state file."""

    def __init__(self, tmp_path: Path, *args: str) -> None:
        self.state = tmp_path / "state.json"
        self.proc = ManagedProcess(
            [sys.executable, "-m", "harness.cli", "cluster", "--data-dir",
             str(tmp_path / "data"), "--state", str(self.state), *args],
            name="twinbench cluster", log_path=tmp_path / "cluster.log").start()
        self.proc.wait_for_line("state=", 180)
        self.doc = json.loads(self.state.read_text())

    def fault(self, *args: str) -> str:
        done = twinbench("fault", *args, "--state", str(self.state))
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    def broker(self, node: int) -> dict:
        return next(b for b in self.doc["brokers"] if b["node_id"] == node)

    def listed_by(self, node: int) -> set[int]:
        b = self.broker(node)
        with KafkaProbe(b["host"], b["port"], timeout_s=2) as p:
            return {x.node_id for x in p.metadata([]).brokers}

    def stop(self) -> None:
        pids = [b["pid"] for b in json.loads(self.state.read_text())["brokers"]]
        self.proc.signal(signal.SIGTERM)
        assert self.proc.wait(timeout_s=60) == 0
        self.proc.stop()
        assert not [p for p in pids if pid_alive(p)]


def needs_zookeeper() -> None:
    from harness.services.zookeeper import find_classpath, find_java

    if find_java() is None or find_classpath() is None:
        pytest.skip("no ZooKeeper jars or java on this machine (make setup installs them)")


def test_a_killed_broker_is_reported_the_rest_serve_and_faults_come_and_go(tmp_path):
    c = RunningCluster(tmp_path, "--arch", "dsbs", "--option", "dsbs.gossip_preset=local")
    try:
        assert c.fault("kill", "--broker", "1") == "killed=1"
        assert c.proc.wait_for_line("exited=", 30) == "exited=1 code=-9"
        # The others keep serving, and soon stop listing the dead broker.
        eventually(lambda: c.listed_by(0) == {0, 2} and c.listed_by(2) == {0, 2},
                   what="survivors drop broker 1")
        state = json.loads(c.state.read_text())
        assert [b["state"] for b in state["brokers"]] == ["running", "exited", "running"]
        assert c.fault("restart", "--broker", "1") == "restarted=1"
        eventually(lambda: c.listed_by(0) == {0, 1, 2}, what="broker 1 back")
        assert c.fault("pause", "--broker", "2") == "paused=2"
        eventually(lambda: 2 not in c.listed_by(0), what="paused broker 2 declared dead")
        assert c.fault("resume", "--broker", "2") == "resumed=2"
        eventually(lambda: c.listed_by(0) == {0, 1, 2}, what="broker 2 refutes its death")

        # Bad requests: one line each, and the cluster is unharmed.
        line = one_error_line(twinbench("fault", "kill", "--broker", "7", "--state",
                                        str(c.state)))
        assert "no broker 7" in line and "0, 1, 2" in line
        assert "not paused" in one_error_line(
            twinbench("fault", "resume", "--broker", "0", "--state", str(c.state)))
        assert "zk clusters only" in one_error_line(
            twinbench("fault", "stop-zookeeper", "--state", str(c.state)))
        assert "--network netns" in one_error_line(
            twinbench("fault", "partition", "--broker", "0", "--state", str(c.state)))
        assert c.listed_by(1) == {0, 1, 2}
    finally:
        c.stop()
    # The cluster is gone: the state file it named for others went with it, and the one in
    # its data directory is stale now.
    assert not c.state.exists()
    own = tmp_path / "data" / "cluster.json"
    assert "stale" in one_error_line(twinbench("fault", "kill", "--broker", "0", "--state",
                                               str(own)))


def test_fault_without_a_cluster_or_with_bad_arguments_says_so_in_one_line(tmp_path):
    assert "does not exist" in one_error_line(
        twinbench("fault", "kill", "--broker", "0", "--state", str(tmp_path / "none.json")))
    junk = tmp_path / "junk.json"
    junk.write_text("{not json")
    assert "cannot read" in one_error_line(
        twinbench("fault", "kill", "--broker", "0", "--state", str(junk)))
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"kind": "something else"}))
    assert "not a twinbench cluster" in one_error_line(
        twinbench("fault", "kill", "--broker", "0", "--state", str(other)))
    stale = tmp_path / "stale.json"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale.write_text(json.dumps({"kind": "twinbench.cluster", "pid": dead.pid, "brokers": []}))
    assert "stale" in one_error_line(
        twinbench("fault", "kill", "--broker", "0", "--state", str(stale)))
    assert twinbench("fault", "explode").returncode == 2
    assert "needs --broker" in one_error_line(twinbench("fault", "kill", "--state",
                                                        str(tmp_path / "none.json")))


def test_zookeeper_faults_on_a_three_node_ensemble(tmp_path):
    needs_zookeeper()
    c = RunningCluster(tmp_path, "--arch", "zk", "--option", "zookeeper.nodes=3",
                       "--option", "zk.session_timeout_ms=4000")
    try:
        assert c.fault("kill-zookeeper", "--server", "1") == "killed_zookeeper=1"
        # A quorum of two is left: the cluster still takes a broker's death and return.
        assert c.fault("kill", "--broker", "2") == "killed=2"
        eventually(lambda: c.listed_by(0) == {0, 1}, timeout_s=60, what="broker 2 expired")
        assert c.fault("restart", "--broker", "2") == "restarted=2"
        eventually(lambda: c.listed_by(0) == {0, 1, 2}, timeout_s=60, what="broker 2 back")
        assert c.fault("start-zookeeper", "--server", "1") == "started_zookeeper=1"
        assert c.fault("stop-zookeeper") == "stopped_zookeeper=all"
        # Without ZooKeeper the brokers keep answering from their caches.
        assert c.listed_by(1) == {0, 1, 2}
        assert c.fault("start-zookeeper") == "started_zookeeper=all"
        state = json.loads(c.state.read_text())
        assert state["services"]["zookeeper"]["running"] == [True, True, True]
        assert "no ZooKeeper server 5" in one_error_line(
            twinbench("fault", "kill-zookeeper", "--server", "5", "--state", str(c.state)))
    finally:
        c.stop()


@pytest.mark.parametrize("arch", ["zk", "dsbs"])
def test_a_partitioned_broker_is_cut_off_and_rejoins_after_heal(tmp_path, arch):
    reason = netns.available()
    if reason is not None:
        pytest.skip(reason)
    if arch == "zk":
        needs_zookeeper()
    extra = (["--option", "zk.session_timeout_ms=4000"] if arch == "zk"
             else ["--option", "dsbs.gossip_preset=local"])
    c = RunningCluster(tmp_path, "--arch", arch, "--network", "netns", *extra)
    namespaces = [b["namespace"] for b in c.doc["brokers"]]
    try:
        assert all(b["host"].startswith("198.1") for b in c.doc["brokers"])
        assert c.fault("partition", "--broker", "1") == "partitioned=1"
        eventually(lambda: c.listed_by(0) == {0, 2} and c.listed_by(2) == {0, 2},
                   timeout_s=60, what="survivors drop the partitioned broker")
        with pytest.raises(OSError):
            c.listed_by(1)  # clients cannot reach it either
        assert c.fault("heal", "--broker", "1") == "healed=1"
        eventually(lambda: c.listed_by(0) == {0, 1, 2} and c.listed_by(1) == {0, 1, 2},
                   timeout_s=60, what="the healed broker rejoins")
    finally:
        c.stop()
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert not [ns for ns in namespaces if ns in listed], "namespaces left behind"
    assert os.path.exists(tmp_path / "data")
