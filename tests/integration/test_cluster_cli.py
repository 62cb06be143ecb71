"""`twinbench cluster`: the exact stdout lines, a working cluster, and a clean stop by signal."""

from __future__ import annotations

import signal
import subprocess
import sys

import psutil
import pytest

from harness.cluster.kafka_probe import KafkaProbe
from harness.cluster.processes import ManagedProcess, pid_alive
from tests.support.clusters import ARCHITECTURES, single_node

pytestmark = pytest.mark.integration

CLUSTER_ARCHS = [a for a in ARCHITECTURES if not single_node(a)]


def descendants(pid: int) -> list[int]:
    try:
        return [p.pid for p in psutil.Process(pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


@pytest.mark.parametrize("arch", CLUSTER_ARCHS)
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_cluster_prints_its_addresses_serves_and_stops_everything(tmp_path, arch, sig):
    if arch == "zk":
        from harness.services.zookeeper import find_classpath, find_java

        if find_java() is None or find_classpath() is None:
            pytest.skip("no ZooKeeper jars or java on this machine (make setup installs them)")
    proc = ManagedProcess(
        [sys.executable, "-m", "harness.cli", "cluster", "--arch", arch, "--brokers", "3",
         "--data-dir", str(tmp_path / "data")],
        name="twinbench cluster", log_path=tmp_path / "cluster.log").start()
    try:
        lines = []
        if arch == "zk":
            lines.append(proc.wait_for_line("zookeeper=", 120))
        lines.append(proc.wait_for_line("bootstrap=", 120))
        addresses = lines[-1].split("=", 1)[1].split(",")
        assert len(addresses) == 3
        for address in addresses:
            host, _, port = address.rpartition(":")
            with KafkaProbe(host, int(port)) as probe:
                assert len(probe.metadata(None).brokers) == 3
        children = descendants(proc.pid)
        assert len(children) >= 3
        proc.signal(sig)
        assert proc.wait(timeout_s=60) == 0  # by itself, without stop()'s own SIGTERM
        proc.stop()
        assert not [pid for pid in children if pid_alive(pid)]
    finally:
        proc.kill()


def test_cluster_rejects_bad_arguments_in_one_line(tmp_path):
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    for args in (["--arch", "kraft-twin"], ["--arch", "zk", "--brokers", "0"],
                 ["--arch", "dsbs", "--option", "nope.nodes=3"],
                 ["--arch", "zk", "--option", "zookeeper.nodes=2"],
                 ["--arch", "zk", "--option", "zk.session_timeout_ms=soon"],
                 ["--arch", "zk", "--option", "zk_nodes=3"],
                 ["--arch", "local", "--brokers", "3"],
                 ["--arch", "zk", "--flush", "never"],
                 # Security and metrics settings, refused before anything starts.
                 ["--arch", "dsbs", "--security", "tls", "--security-protocol", "SASL_SSL"],
                 ["--arch", "dsbs", "--security-protocol", "SSL"],
                 ["--arch", "dsbs", "--security-protocol", "SASL_PLAINTEXT"],
                 ["--arch", "dsbs", "--security-protocol", "SASL_PLAINTEXT",
                  "--sasl-mechanisms", "GSSAPI", "--sasl-credentials-file", str(a_file)],
                 ["--arch", "dsbs", "--security", "bogus"],
                 ["--arch", "dsbs", "--metrics", "--report-dir", str(a_file / "report")]):
        done = subprocess.run([sys.executable, "-m", "harness.cli", "cluster", *args],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 2, args
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("twinbench: error:"), done.stderr
        assert done.stdout == "", args  # refused before anything started


def test_cluster_metrics_without_prometheus_warns_in_one_line_and_serves_on(tmp_path):
    """`--metrics` where no prometheus binary is on PATH: one warning line, no prometheus=,
    and the cluster still up, its brokers' endpoints serving and the dashboard written."""
    import json
    import os
    import urllib.request
    from pathlib import Path

    bare = tmp_path / "bin"  # a PATH without prometheus (the brokers run sys.executable)
    bare.mkdir()
    proc = ManagedProcess(
        [sys.executable, "-m", "harness.cli", "cluster", "--arch", "dsbs", "--brokers", "1",
         "--option", "dsbs.gossip_preset=local", "--data-dir", str(tmp_path / "data"),
         "--metrics",
         "--state", str(tmp_path / "state.json"), "--report-dir", str(tmp_path / "report")],
        name="twinbench cluster", log_path=tmp_path / "cluster.log",
        env={**os.environ, "PATH": str(bare)}).start()
    try:
        proc.wait_for_line("bootstrap=", 120)
        dashboard = Path(proc.wait_for_line("dashboard=", 30).split("=", 1)[1])
        state = Path(proc.wait_for_line("state=", 30).split("=", 1)[1])
        assert json.loads(dashboard.read_text())["panels"]
        (broker,) = json.loads(state.read_text())["brokers"]
        with urllib.request.urlopen(f"http://{broker['metrics']}/metrics", timeout=10) as r:
            assert b"twinbench_requests_in_flight" in r.read()
        assert proc.poll() is None
        proc.signal(signal.SIGTERM)
        assert proc.wait(timeout_s=60) == 0
    finally:
        proc.kill()
    log = (tmp_path / "cluster.log").read_text()
    assert "prometheus=" not in log
    warnings = [line for line in log.splitlines() if "prometheus" in line.lower()]
    assert len(warnings) == 1 and warnings[0].startswith("twinbench: warning: no prometheus")
