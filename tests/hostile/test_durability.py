"""Durability against real broker processes on real, failing filesystems.

* Two brokers on one data directory: the second is refused before it rewrites anything, so the
  first loses no commit.
* ``--flush every_batch``: acknowledged batches *and offset commits* survive kill -9 plus a
  power failure (ext4 shut down without flushing, then remounted: only what was fsynced is
  there).
* A write or fsync error (ENOSPC from a full tmpfs, EIO from a shut-down ext4) halts the broker
  with one clear line, as Kafka halts when its last log directory fails; it is never retried,
  and everything acknowledged before it is intact after a restart.
* A storage error at start-up is one line, not a traceback.

The filesystems need root (mount, loop devices); without it these tests skip and say why. The
broker logs are kept off the failing filesystem so its last words can be read.
"""

from __future__ import annotations

import re
import sys
import uuid
from pathlib import Path

import pytest

from brokers.core.errors import KafkaStorageError, TopicAlreadyExists
from brokers.core.protocol.api import ApiKey
from brokers.core.protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from brokers.core.protocol.messages.offset_fetch import OffsetFetchRequest, OffsetFetchRequestTopic
from harness.cluster.kafka_probe import KafkaProbe
from harness.cluster.processes import ManagedProcess
from tests.support.brokers import RunningBroker, start_broker_process
from tests.support.clusters import ARCHITECTURES
from tests.support.faulty_fs import fill, loop_ext4, small_tmpfs
from tests.support.ops import create_topic, eventually, fetch_values, leaders, produce
from tests.support.record_builder import build_batch

pytestmark = [pytest.mark.integration, pytest.mark.hostile]

# Architectures whose whole durable state is in the broker's data directory. zk keeps offsets in
# ZooKeeper, whose data a failing broker disk does not reach (and whose own durability is
# ZooKeeper's fsync policy), so the disk-failure tests run on these two.
LOCAL_STATE = ["single", "dsbs"]
ERROR_LINE = re.compile(r"^(twinbench|python -m brokers\.\w+): error: ")


def broker_argv(arch: str, data_dir: Path, flush: str, zk_connect: str | None) -> list[str]:
    common = ["--listen", "127.0.0.1:0", "--data-dir", str(data_dir), "--flush", flush]
    if arch == "single":
        return [sys.executable, "-m", "harness.cli", "broker", *common]
    if arch == "zk":
        return [sys.executable, "-m", "brokers.zk_broker", "--node-id", "0", *common,
                "--zookeeper", str(zk_connect)]
    # A lone node: no peer to authenticate, so unauthenticated gossip on loopback is harmless.
    return [sys.executable, "-m", "brokers.dsbs_broker", "--node-id", "0", *common,
            "--gossip", "127.0.0.1:0", "--gossip-insecure"]


class Node:
    """One broker of ``arch`` (a one-node cluster), restartable on the same data directory."""

    def __init__(self, request, arch: str, data_dir: Path, logs: Path, flush: str = "os"):
        zk = None
        if arch == "zk":
            zk = f"{request.getfixturevalue('zookeeper').connect_string}/d-{uuid.uuid4().hex[:8]}"
        self.arch = arch
        self.argv = broker_argv(arch, data_dir, flush, zk)
        self.data_dir = data_dir
        self.logs = logs
        self.starts = 0
        self.broker: RunningBroker | None = None

    def log_path(self, n: int | None = None) -> Path:
        return self.logs / f"{self.arch}-{self.starts if n is None else n}.log"

    def start(self) -> RunningBroker:
        self.starts += 1
        self.broker = start_broker_process(self.argv, self.data_dir, log_path=self.log_path())
        return self.broker

    def start_expecting_failure(self) -> tuple[int, Path]:
        self.starts += 1
        proc = ManagedProcess(self.argv, name="broker", log_path=self.log_path()).start()
        try:
            return proc.wait(60), self.log_path()
        finally:
            proc.kill()

    def stop(self) -> None:
        if self.broker is not None:
            self.broker.process.stop()

    def topic(self, name: str) -> None:
        """Create (or, on a restarted lone dsbs node, which keeps no topic records, recreate)
        a one-partition topic and wait for its leader."""
        res = create_topic(self.broker, name, 1)
        assert res.error_code in (0, TopicAlreadyExists.code), res
        eventually(lambda: leaders(self.broker, name).get(0, -1) >= 0, what=f"{name} led")


def commit(broker, group: str, topic: str, offset: int) -> int:
    req = OffsetCommitRequest(
        group_id=group, generation_id_or_member_epoch=-1, member_id="",
        topics=[OffsetCommitRequestTopic(name=topic, partitions=[
            OffsetCommitRequestPartition(partition_index=0, committed_offset=offset)])])
    with KafkaProbe(broker.host, broker.port) as c:
        return c.request(ApiKey.OFFSET_COMMIT, 7, req).topics[0].partitions[0].error_code


def committed(broker, group: str, topic: str) -> int:
    with KafkaProbe(broker.host, broker.port) as c:
        res = c.request(ApiKey.OFFSET_FETCH, 5, OffsetFetchRequest(
            group_id=group, topics=[OffsetFetchRequestTopic(name=topic, partition_indexes=[0])]))
    return res.topics[0].partitions[0].committed_offset


def error_lines(log: Path) -> list[str]:
    text = log.read_text(errors="replace")
    assert "Traceback" not in text, text[-3000:]
    return [line for line in text.splitlines() if ERROR_LINE.match(line)]


def produce_until_failure(node: Node, topic: str, value_size: int, most: int) -> list[bytes]:
    """Produce one value per batch until the broker refuses one; the values it acknowledged."""
    acked: list[bytes] = []
    for i in range(most):
        value = f"{i:06d}".encode().ljust(value_size, b".")
        try:
            code = produce(node.broker, topic, 0, build_batch([(None, value)])).error_code
        except ConnectionError:
            return acked  # the broker stopped before the answer went out: not acknowledged
        if code != 0:
            assert code == KafkaStorageError.code, code
            return acked
        acked.append(value)
    pytest.fail(f"{most} batches of {value_size} bytes were all acknowledged")


def assert_halted_with_one_line(node: Node, cause: str) -> None:
    assert node.broker is not None
    code = node.broker.process.wait(60)
    assert code == 1, f"exit status {code}"
    lines = error_lines(node.log_path())
    assert len(lines) == 1 and cause in lines[0], lines


# --- exclusive use ----------------------------------------------------------------------------
@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_second_broker_on_a_data_dir_is_refused_before_it_rewrites_anything(
    arch, tmp_path, request
):
    node = Node(request, arch, tmp_path / "data", tmp_path)
    a = node.start()
    try:
        topic, group = "t", "g"
        node.topic(topic)
        assert commit(a, group, topic, 5) == 0
        second = ManagedProcess(node.argv, name="second", log_path=tmp_path / "second.log")
        second.start()
        try:
            assert second.wait(60) == 2
        finally:
            second.kill()
        lines = error_lines(tmp_path / "second.log")
        assert len(lines) == 1 and "in use" in lines[0], lines
        assert commit(a, group, topic, 10) == 0  # the first broker carries on, losing nothing
        node.stop()
        a = node.start()
        assert committed(a, group, topic) == 10
    finally:
        node.stop()


# --- every_batch: acknowledged means on disk --------------------------------------------------
@pytest.mark.parametrize("arch", LOCAL_STATE)
def test_acked_batches_and_commits_survive_kill_and_power_loss(arch, tmp_path, request):
    with loop_ext4(tmp_path) as fs:
        node = Node(request, arch, fs.mnt / "data", tmp_path, flush="every_batch")
        try:
            b = node.start()
            topic, group = "durable", "g"
            node.topic(topic)
            values = []
            for i in range(20):
                values.append(f"v{i}".encode())
                assert produce(b, topic, 0, build_batch([(None, values[-1])])).error_code == 0
                assert commit(b, group, topic, i + 1) == 0
            # Power cut: nothing that was not fsynced reaches the disk; then kill -9.
            fs.shutdown(flush_log=False)
            b.process.kill()
            fs.power_cycle()
            b = node.start()
            assert committed(b, group, topic) == 20
            node.topic(topic)
            assert fetch_values(b, topic, 0) == values
        finally:
            node.stop()


# --- disk errors halt the broker --------------------------------------------------------------
@pytest.mark.parametrize("arch", LOCAL_STATE)
def test_disk_full_halts_the_broker_with_one_line_and_loses_nothing_acked(
    arch, tmp_path, request
):
    with small_tmpfs(tmp_path / "mnt", 16 << 20) as mnt:
        node = Node(request, arch, mnt / "data", tmp_path, flush="every_batch")
        try:
            node.start()
            node.topic("full")
            filler = fill(mnt, leave=600 << 10)
            acked = produce_until_failure(node, "full", 256 << 10, most=40)
            assert_halted_with_one_line(node, "No space left on device")
            filler.unlink()
            b = node.start()
            node.topic("full")
            assert fetch_values(b, "full", 0) == acked
        finally:
            node.stop()


@pytest.mark.parametrize("arch", LOCAL_STATE)
def test_io_error_halts_the_broker_with_one_line_and_loses_nothing_acked(
    arch, tmp_path, request
):
    with loop_ext4(tmp_path) as fs:
        node = Node(request, arch, fs.mnt / "data", tmp_path, flush="every_batch")
        try:
            b = node.start()
            node.topic("eio")
            acked = [f"a{i}".encode() for i in range(5)]
            for v in acked:
                assert produce(b, "eio", 0, build_batch([(None, v)])).error_code == 0
            fs.shutdown(flush_log=True)  # the disk fails: EIO from here on
            assert produce_until_failure(node, "eio", 100, most=5) == []
            assert_halted_with_one_line(node, "Input/output error")
            fs.power_cycle()
            b = node.start()
            node.topic("eio")
            assert fetch_values(b, "eio", 0) == acked
        finally:
            node.stop()


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_storage_error_at_start_up_is_one_line(arch, tmp_path, request):
    with loop_ext4(tmp_path) as fs:
        node = Node(request, arch, fs.mnt / "data", tmp_path)
        try:
            b = node.start()
            node.topic("s")
            assert produce(b, "s", 0, build_batch([(None, b"x")])).error_code == 0
        finally:
            node.stop()
        fs.shutdown(flush_log=True)
        code, log = node.start_expecting_failure()
        assert code in (1, 2), f"exit status {code}"
        lines = error_lines(log)
        assert len(lines) == 1 and "Input/output error" in lines[0], lines
