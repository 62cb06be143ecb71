"""Three Raft twin coordinators in one process on loopback, each with its data directory:
registration and unfencing; a topic created on a follower seen everywhere, and a name raced on
every broker created once; offsets committed on one broker read on another; a controller that
stops fences itself and another takes over; a broker back after missing a deletion (compacted
away into a snapshot) learns it as a deletion event and reaches the same image."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from brokers.core.coordinator import BrokerInfo, OffsetAndMetadata, TopicPartition
from brokers.core.errors import NotCoordinator, TopicAlreadyExists, UnknownTopicOrPartition
from brokers.raft_broker.config import RaftBrokerConfig
from brokers.raft_broker.coordinator import RaftCoordinator
from brokers.raft_broker.raft.config import RaftConfig
from harness.cluster.machines import LOCAL

pytestmark = pytest.mark.integration

KEY = b"raft coordinator test cluster key"


class Cluster:
    def __init__(self, root: Path) -> None:
        self.root = root
        ports = LOCAL.free_ports(3)
        self.peers = {i: ("127.0.0.1", p) for i, p in enumerate(ports)}
        self.nodes: dict[int, RaftCoordinator] = {}
        self.deleted: dict[int, list[str]] = {}

    def make(self, i: int) -> RaftCoordinator:
        c = RaftCoordinator(i, self.root / f"broker-{i}", RaftBrokerConfig(
            listen_port=self.peers[i][1], peers=self.peers, voters=(0, 1, 2), key=KEY,
            tick_s=0.02, raft=RaftConfig(snapshot_threshold=5), heartbeat_s=0.1,
            session_timeout_s=1.0, controller_period_s=0.05, request_timeout_s=10.0))
        self.deleted[i] = []
        c.on_topic_deleted(self.deleted[i].append)
        self.nodes[i] = c
        return c

    async def start(self, i: int) -> RaftCoordinator:
        c = self.make(i)
        await c.start(BrokerInfo(i, "127.0.0.1", 9000 + i))
        return c

    def leader(self) -> RaftCoordinator:
        return next(c for c in self.nodes.values() if c._driver.leader == c.node_id)

    async def until(self, what: str, done) -> None:  # type: ignore[no-untyped-def]
        async with asyncio.timeout(20):
            while not done():
                await asyncio.sleep(0.02)  # polling a view that gossip-free Raft updates


def test_the_coordinators_agree_fail_over_and_catch_up(tmp_path: Path) -> None:
    async def main() -> None:
        cluster = Cluster(tmp_path)
        try:
            await asyncio.gather(*(cluster.start(i) for i in range(3)))
            for c in cluster.nodes.values():
                view = c.cluster()
                assert [b.node_id for b in view.brokers] == [0, 1, 2]
                assert view.controller_id == cluster.leader().node_id

            follower = next(c for c in cluster.nodes.values()
                            if c is not cluster.leader())
            info = await follower.create_topic("t1", 2, 3)
            assert [len(p.replicas) for p in info.partitions] == [3, 3]
            assert all(p.leader >= 0 for p in info.partitions)
            with pytest.raises(TopicAlreadyExists):
                await cluster.leader().create_topic("t1", 1, 1)
            # One name asked of every broker at once: exactly one creation, seen alike.
            raced = await asyncio.gather(*(c.create_topic("race", 1, 1)
                                           for c in cluster.nodes.values()),
                                         return_exceptions=True)
            assert sum(not isinstance(r, BaseException) for r in raced) == 1
            assert all(isinstance(r, TopicAlreadyExists) for r in raced
                       if isinstance(r, BaseException))

            tp = TopicPartition("t1", 0)
            owner = cluster.nodes[0].group_coordinator("g").node_id
            await cluster.nodes[owner].commit_offsets("g", {tp: OffsetAndMetadata(42)})
            assert (await cluster.nodes[2].fetch_offsets("g", None))[tp].offset == 42
            # Only the group's coordinator may write its offsets (the log fences the others).
            other = cluster.nodes[(owner + 1) % 3]
            with pytest.raises(NotCoordinator, match="no longer coordinates"):
                await other.commit_offsets("g", {tp: OffsetAndMetadata(7)})
            assert (await cluster.nodes[2].fetch_offsets("g", None))[tp].offset == 42
            pids = [await c.allocate_producer_id() for c in cluster.nodes.values()]
            assert len(set(pids)) == 3

            # The controller stops: it fences itself, another voter takes office, and its
            # leaderships move to the live in-sync replicas.
            gone = cluster.leader()
            await gone.close()
            rest = [c for i, c in cluster.nodes.items() if i != gone.node_id]
            await cluster.until("a new controller", lambda: any(
                c._driver.leader == c.node_id for c in rest))
            await cluster.until("its leaderships moved", lambda: all(
                gone.node_id not in [b.node_id for b in c.cluster().brokers]
                and all(p.leader not in (gone.node_id, -1)
                        for p in c.cluster().topics["t1"].partitions) for c in rest))

            # While it is down: t1 is deleted, and enough commits follow for the log to be
            # compacted past the deletion (a snapshot every 5 entries).
            await rest[0].delete_topic("t1")
            with pytest.raises(UnknownTopicOrPartition):
                await rest[1].delete_topic("t1")
            owner = cluster.nodes[rest[0].group_coordinator("g").node_id]
            for n in range(20):
                await owner.commit_offsets("g", {TopicPartition("race", 0): OffsetAndMetadata(n)})
            assert cluster.deleted[rest[0].node_id] == ["t1"]

            back = await cluster.start(gone.node_id)
            assert "t1" in cluster.deleted[gone.node_id]  # its files would go
            assert "t1" not in back.cluster().topics
            await cluster.until("one image", lambda: len({
                c.image.snapshot() for c in cluster.nodes.values()}) == 1)
            assert back.counters().raft_applied_index == rest[0].counters().raft_applied_index
        finally:
            for c in cluster.nodes.values():
                await c.close()

    asyncio.run(main())


def test_a_broker_stopped_cleanly_stays_fenced(tmp_path: Path) -> None:
    async def main() -> None:
        cluster = Cluster(tmp_path)
        try:
            await asyncio.gather(*(cluster.start(i) for i in range(3)))
            leader = cluster.leader()
            gone = next(c for c in cluster.nodes.values() if c is not leader)
            await gone.close()
            await cluster.until("it is fenced", lambda: leader.image.brokers[
                gone.node_id].fenced)
            # For two sessions, its last heartbeats never have the controller unfence it.
            end = asyncio.get_running_loop().time() + 2 * gone.config.session_timeout_s
            while asyncio.get_running_loop().time() < end:
                assert all(c.image.brokers[gone.node_id].fenced
                           for c in cluster.nodes.values() if c is not gone)
                await asyncio.sleep(0.02)  # watching the images for an unfencing
        finally:
            for c in cluster.nodes.values():
                await c.close()

    asyncio.run(main())


@pytest.mark.parametrize(("extra", "message"), [
    ((), "one of the arguments --raft-key-file --raft-insecure is required"),
    (("--raft-key-file", "{loose}"), "is open to other users (mode 0644); chmod 600 it"),
    (("--raft-insecure", "--voters", "0,1", "--raft-peers", "0=127.0.0.1:7001,1=127.0.0.1:7002"),
     "an even number of voters"),
    (("--raft-insecure", "--voters", ""), "at least one voter"),
    (("--raft-insecure", "--voters", "0,1,2", "--raft-peers", "0=127.0.0.1:7001"),
     "voters [1, 2] have no address among the raft peers"),
    (("--raft-insecure", "--voters", "1", "--raft-peers", "1=127.0.0.1:7001"),
     "node 0 is not among the raft peers [1]"),
    (("--raft-insecure", "--raft-peers", "0=127.0.0.1:0"), "a peer's port cannot be 0"),
    (("--raft-insecure", "--raft-peers", "zero=127.0.0.1:7001"), "expected ID=HOST:PORT"),
    (("--raft-insecure", "--voters", "a,b"), "expected node ids"),
    (("--raft-insecure", "--session-timeout", "0.5"), "two heartbeats"),
])
def test_cli_refuses_bad_quorums_in_one_line(tmp_path: Path, extra, message) -> None:  # type: ignore[no-untyped-def]
    import subprocess
    import sys

    loose = tmp_path / "loose.key"
    loose.write_text("x" * 64)
    loose.chmod(0o644)
    res = subprocess.run(
        [sys.executable, "-m", "brokers.raft_broker", "--listen", "127.0.0.1:0",
         "--data-dir", str(tmp_path / "data"), *[a.format(loose=loose) for a in extra]],
        capture_output=True, text=True, timeout=30, check=False,
        cwd=Path(__file__).resolve().parents[2])
    assert res.returncode == 2, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("python -m brokers.raft_broker: error: ")
    assert message in lines[0]


def test_a_damaged_metadata_log_at_start_is_one_line(tmp_path: Path) -> None:
    """A log frame out of sequence cannot be taken back as written: refused, nothing served."""
    import struct
    import subprocess
    import sys
    import zlib

    raft = tmp_path / "data" / "raft"
    raft.mkdir(parents=True)
    frame = struct.Struct(">QQII")
    (raft / "log.0").write_bytes(b"".join(
        frame.pack(i, 1, 1, zlib.crc32(b"x")) + b"x" for i in (1, 3)))
    res = subprocess.run(
        [sys.executable, "-m", "brokers.raft_broker", "--listen", "127.0.0.1:0",
         "--data-dir", str(tmp_path / "data"), "--raft-insecure"],
        capture_output=True, text=True, timeout=30, check=False,
        cwd=Path(__file__).resolve().parents[2])
    assert res.returncode == 2, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "entry 3 out of sequence" in lines[0], lines


def test_a_directory_of_another_cluster_is_one_line(tmp_path: Path) -> None:
    """A Raft directory keeps the cluster id it was first used with (KRaft's meta.properties):
    started with another, the node refuses in one line and votes in neither cluster."""
    import subprocess
    import sys

    (tmp_path / "data" / "raft").mkdir(parents=True)
    (tmp_path / "data" / "raft" / "cluster.json").write_text('{"cluster_id": "first"}')
    res = subprocess.run(
        [sys.executable, "-m", "brokers.raft_broker", "--listen", "127.0.0.1:0",
         "--data-dir", str(tmp_path / "data"), "--raft-insecure", "--cluster-id", "second"],
        capture_output=True, text=True, timeout=30, check=False,
        cwd=Path(__file__).resolve().parents[2])
    assert res.returncode == 2, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "Raft log of cluster 'first', not of 'second'" in lines[0], lines
