"""`twinbench broker` as a process: start-up line, clean shutdown, crash recovery, CLI errors."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading

import pytest

from brokers.core.protocol.api import ApiKey
from brokers.core.protocol.messages.create_topics import CreatableTopic, CreateTopicsRequest
from brokers.core.protocol.messages.produce import (
    PartitionProduceData,
    ProduceRequest,
    TopicProduceData,
)
from harness.cluster.kafka_probe import KafkaProbe
from harness.cluster.processes import pid_alive
from tests.support.brokers import start_single_broker
from tests.support.ops import fetch_values
from tests.support.record_builder import build_batch

pytestmark = pytest.mark.integration


def create(client: KafkaProbe, topic: str) -> None:
    res = client.request(ApiKey.CREATE_TOPICS, 4, CreateTopicsRequest(
        topics=[CreatableTopic(name=topic, num_partitions=1, replication_factor=1)]))
    assert res.topics[0].error_code == 0


def produce(client: KafkaProbe, topic: str, batch: bytes) -> int:
    req = ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[TopicProduceData(
        name=topic, partition_data=[PartitionProduceData(index=0, records=batch)])])
    part = client.request(ApiKey.PRODUCE, 8, req).responses[0].partition_responses[0]
    assert part.error_code == 0
    return part.base_offset


def test_sigterm_flushes_and_exits_zero_and_data_survives_restart(tmp_path):
    data = tmp_path / "data"
    broker = start_single_broker(data, flush="interval_ms:60000")
    with KafkaProbe(broker.host, broker.port) as c:
        create(c, "kept")
        produce(c, "kept", build_batch([(None, b"one"), (None, b"two")]))
    assert broker.process.stop() == 0
    broker = start_single_broker(data)
    try:
        assert fetch_values(broker, "kept", 0) == [b"one", b"two"]
    finally:
        assert broker.process.stop() == 0


def test_sigkill_under_every_batch_keeps_every_acknowledged_record(tmp_path):
    """Acked means durable: kill -9 mid-stream, restart, find every acked record in order."""
    data = tmp_path / "data"
    broker = start_single_broker(data, flush="every_batch")
    acked: list[bytes] = []
    stop = threading.Event()
    errors: list[BaseException] = []

    def hammer() -> None:
        try:
            with KafkaProbe(broker.host, broker.port) as c:
                i = 0
                while not stop.is_set():
                    values = [f"r{i}-{j}".encode() for j in range(10)]
                    produce(c, "crash", build_batch([(None, v) for v in values]))
                    acked.extend(values)  # only after the ack arrived
                    i += 1
        except (ConnectionError, OSError, AssertionError) as exc:
            if not stop.is_set():
                errors.append(exc)

    with KafkaProbe(broker.host, broker.port) as c:
        create(c, "crash")
    thread = threading.Thread(target=hammer)
    thread.start()
    try:
        while len(acked) < 2000 and thread.is_alive():
            thread.join(0.05)
        stop.set()
        broker.process.kill()  # SIGKILL while the producer is mid-request
    finally:
        stop.set()
        thread.join(10)
    assert not errors, errors
    assert len(acked) >= 2000
    snapshot = list(acked)
    broker = start_single_broker(data, flush="every_batch")
    try:
        stored = fetch_values(broker, "crash", 0)
    finally:
        broker.process.stop()
    # Everything acked is there, in order; at most the one unacknowledged in-flight batch more.
    assert stored[: len(snapshot)] == snapshot
    assert len(stored) - len(snapshot) in (0, 10)
    assert stored == [f"r{i // 10}-{i % 10}".encode() for i in range(len(stored))]


def test_broker_survives_sigint_as_a_clean_stop(tmp_path):
    broker = start_single_broker(tmp_path / "data")
    pid = broker.process.pid
    broker.process.signal(signal.SIGINT)
    # Wait for it to exit by itself: a SIGTERM from stop() racing the shutdown would end a
    # process whose signal handlers are already gone, and hide what SIGINT alone did.
    assert broker.process.wait(timeout_s=30) == 0
    broker.process.stop()
    assert not pid_alive(pid)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["broker", "--data-dir", "/tmp/x", "--listen", "nonsense"], "HOST:PORT"),
        (["broker", "--data-dir", "/tmp/x", "--listen", "127.0.0.1:99999"], "HOST:PORT"),
        (["broker", "--data-dir", "/tmp/x", "--flush", "sometimes"], "flush policy"),
        (["broker"], "--data-dir"),
        (["frobnicate"], "invalid choice"),
        (["broker", "--data-dir", "/proc/forbidden/x"], "data directory"),
    ],
)
def test_bad_cli_arguments_print_one_line_and_exit_2(args, needle):
    proc = subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("twinbench: error:"), proc.stderr
    assert needle in lines[0]
    assert "Traceback" not in proc.stderr


def test_port_in_use_is_one_clear_line(tmp_path):
    first = start_single_broker(tmp_path / "a")
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "harness.cli", "broker", "--listen",
             f"127.0.0.1:{first.port}", "--data-dir", str(tmp_path / "b")],
            capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2
        assert "Traceback" not in proc.stderr
        assert proc.stderr.strip().splitlines()[-1].startswith("twinbench: error:")
    finally:
        first.process.stop()
