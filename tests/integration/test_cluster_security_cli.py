"""`twinbench cluster --security sasl_ssl --metrics` as a user runs it: the client_config= file
it prints works as it is with kcat (librdkafka) and confluent-kafka, a client without it is
refused, Prometheus answers at prometheus=, and the throwaway material is gone after stop."""

from __future__ import annotations

import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from harness.processes import ManagedProcess

pytestmark = [pytest.mark.integration, pytest.mark.interop]


def _properties(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)


def test_secured_monitored_cluster_from_the_command_line(tmp_path: Path) -> None:
    ck = pytest.importorskip("confluent_kafka")
    metrics = shutil.which("prometheus") is not None
    argv = [sys.executable, "-m", "harness.cli", "cluster", "--arch", "dsbs", "--brokers", "2",
            "--gossip-preset", "local", "--data-dir", str(tmp_path / "cluster"),
            "--state", str(tmp_path / "state.json"), "--security", "sasl_ssl",
            *(["--metrics"] if metrics else [])]
    proc = ManagedProcess(argv, name="twinbench cluster", log_path=tmp_path / "cli.log").start()
    try:
        bootstrap = proc.wait_for_line("bootstrap=", 120).split("=", 1)[1]
        config = Path(proc.wait_for_line("client_config=", 30).split("=", 1)[1])
        props = _properties(config)
        assert props["security.protocol"] == "SASL_SSL"
        assert props["sasl.mechanism"] == "SCRAM-SHA-512"
        assert config.stat().st_mode & 0o077 == 0  # it holds a password
        if metrics:
            assert proc.wait_for_line("prometheus=", 60)
            assert Path(proc.wait_for_line("dashboard=", 30).split("=", 1)[1]).exists()
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
