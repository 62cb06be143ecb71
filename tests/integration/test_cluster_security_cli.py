"""`twinbench cluster --security sasl_ssl|tls --metrics` as a user runs it, on each twin: the
client_config= file it prints works as it is with kcat (librdkafka) and confluent-kafka, a
client without it is refused, Prometheus at prometheus= scrapes every broker, and the
throwaway material is gone after stop."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

import pytest

from harness.cluster.processes import ManagedProcess
from tests.support.ops import eventually

pytestmark = [pytest.mark.integration, pytest.mark.interop]


def _brokers_up(prometheus: str) -> float:
    query = urllib.parse.urlencode({"query": "sum(up)"})
    with urllib.request.urlopen(f"http://{prometheus}/api/v1/query?{query}", timeout=5) as r:
        result = json.loads(r.read())["data"]["result"]
    return float(result[0]["value"][1]) if result else 0.0


def _properties(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)


@pytest.mark.parametrize(("arch", "security"), [("dsbs", "sasl_ssl"), ("zk", "tls")])
def test_secured_monitored_cluster_from_the_command_line(tmp_path: Path, arch: str,
                                                         security: str) -> None:
    ck = pytest.importorskip("confluent_kafka")
    if arch == "zk":
        from harness.services.zookeeper import find_classpath, find_java

        if find_java() is None or find_classpath() is None:
            pytest.skip("no ZooKeeper jars or java on this machine (make setup installs them)")
    metrics = shutil.which("prometheus") is not None
    argv = [sys.executable, "-m", "harness.cli", "cluster", "--arch", arch, "--brokers", "2",
            "--option", "dsbs.gossip_preset=local", "--data-dir", str(tmp_path / "cluster"),
            "--state", str(tmp_path / "state.json"), "--security", security,
            *(["--metrics", "--report-dir", str(tmp_path / "report")] if metrics else [])]
    proc = ManagedProcess(argv, name="twinbench cluster", log_path=tmp_path / "cli.log").start()
    try:
        bootstrap = proc.wait_for_line("bootstrap=", 120).split("=", 1)[1]
        config = Path(proc.wait_for_line("client_config=", 30).split("=", 1)[1])
        props = _properties(config)
        if security == "sasl_ssl":
            assert props["security.protocol"] == "SASL_SSL"
            assert props["sasl.mechanism"] == "SCRAM-SHA-512"
        else:
            assert props["security.protocol"] == "SSL"
            assert not [k for k in props if k.startswith("sasl.")]
        assert config.stat().st_mode & 0o077 == 0  # it may hold a password
        if metrics:
            prometheus = proc.wait_for_line("prometheus=", 60).split("=", 1)[1]
            eventually(lambda: _brokers_up(prometheus) == 2, 30, "both brokers scraped")
            dashboard = Path(proc.wait_for_line("dashboard=", 30).split("=", 1)[1])
            assert dashboard == tmp_path / "report" / f"grafana-dashboard-{arch}.json"
        topic = f"cli-{uuid.uuid4().hex[:8]}"
        producer = ck.Producer({"bootstrap.servers": bootstrap, **props})
        for i in range(10):
            producer.produce(topic, f"r{i}".encode())
        assert producer.flush(30) == 0
        kcat = shutil.which("kcat")
        if kcat is not None:
            done = subprocess.run([kcat, "-b", bootstrap, "-F", str(config), "-C", "-t", topic,
                                   "-o", "beginning", "-c", "10", "-e", "-q"],
                                  capture_output=True, text=True, timeout=60)
            assert done.returncode == 0, done.stderr[-2000:]
            assert done.stdout.split() == [f"r{i}" for i in range(10)]
        # Without the properties: a plaintext client gets nowhere.
        reports: list = []
        refused = ck.Producer({"bootstrap.servers": bootstrap, "message.timeout.ms": 3000})
        refused.produce(topic, b"x", on_delivery=lambda err, _msg: reports.append(err))
        refused.flush(10)
        assert len(reports) == 1 and reports[0] is not None  # never delivered
        security_dir = Path(props["ssl.ca.location"]).parent
        assert security_dir.exists()
    finally:
        proc.stop()
    assert not security_dir.exists(), "throwaway certificates and users were left behind"
    if metrics:  # the report directory's dashboard outlives the cluster
        rows = [p for p in json.loads(dashboard.read_text())["panels"] if p["type"] == "row"]
        assert [r["title"] for r in rows] == [arch]
