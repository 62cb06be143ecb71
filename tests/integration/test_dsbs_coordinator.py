"""Three DsbsCoordinator instances in one process, gossiping over loopback UDP (LOCAL preset).

Readiness is always polled against a deadline; there are no fixed sleeps, and every scenario
runs under a deadline of its own (``SCENARIO_TIMEOUT_S``), shutdown included, so a hang fails
the test quickly with the scenario's stack instead of holding the suite until pytest's timeout.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from brokers.core.coordinator import (
    NO_LEADER,
    BrokerInfo,
    Coordinator,
    OffsetAndMetadata,
    TopicPartition,
)
from brokers.core.errors import InvalidReplicationFactor, TopicAlreadyExists
from brokers.dsbs_broker.config import DsbsConfig, GossipConfig
from brokers.dsbs_broker.coordinator import DsbsCoordinator
from brokers.dsbs_broker.packets.wire import Status
from harness.cluster.machines import free_ports
from tests.support.dsbs_member import KEY

pytestmark = pytest.mark.integration

SCENARIO_TIMEOUT_S = 90.0


def _free_udp_ports(n: int) -> list[int]:
    return free_ports(n)


async def _until(cond: Callable[[], bool], timeout: float, what: str) -> float:
    start = time.monotonic()
    while not cond():
        if time.monotonic() - start > timeout:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.01)
    return time.monotonic() - start


class InProcessCoordinators:
    def __init__(self, tmp: Path, n: int = 3) -> None:
        self.tmp = tmp
        self.ports = _free_udp_ports(n)
        self.kafka_ports = [20000 + i for i in range(n)]
        self.seeds = tuple(f"127.0.0.1:{p}" for p in self.ports)
        self.coords: dict[int, DsbsCoordinator] = {}

    def config(self, i: int) -> DsbsConfig:
        return DsbsConfig(gossip_host="127.0.0.1", gossip_port=self.ports[i], seeds=self.seeds,
                          gossip=GossipConfig.LOCAL, join_timeout_s=1.0,
                          offset_replication_interval_s=0.1, gossip_key=KEY)

    async def start(self, i: int) -> DsbsCoordinator:
        c = DsbsCoordinator(i, self.tmp / f"b{i}", self.config(i))
        await c.start(BrokerInfo(i, "127.0.0.1", self.kafka_ports[i]))
        self.coords[i] = c
        return c

    async def start_all(self) -> None:
        await asyncio.gather(*(self.start(i) for i in range(len(self.ports))))

    def live(self) -> list[DsbsCoordinator]:
        return [c for c in self.coords.values() if not c._closed]

    def converged(self, ids: set[int]) -> bool:
        return all({b.node_id for b in c.cluster().brokers} == ids for c in self.live())

    async def close(self) -> None:
        await asyncio.gather(*(c.close() for c in self.coords.values()))


def _run(tmp_path: Path, scenario) -> None:
    async def main() -> None:
        cluster = InProcessCoordinators(tmp_path)
        async with asyncio.timeout(SCENARIO_TIMEOUT_S):
            try:
                await scenario(cluster)
            finally:
                await cluster.close()

    asyncio.run(main())


def test_membership_topics_and_group_coordinator(tmp_path):
    async def scenario(cl: InProcessCoordinators) -> None:
        await cl.start_all()
        assert all(isinstance(c, Coordinator) for c in cl.coords.values())
        await _until(lambda: cl.converged({0, 1, 2}), 5, "membership")
        view = cl.coords[1].cluster()
        assert [b.port for b in view.brokers] == cl.kafka_ports
        assert view.controller_id == 0

        info = await cl.coords[1].create_topic("orders", 3, 1)
        assert sorted(p.leader for p in info.partitions) == [0, 1, 2]
        with pytest.raises(TopicAlreadyExists):
            await cl.coords[1].create_topic("orders", 3, 1)
        with pytest.raises(InvalidReplicationFactor):
            await cl.coords[0].create_topic("wide", 1, 4)
        await _until(lambda: all("orders" in c.cluster().topics for c in cl.live()), 3,
                     "topic on every broker")
        views = [c.cluster().topics["orders"] for c in cl.live()]
        assert all(v == views[0] for v in views)  # identical leaders and epochs everywhere
        fresh = await cl.coords[2].partition_state("orders", 1, fresh=True)
        assert fresh == views[0].partitions[1]
        assert await cl.coords[2].partition_state("orders", 7, fresh=True) is None

        coords = {c.group_coordinator("g").node_id for c in cl.live()}
        assert len(coords) == 1

        seen = []
        cl.coords[0].subscribe(seen.append)
        await cl.coords[2].create_topic("later", 1, 1)
        await _until(lambda: any("later" in v.topics for v in seen), 3, "listener notified")

        pids = {await c.allocate_producer_id() for c in cl.live() for _ in range(5)}
        assert len(pids) == 15
        counters = cl.coords[0].counters()
        assert counters.gossip_packets_out > 0 and counters.gossip_bytes_in > 0

    _run(tmp_path, scenario)


def test_offsets_survive_their_coordinator_via_the_successor(tmp_path):
    async def scenario(cl: InProcessCoordinators) -> None:
        await cl.start_all()
        await _until(lambda: cl.converged({0, 1, 2}), 5, "membership")
        group = "readers"
        coord_id = cl.coords[0].group_coordinator(group).node_id
        order = cl.coords[0].node.live_order(group)
        successor_id = order[1]
        tp = TopicPartition("orders", 0)
        await cl.coords[coord_id].commit_offsets(group, {tp: OffsetAndMetadata(1234, "m")})
        assert (await cl.coords[coord_id].fetch_offsets(group, [tp]))[tp].offset == 1234
        succ = cl.coords[successor_id]
        await _until(lambda: succ.node.offsets.fetch(group, None), 3, "lazy replication")

        await cl.coords[coord_id].close()  # graceful: LEFT spreads at once
        await _until(lambda: cl.converged({0, 1, 2} - {coord_id}), 3, "departure")
        for c in cl.live():
            assert c.group_coordinator(group).node_id == successor_id
        got = await succ.fetch_offsets(group, None)
        assert got[tp].offset == 1234 and got[tp].metadata == "m"
        # A deletion (DeleteGroups) is a tombstone replicated like a commit: the next replica
        # drops the offset too, and the older copy it held does not bring it back.
        tp2 = TopicPartition("orders", 1)
        await succ.commit_offsets(group, {tp2: OffsetAndMetadata(77)})
        nxt = cl.coords[succ.node.live_order(group)[1]]
        await _until(lambda: tp2 in nxt.node.offsets.fetch(group, None), 3, "replication")
        await succ.delete_offsets(group, None)
        assert await succ.fetch_offsets(group, None) == {}
        await _until(lambda: not nxt.node.offsets.fetch(group, None), 3, "tombstones")
        await succ.commit_offsets(group, {tp: OffsetAndMetadata(1234, "m")})  # for below

        # Offsets are durable: the successor's file holds them after a restart, too.
        await succ.close()
        again = DsbsCoordinator(successor_id, cl.tmp / f"b{successor_id}",
                                cl.config(successor_id))
        await again.start(BrokerInfo(successor_id, "127.0.0.1", 1))
        try:
            assert (await again.fetch_offsets(group, [tp]))[tp].offset == 1234
        finally:
            await again.close()

    _run(tmp_path, scenario)


def test_killed_broker_declared_dead_then_rejoins(tmp_path, record_property):
    async def scenario(cl: InProcessCoordinators) -> None:
        await cl.start_all()
        await _until(lambda: cl.converged({0, 1, 2}), 5, "membership")
        await cl.coords[0].create_topic("t", 3, 1)
        await _until(lambda: all("t" in c.cluster().topics for c in cl.live()), 3, "topic")
        victim = 2
        parts = [p.partition for p in cl.coords[0].cluster().topics["t"].partitions
                 if p.leader == victim]
        assert parts
        old_epoch = cl.coords[0].cluster().topics["t"].partitions[parts[0]].leader_epoch
        old_inc = cl.coords[victim].node.incarnation
        for c in cl.live():  # fills the per-request answers' cache, which must not go stale
            assert (await c.partition_state("t", parts[0], fresh=True)).leader == victim

        await cl.coords[victim].abort()  # no goodbye, as after SIGKILL
        took = await _until(
            lambda: all(c.node.members.get(victim).status == Status.DEAD for c in cl.live()),
            3.0, "death detected by every survivor")
        print(f"\n[dsbs-figures] loopback LOCAL detection: {took:.2f}s")
        record_property("loopback_local_detection_s", took)
        for c in cl.live():
            ps = await c.partition_state("t", parts[0], fresh=True)
            assert ps.leader == NO_LEADER and ps.isr == ()
            assert victim not in {b.node_id for b in c.cluster().brokers}

        restarted = await cl.start(victim)
        assert restarted.node.incarnation > old_inc
        await _until(lambda: cl.converged({0, 1, 2}), 3, "rejoin")
        await _until(lambda: all(
            c.cluster().topics["t"].partitions[parts[0]].leader == victim for c in cl.live()),
            3, "partitions served again")
        new = [c.cluster().topics["t"].partitions[parts[0]] for c in cl.live()]
        assert all(p.leader_epoch == new[0].leader_epoch > old_epoch for p in new)
        for c, p in zip(cl.live(), new, strict=True):
            assert await c.partition_state("t", parts[0], fresh=True) == p
        # The restarted broker kept the topic (its topics file) and agrees with the others.
        assert restarted.cluster().topics["t"] == cl.coords[0].cluster().topics["t"]

    _run(tmp_path, scenario)


def test_topic_records_survive_a_whole_cluster_restart(tmp_path):
    async def scenario(cl: InProcessCoordinators) -> None:
        await cl.start_all()
        await _until(lambda: cl.converged({0, 1, 2}), 5, "membership")
        await cl.coords[1].create_topic("kept", 3, 1, {"retention.ms": "1000"})
        await _until(lambda: all("kept" in c.cluster().topics for c in cl.live()), 3, "topic")
        rec = cl.coords[0].node.topics.get("kept")
        await cl.close()
        cl.coords = {}
        await cl.start_all()
        await _until(lambda: cl.converged({0, 1, 2}), 5, "membership again")
        for c in cl.live():
            # The same record (replica ring, configs, creator), so every partition is led by
            # the broker holding its data, as before the restart.
            assert c.node.topics.get("kept") == rec
            info = c.cluster().topics["kept"]
            assert [p.leader for p in info.partitions] == [p.replicas[0] for p in info.partitions]
            assert info.configs == {"retention.ms": "1000"}
        with pytest.raises(TopicAlreadyExists):
            await cl.coords[2].create_topic("kept", 1, 1)

    _run(tmp_path, scenario)


def test_junk_datagrams_are_counted_and_dropped(tmp_path):
    async def scenario(cl: InProcessCoordinators) -> None:
        await cl.start_all()
        await _until(lambda: cl.converged({0, 1, 2}), 5, "membership")
        target = cl.coords[1]
        host, port = target.gossip_address
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            junk = [b"", b"\x00", b"garbage" * 10, b"\xd5\xb5\x01\x00" + b"\xff" * 40,
                    b"\xd5\xb5" + bytes(3000)]
            for j in junk * 20:
                s.sendto(j, (host, port))
        finally:
            s.close()
        await _until(lambda: sum(target.counters().gossip_dropped.values())
                     >= len(junk) * 20 - 20, 3, "drops counted")
        c = target.counters()
        assert c.gossip_dropped.get("oversized", 0) >= 19
        assert c.gossip_dropped.get("bad_magic", 0) >= 19
        # Still healthy and still talking to everyone.
        before = c.gossip_packets_in
        await _until(lambda: target.counters().gossip_packets_in > before + 10, 3, "traffic")
        assert cl.converged({0, 1, 2})

    _run(tmp_path, scenario)


def test_sigkilled_process_is_declared_dead_within_3s_and_rejoins(tmp_path, record_property):
    import os
    import signal
    import subprocess
    import sys

    async def scenario(cl: InProcessCoordinators) -> None:
        await cl.start(0)
        await cl.start(1)
        victim = 2

        def spawn() -> tuple[subprocess.Popen, int]:
            p = subprocess.Popen(
                [sys.executable, "-m", "tests.support.dsbs_member", str(victim),
                 str(cl.ports[victim]), str(cl.tmp / "child"), ",".join(cl.seeds)],
                stdout=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parents[2])
            line = p.stdout.readline().split()  # blocks until the child has joined
            assert line and line[0] == "ready", line
            return p, int(line[1])

        proc, inc1 = await asyncio.to_thread(spawn)
        try:
            await _until(lambda: cl.converged({0, 1, 2}), 5, "child joined")
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            took = await _until(
                lambda: all(c.node.members.get(victim).status == Status.DEAD
                            for c in cl.live()), 3.0, "SIGKILLed broker declared dead")
            print(f"\n[dsbs-figures] SIGKILL detection (LOCAL, loopback): {took:.2f}s")
            record_property("sigkill_local_detection_s", took)
            proc, inc2 = await asyncio.to_thread(spawn)
            assert inc2 > inc1  # persisted in its data dir
            await _until(lambda: cl.converged({0, 1, 2}), 3, "restarted child rejoined")
        finally:
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait()

    _run(tmp_path, scenario)
