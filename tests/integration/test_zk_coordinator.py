"""ZkCoordinator against a real ZooKeeper: three in-process "brokers" on one event loop.

Each test gets its own chroot, so tests sharing the module's server never see each other's
znodes. Waits poll with deadlines; the only timing knob is the 4 s session timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest
from kazoo.client import KazooClient

from brokers.core.coordinator import (
    NO_LEADER,
    BrokerInfo,
    ClusterView,
    Coordinator,
    MemberRecord,
    OffsetAndMetadata,
    TopicPartition,
)
from brokers.core.errors import (
    CoordinatorNotAvailable,
    FencedLeaderEpoch,
    IllegalGeneration,
    InvalidReplicationFactor,
    InvalidRequest,
    InvalidTopic,
    NotLeaderOrFollower,
    TopicAlreadyExists,
    UnknownLeaderEpoch,
)
from brokers.zk_broker import ZkCoordinator, ZkCoordinatorConfig, ZooKeeperUnreachable
from harness.services.zookeeper import ZooKeeperHandle, free_ports
from tests.support import zk_fixtures
from tests.support.zk_fixtures import TEST_SESSION_TIMEOUT_MS, async_wait_until

pytestmark = [pytest.mark.integration, pytest.mark.zookeeper]
T = TypeVar("T")
SESSION_S = TEST_SESSION_TIMEOUT_MS / 1000


@pytest.fixture
def chroot() -> str:
    return f"/test-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def kz(zk: ZooKeeperHandle) -> Iterator[KazooClient]:
    """The test's own ZooKeeper client, for reading znodes directly."""
    client = KazooClient(hosts=zk.connect_string, timeout=4.0)
    client.start(timeout=10)
    yield client
    client.stop()
    client.close()


def config(connect: str, chroot: str, **kw: int | str) -> ZkCoordinatorConfig:
    base: dict[str, int | str] = {
        "session_timeout_ms": TEST_SESSION_TIMEOUT_MS,
        "connection_timeout_ms": 5000,
        "request_timeout_ms": 5000,
        "create_topic_timeout_ms": 10_000,
        "reconnect_max_delay_ms": 200,
    }
    return ZkCoordinatorConfig(connect, chroot=chroot, **(base | kw))  # type: ignore[arg-type]


def me(node_id: int) -> BrokerInfo:
    return BrokerInfo(node_id, "127.0.0.1", 19000 + node_id)


async def start(cfg: ZkCoordinatorConfig, node_id: int) -> ZkCoordinator:
    c = ZkCoordinator(cfg, node_id)
    await c.start(me(node_id))
    return c


@contextlib.asynccontextmanager
async def brokers(
    cfg: ZkCoordinatorConfig, ids: tuple[int, ...] = (1, 2, 3)
) -> AsyncIterator[dict[int, ZkCoordinator]]:
    cs = {i: await start(cfg, i) for i in ids}

    def settled() -> bool:
        views = [c.cluster() for c in cs.values()]
        return sum(c.is_controller for c in cs.values()) == 1 and all(
            [b.node_id for b in v.brokers] == sorted(ids) and v.controller_id != NO_LEADER
            for v in views
        )

    try:
        await async_wait_until(settled, 10, "every broker to see all brokers and one controller")
        yield cs
    finally:
        await asyncio.gather(*(c.close() for c in cs.values()))


def run(coro_fn: Callable[[], Awaitable[T]]) -> T:
    async def main() -> T:
        return await coro_fn()

    return asyncio.run(main())


def controller_of(cs: dict[int, ZkCoordinator]) -> ZkCoordinator:
    (c,) = [c for c in cs.values() if c.is_controller]
    return c


def leaders(view: ClusterView, topic: str) -> list[tuple[int, int]]:
    return [(p.leader, p.leader_epoch) for p in view.topics[topic].partitions]


# ------------------------------------------------------------------------------------------------
def test_registration_election_and_create_topic_on_a_non_controller(
    zk: ZooKeeperHandle, chroot: str, kz: KazooClient
) -> None:
    async def scenario() -> None:
        async with brokers(config(zk.connect_string, chroot)) as cs:
            assert all(isinstance(c, Coordinator) for c in cs.values())
            assert sorted(kz.get_children(f"{chroot}/brokers/ids")) == ["1", "2", "3"]
            reg = json.loads(kz.get(f"{chroot}/brokers/ids/2")[0])
            assert (reg["host"], reg["port"], reg["version"]) == ("127.0.0.1", 19002, 4)
            assert reg["endpoints"] == ["PLAINTEXT://127.0.0.1:19002"]
            ctl = controller_of(cs)
            assert json.loads(kz.get(f"{chroot}/controller")[0])["brokerid"] == ctl.node_id
            assert int(kz.get(f"{chroot}/controller_epoch")[0]) == 1
            for c in cs.values():
                view = c.cluster()
                assert [b.node_id for b in view.brokers] == [1, 2, 3]
                assert view.controller_id == ctl.node_id

            other = next(c for c in cs.values() if not c.is_controller)
            seen: list[ClusterView] = []
            other.subscribe(seen.append)
            info = await other.create_topic("events", 6, 1, {"retention.ms": "1000"})
            # create_topic returned: this broker's own view already has every leader.
            assert [p.leader for p in info.partitions] == [1, 2, 3, 1, 2, 3]
            assert info.configs == {"retention.ms": "1000"}
            assert seen and "events" in seen[-1].topics
            for c in cs.values():
                await async_wait_until(
                    lambda c=c: (
                        "events" in c.cluster().topics
                        and all(
                            p.leader != NO_LEADER for p in c.cluster().topics["events"].partitions
                        )
                    ),
                    5,
                    f"broker {c.node_id} to see the topic",
                )
                assert leaders(c.cluster(), "events") == [(b, 0) for b in (1, 2, 3, 1, 2, 3)]
            assignment = json.loads(kz.get(f"{chroot}/brokers/topics/events")[0])
            assert assignment == {
                "version": 1,
                "partitions": {"0": [1], "1": [2], "2": [3], "3": [1], "4": [2], "5": [3]},
            }
            state = json.loads(kz.get(f"{chroot}/brokers/topics/events/partitions/4/state")[0])
            assert state["leader"] == 2 and state["leader_epoch"] == 0 and state["isr"] == [2]
            assert state["controller_epoch"] == 1

            with pytest.raises(TopicAlreadyExists):
                await ctl.create_topic("events", 1, 1)
            with pytest.raises(InvalidReplicationFactor):
                await other.create_topic("too-wide", 1, 4)
            with pytest.raises(InvalidTopic):
                await other.create_topic("no/slashes", 1, 1)
            assert all(c.counters().zk_requests > 0 for c in cs.values())

    run(scenario)


@pytest.mark.parametrize("data_path", ["direct", "kazoo"])
def test_partition_state_fresh_reads_zookeeper_cached_does_not(
    zk: ZooKeeperHandle, chroot: str, kz: KazooClient, data_path: str
) -> None:
    async def scenario() -> None:
        async with brokers(config(zk.connect_string, chroot, data_path=data_path), (1, 2)) as cs:
            c = cs[1]
            await c.create_topic("t", 2, 1)
            # Broker 1 is the controller: its reconcile loop and watches may still be reading
            # after the creation, and their requests count too. Background work only adds, so
            # a window with exactly the expected count is the check's answer (a fresh read that
            # asked nothing, or twice, never shows one).
            for _ in range(5):
                n0 = c.counters().zk_requests
                d0 = c.counters().zk_direct_requests
                cached = await c.partition_state("t", 1, fresh=False)
                assert cached is not None and cached.leader == 2
                cached_cost = c.counters().zk_requests - n0
                fresh = await c.partition_state("t", 1, fresh=True)
                assert fresh == cached
                fresh_cost = c.counters().zk_requests - n0
                # ...carried by the client the configuration names.
                direct = c.counters().zk_direct_requests - d0
                assert direct <= 1 and fresh_cost >= 1
                if cached_cost == 0 and fresh_cost == 1:  # one getData per check
                    break
            else:
                pytest.fail("no quiet window in which a fresh read cost exactly one request")
            assert direct == (1 if data_path == "direct" else 0)
            assert await c.partition_state("t", 7, fresh=True) is None
            assert await c.partition_state("nope", 0, fresh=False) is None

            # Someone (an admin, a newer controller) rewrites the state behind our back: the
            # fresh read sees it at once, the cache once the watch has fired.
            path = f"{chroot}/brokers/topics/t/partitions/1/state"
            data = json.loads(kz.get(path)[0]) | {"leader_epoch": 9}
            kz.set(path, json.dumps(data).encode())
            fresh = await c.partition_state("t", 1, fresh=True)
            assert fresh is not None and fresh.leader_epoch == 9
            await async_wait_until(
                lambda: cs[2].cluster().topics["t"].partitions[1].leader_epoch == 9,
                5,
                "the watch to update broker 2's cache",
            )

    run(scenario)


def test_a_leader_shrinks_and_expands_its_isr_in_the_state_znode(
    zk: ZooKeeperHandle, chroot: str, kz: KazooClient
) -> None:
    """IsrWriter against ZooKeeper: the leader's conditional rewrite of the partition state
    (Kafka 0.8's layout, its zkVersion), seen by every broker through its watch; refused when
    the znode names another leader or epoch, whoever wrote it; and the controller's election
    from that ISR only."""

    async def scenario() -> None:
        async with brokers(config(zk.connect_string, chroot)) as cs:
            await cs[1].create_topic("r", 1, 3)
            path = f"{chroot}/brokers/topics/r/partitions/0/state"
            state, stat = kz.get(path)
            stored = json.loads(state)
            leader, replicas = stored["leader"], stored["isr"]
            assert sorted(replicas) == [1, 2, 3] and stored["leader_epoch"] == 0
            follower = next(r for r in replicas if r != leader)
            keep = [r for r in replicas if r != follower]

            def isr_everywhere(isr: list[int]) -> bool:
                return all(list(c.cluster().topics["r"].partitions[0].isr) == isr
                           for c in cs.values() if "r" in c.cluster().topics)

            shrunk = await cs[leader].change_isr("r", 0, 0, keep)
            assert list(shrunk.isr) == keep and shrunk.leader_epoch == 0
            state, after = kz.get(path)
            assert json.loads(state) | {"isr": replicas} == stored
            assert json.loads(state)["isr"] == keep and after.version == stat.version + 1
            await async_wait_until(lambda: isr_everywhere(keep), 5, "every broker's ISR")
            # Expanding back, asked in any order: stored in replica order.
            grown = await cs[leader].change_isr("r", 0, 0, list(reversed(replicas)))
            assert list(grown.isr) == replicas
            assert json.loads(kz.get(path)[0])["isr"] == replicas
            await async_wait_until(lambda: isr_everywhere(replicas), 5, "every broker's ISR")
            # Another broker is not the leader; the leader cannot drop itself.
            with pytest.raises(NotLeaderOrFollower):
                await cs[follower].change_isr("r", 0, 0, [follower])
            with pytest.raises(InvalidRequest):
                await cs[leader].change_isr("r", 0, 0, [r for r in replicas if r != leader])
            # A newer epoch written behind the leader's back (a controller that re-elected it):
            # its request in the old epoch is fenced, one in an epoch not stored yet unknown.
            kz.set(path, json.dumps(stored | {"leader_epoch": 1}).encode())
            with pytest.raises(FencedLeaderEpoch):
                await cs[leader].change_isr("r", 0, 0, keep)
            with pytest.raises(UnknownLeaderEpoch):
                await cs[leader].change_isr("r", 0, 2, keep)
            assert json.loads(kz.get(path)[0])["isr"] == replicas  # nothing written
            # Unclean election is off: the leader alone in its ISR dies, and the controller
            # leaves the partition leaderless (the ISR still naming it) rather than electing
            # a follower that may lack acknowledged records.
            alone = await cs[leader].change_isr("r", 0, 1, [leader])
            assert list(alone.isr) == [leader]
            await cs[leader].close()
            rest = [c for i, c in cs.items() if i != leader]
            await async_wait_until(
                lambda: all(c.cluster().topics["r"].partitions[0].leader == NO_LEADER
                            for c in rest), SESSION_S + 5, "the partition to lose its leader")
            final = json.loads(kz.get(path)[0])
            assert (final["leader"], final["leader_epoch"], final["isr"]) == (-1, 2, [leader])

    run(scenario)


def test_unclean_leader_election_elects_outside_the_isr_when_asked(
    zk: ZooKeeperHandle, chroot: str, kz: KazooClient
) -> None:
    """--unclean-leader-election: the leader alone in its ISR dies and a live replica outside
    the ISR leads in the next epoch, alone in the new ISR (availability over records only the
    dead leader had)."""

    async def scenario() -> None:
        async with brokers(config(zk.connect_string, chroot, unclean_leader_election=True)) as cs:
            await cs[1].create_topic("u", 1, 3)
            path = f"{chroot}/brokers/topics/u/partitions/0/state"
            stored = json.loads(kz.get(path)[0])
            leader, replicas = stored["leader"], stored["isr"]
            await cs[leader].change_isr("u", 0, 0, [leader])
            await cs[leader].close()
            rest = [c for i, c in cs.items() if i != leader]
            await async_wait_until(
                lambda: all(c.cluster().topics["u"].partitions[0].leader not in (NO_LEADER, leader)
                            for c in rest), SESSION_S + 5, "a leader outside the ISR")
            final = json.loads(kz.get(path)[0])
            first_live = next(r for r in replicas if r != leader)
            assert (final["leader"], final["leader_epoch"], final["isr"]) == (
                first_live, 1, [first_live])

    run(scenario)


@pytest.mark.parametrize("data_path", ["direct", "kazoo"])
def test_offsets_live_in_the_offset_registry(
    zk: ZooKeeperHandle, chroot: str, kz: KazooClient, data_path: str
) -> None:
    async def scenario() -> None:
        async with brokers(config(zk.connect_string, chroot, data_path=data_path), (1, 2)) as cs:
            a, b = cs[1], cs[2]
            tp0, tp1 = TopicPartition("t", 0), TopicPartition("t", 1)
            await a.commit_offsets("g1", {tp0: OffsetAndMetadata(42), tp1: OffsetAndMetadata(7)})
            assert kz.get(f"{chroot}/consumers/g1/offsets/t/0")[0] == b"42"
            assert kz.get(f"{chroot}/consumers/g1/offsets/t/1")[0] == b"7"
            n0 = a.counters().zk_requests
            await a.commit_offsets("g1", {tp0: OffsetAndMetadata(43)})
            assert a.counters().zk_requests - n0 == 1  # steady state: one setData
            if data_path == "direct":
                assert a.counters().zk_direct_requests >= 2  # this setData, and the first
            assert kz.get(f"{chroot}/consumers/g1/offsets/t/0")[0] == b"43"
            # Any broker reads the same registry.
            got = await b.fetch_offsets("g1", [tp0, TopicPartition("t", 5)])
            assert got == {tp0: OffsetAndMetadata(43, "")}
            assert set(await b.fetch_offsets("g1", None)) == {tp0, tp1}
            assert await b.fetch_offsets("nobody", None) == {}
            # OffsetDelete removes its znode; DeleteGroups every offset znode and directory.
            await a.delete_offsets("g1", [tp0])
            assert kz.exists(f"{chroot}/consumers/g1/offsets/t/0") is None
            assert await b.fetch_offsets("g1", None) == {tp1: OffsetAndMetadata(7, "")}
            await a.commit_offsets("g1", {tp0: OffsetAndMetadata(44)})  # after a delete: ok
            assert kz.get(f"{chroot}/consumers/g1/offsets/t/0")[0] == b"44"
            await b.delete_offsets("g1", None)
            assert kz.exists(f"{chroot}/consumers/g1/offsets") is None
            assert await a.fetch_offsets("g1", None) == {}

    run(scenario)


@pytest.mark.parametrize("data_path", ["direct", "kazoo"])
def test_a_rebalance_elsewhere_fences_this_brokers_commits(
    zk: ZooKeeperHandle, chroot: str, kz: KazooClient, data_path: str
) -> None:
    """Two brokers that both take themselves for a group's coordinator (their caches disagree
    for a moment): once the second has recorded a rebalance, a commit through the first fails
    with ILLEGAL_GENERATION and the offset stays the one the new owner may have read. The check
    rides in the commit's own request (one per partition, as before)."""

    async def scenario() -> None:
        async with brokers(config(zk.connect_string, chroot, data_path=data_path), (1, 2)) as cs:
            a, b = cs[1], cs[2]
            tp0, tp1 = TopicPartition("t", 0), TopicPartition("t", 1)
            offset0 = f"{chroot}/consumers/g/offsets/t/0"
            await a.record_owners("g", {tp0: "m0"})
            await a.commit_offsets("g", {tp0: OffsetAndMetadata(10)})  # creates, fenced
            n0 = a.counters().zk_requests
            await a.commit_offsets("g", {tp0: OffsetAndMetadata(11)})
            assert a.counters().zk_requests - n0 == 1  # steady state: still one request
            assert kz.get(offset0)[0] == b"11"
            # The group rebalances on broker 2; the partition's new owner reads 11.
            await b.record_owners("g", {tp0: "m1"})
            assert await b.fetch_offsets("g", [tp0]) == {tp0: OffsetAndMetadata(11, "")}
            with pytest.raises(IllegalGeneration):
                await a.commit_offsets("g", {tp0: OffsetAndMetadata(2522)})
            with pytest.raises(IllegalGeneration):  # the create path checks too
                await a.commit_offsets("g", {tp1: OffsetAndMetadata(5)})
            assert kz.get(offset0)[0] == b"11"
            assert kz.exists(f"{chroot}/consumers/g/offsets/t/1") is None
            await b.commit_offsets("g", {tp0: OffsetAndMetadata(12)})
            # The members rejoin on broker 1: its rebalance takes the fence back.
            await a.record_owners("g", {tp0: "m0"})
            await a.commit_offsets("g", {tp0: OffsetAndMetadata(13)})
            with pytest.raises(IllegalGeneration):
                await b.commit_offsets("g", {tp0: OffsetAndMetadata(3)})
            assert kz.get(offset0)[0] == b"13"
            # A group no broker rebalanced (manual commits) is not fenced.
            await b.commit_offsets("solo", {tp0: OffsetAndMetadata(1)})
            assert kz.get(f"{chroot}/consumers/solo/offsets/t/0")[0] == b"1"

    run(scenario)


def test_member_and_owner_registries_are_ephemeral(
    zk: ZooKeeperHandle, chroot: str, kz: KazooClient
) -> None:
    async def scenario() -> None:
        cfg = config(zk.connect_string, chroot)
        async with brokers(cfg, (1,)) as cs:
            c = cs[1]
            m1 = MemberRecord("consumer-1-abc", "consumer-1", "/127.0.0.1")
            m2 = MemberRecord("consumer/2", "consumer-2", "/127.0.0.1")  # "/" is escaped
            await c.register_member("grp", m1)
            await c.register_member("grp", m2)
            ids = f"{chroot}/consumers/grp/ids"
            assert sorted(kz.get_children(ids)) == ["consumer%2F2", "consumer-1-abc"]
            node, stat = kz.get(f"{ids}/consumer-1-abc")
            assert json.loads(node)["client_id"] == "consumer-1"
            assert stat.ephemeralOwner != 0

            tp = [TopicPartition("t", p) for p in range(3)]
            await c.record_owners("grp", {tp[0]: m1.member_id, tp[1]: m1.member_id})
            owners = f"{chroot}/consumers/grp/owners/t"
            assert sorted(kz.get_children(owners)) == ["0", "1"]
            await c.record_owners("grp", {tp[1]: m2.member_id, tp[2]: m1.member_id})
            assert sorted(kz.get_children(owners)) == ["1", "2"]
            assert kz.get(f"{owners}/1")[0] == b"consumer/2"
            assert kz.get(f"{owners}/1")[1].ephemeralOwner != 0

            await c.unregister_member("grp", m2.member_id)
            await c.unregister_member("grp", "never-registered")
            assert kz.get_children(ids) == ["consumer-1-abc"]
            await c.commit_offsets("grp", {tp[0]: OffsetAndMetadata(3)})
        # The instance closed: its session ended, the ephemerals went with it, offsets stay.
        assert kz.get_children(ids) == []
        assert kz.get_children(owners) == []
        assert kz.get(f"{chroot}/consumers/grp/offsets/t/0")[0] == b"3"

    run(scenario)


def test_controller_failover(zk: ZooKeeperHandle, chroot: str, kz: KazooClient) -> None:
    async def scenario() -> None:
        cfg = config(zk.connect_string, chroot)
        async with brokers(cfg) as cs:
            await cs[1].create_topic("t", 3, 1)
            old = controller_of(cs)
            await old.close()
            rest = {i: c for i, c in cs.items() if c is not old}
            # A clean close deletes the controller znode at once: a new controller is elected
            # without waiting for a session to expire. How fast is a benchmark's question; the
            # deadline is generous for a loaded machine.
            await async_wait_until(
                lambda: sum(c.is_controller for c in rest.values()) == 1,
                5 * SESSION_S,
                "a new controller",
            )
            new = controller_of(rest)
            assert int(kz.get(f"{chroot}/controller_epoch")[0]) == 2
            for c in rest.values():
                await async_wait_until(
                    lambda c=c: c.cluster().controller_id == new.node_id, 5, "controller id"
                )
            # The new controller acts: the old one's partition lost its leader.
            p_old = old.node_id - 1
            await async_wait_until(
                lambda: new.cluster().topics["t"].partitions[p_old].leader == NO_LEADER,
                5,
                "the new controller to mark the dead broker's partition leaderless",
            )

    run(scenario)


def test_broker_leaving_and_rejoining(zk: ZooKeeperHandle, chroot: str) -> None:
    async def scenario() -> None:
        cfg = config(zk.connect_string, chroot)
        async with brokers(cfg) as cs:
            await cs[1].create_topic("t", 3, 1)
            victim = next(c for c in cs.values() if not c.is_controller)
            p = victim.node_id - 1  # round robin from the lowest id
            observer = next(c for c in cs.values() if c is not victim)
            await victim.close()
            await async_wait_until(
                lambda: leaders(observer.cluster(), "t")[p] == (NO_LEADER, 1),
                SESSION_S,
                "the partition of the departed broker to lose its leader",
            )
            assert [b.node_id for b in observer.cluster().brokers] == sorted(
                set(cs) - {victim.node_id}
            )
            # Other partitions keep their leader and epoch.
            others = [x for i, x in enumerate(leaders(observer.cluster(), "t")) if i != p]
            assert all(epoch == 0 for _, epoch in others)

            back = await start(cfg, victim.node_id)
            try:
                await async_wait_until(
                    lambda: leaders(observer.cluster(), "t")[p] == (victim.node_id, 2),
                    SESSION_S,
                    "the returning broker to lead again with a bumped epoch",
                )
                await async_wait_until(
                    lambda: leaders(back.cluster(), "t")[p] == (victim.node_id, 2), 5, "its view"
                )
            finally:
                await back.close()

    run(scenario)


def test_producer_ids_are_unique_across_brokers(
    zk: ZooKeeperHandle, chroot: str, kz: KazooClient
) -> None:
    async def scenario() -> None:
        cfg = config(zk.connect_string, chroot, producer_id_block_size=10)
        async with brokers(cfg) as cs:
            ids = await asyncio.gather(
                *(c.allocate_producer_id() for c in cs.values() for _ in range(25))
            )
            assert len(set(ids)) == 75
            block = json.loads(kz.get(f"{chroot}/latest_producer_id_block")[0])
            assert block["version"] == 1 and int(block["block_end"]) >= 74
            assert int(block["block_end"]) - int(block["block_start"]) == 9

    run(scenario)


def test_session_expiry_reregisters_and_restores_registrations(
    zk: ZooKeeperHandle, chroot: str, kz: KazooClient
) -> None:
    async def scenario() -> None:
        cfg = config(zk.connect_string, chroot)
        async with brokers(cfg, (1, 2)) as cs:
            a = cs[1]
            await a.register_member("g", MemberRecord("m-1", "c", "/127.0.0.1"))
            await a.record_owners("g", {TopicPartition("t", 0): "m-1"})
            client = a._session.client
            assert client is not None and client.client_id is not None
            old_session = client.client_id[0]
            # Expire the session for real: a second client attaches to it and closes it.
            sid, passwd = client.client_id
            thief = KazooClient(hosts=zk.connect_string, client_id=(sid, passwd), timeout=4.0)
            await asyncio.to_thread(thief.start, 10)
            await asyncio.to_thread(thief.stop)
            thief.close()

            def reregistered() -> bool:
                stat = kz.exists(f"{chroot}/brokers/ids/1")
                return (
                    a.counters().zk_session_lost >= 1
                    and a.connected
                    and stat is not None
                    and stat.ephemeralOwner not in (0, old_session)
                )

            await async_wait_until(reregistered, 2 * SESSION_S, "re-registration")
            assert kz.exists(f"{chroot}/consumers/g/ids/m-1") is not None
            assert kz.get(f"{chroot}/consumers/g/owners/t/0")[0] == b"m-1"
            await async_wait_until(
                lambda: sum(c.is_controller for c in cs.values()) == 1, SESSION_S, "controller"
            )
            await a.commit_offsets("g", {TopicPartition("t", 0): OffsetAndMetadata(1)})

    run(scenario)


def test_a_session_expiring_while_the_broker_starts_is_survived(
    zk: ZooKeeperHandle, chroot: str, kz: KazooClient
) -> None:
    """A broker paused while it starts (the nemesis does this) finds its session expired when
    it runs again: it registers on the next session instead of exiting."""

    async def scenario() -> None:
        c = ZkCoordinator(config(zk.connect_string, chroot), 1)
        session = c._session
        real = session.register_broker
        expired: list[int] = []

        async def expire_first(info: BrokerInfo, sid: int | None = None) -> None:
            if not expired:
                client = session.client
                assert client is not None and client.client_id is not None
                expired.append(client.client_id[0])
                # Expire it for real: a second client attaches to the session and closes it.
                thief = KazooClient(hosts=zk.connect_string, client_id=client.client_id,
                                    timeout=4.0)
                await asyncio.to_thread(thief.start, 10)
                await asyncio.to_thread(thief.stop)
                thief.close()
            await real(info, sid)

        session.register_broker = expire_first  # type: ignore[method-assign]
        try:
            await c.start(me(1))
            stat = kz.exists(f"{chroot}/brokers/ids/1")
            assert stat is not None and stat.ephemeralOwner not in (0, expired[0])
            assert c.connected and c.counters().zk_session_lost >= 1
            await c.create_topic("t", 1, 1)
        finally:
            await c.close()

    run(scenario)


def test_unreachable_zookeeper_at_start_is_a_clear_error(chroot: str) -> None:
    (port,) = free_ports(1)

    async def scenario() -> None:
        c = ZkCoordinator(config(f"127.0.0.1:{port}", chroot, connection_timeout_ms=1500), 1)
        t0 = time.monotonic()
        with pytest.raises(ZooKeeperUnreachable, match=f"127.0.0.1:{port}"):
            await c.start(me(1))
        # Given up after the connection timeout (1.5 s), not hung: generous, not a speed.
        assert time.monotonic() - t0 < 30
        await c.close()

    run(scenario)


def test_zookeeper_down_and_back(tmp_path: Path, chroot: str) -> None:
    """ZooKeeper stops under running brokers: group calls fail retriably, leadership served
    from the cache; it comes back: the brokers are registered and group calls work again."""
    with zk_fixtures.local_zookeeper(tmp_path) as own:
        assert own.ensemble is not None
        ensemble = own.ensemble

        async def scenario() -> None:
            cfg = config(own.connect_string, chroot)
            async with brokers(cfg, (1, 2)) as cs:
                a = cs[1]
                await a.create_topic("t", 2, 1)
                tp = TopicPartition("t", 0)
                await a.commit_offsets("g", {tp: OffsetAndMetadata(1)})

                await asyncio.to_thread(ensemble.stop)
                await async_wait_until(lambda: not a.connected, SESSION_S, "SUSPENDED")
                with pytest.raises(CoordinatorNotAvailable) as err:
                    await a.commit_offsets("g", {tp: OffsetAndMetadata(2)})
                assert err.value.retriable
                with pytest.raises(CoordinatorNotAvailable):
                    await a.register_member("g", MemberRecord("m", "c", "h"))
                with pytest.raises(CoordinatorNotAvailable):
                    await a.fetch_offsets("g", None)
                # Produce/fetch keep working for partitions already led.
                state = await a.partition_state("t", 0, fresh=True)
                assert state is not None and state.leader == 1
                assert not any(c.is_controller for c in cs.values())

                await asyncio.to_thread(ensemble.start)
                await async_wait_until(
                    lambda: all(c.connected for c in cs.values()), 3 * SESSION_S, "reconnection"
                )
                # The data path's own session comes back too, by itself.
                await async_wait_until(
                    lambda: a.counters().zk_direct_connects >= 2,
                    3 * SESSION_S,
                    "the direct session to reconnect",
                )
                d0 = a.counters().zk_direct_requests
                assert await a.partition_state("t", 0, fresh=True) is not None
                assert a.counters().zk_direct_requests == d0 + 1
                await async_wait_until(
                    lambda: sum(c.is_controller for c in cs.values()) == 1,
                    2 * SESSION_S,
                    "a controller after the outage",
                )
                await a.commit_offsets("g", {tp: OffsetAndMetadata(3)})
                assert (await cs[2].fetch_offsets("g", [tp]))[tp].offset == 3
                kz = KazooClient(hosts=own.connect_string, timeout=4.0)
                await asyncio.to_thread(kz.start, 10)
                try:
                    assert sorted(kz.get_children(f"{chroot}/brokers/ids")) == ["1", "2"]
                finally:
                    await asyncio.to_thread(kz.stop)
                    kz.close()

        run(scenario)


def test_killed_controller_process_is_replaced_and_its_partitions_lose_their_leader(
    zk: ZooKeeperHandle, chroot: str, kz: KazooClient
) -> None:
    """A broker process SIGKILLed (no goodbye to ZooKeeper) vanishes when its session expires."""
    repo = Path(__file__).resolve().parents[2]
    child = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.support.zk_member",
            zk.connect_string,
            chroot,
            "1",
            str(TEST_SESSION_TIMEOUT_MS),
        ],
        cwd=repo,
        stdout=subprocess.PIPE,
        env=os.environ | {"PYTHONPATH": str(repo)},
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == b"ready"
        # The child started first, so it won the election.
        assert json.loads(kz.get(f"{chroot}/controller")[0])["brokerid"] == 1

        async def scenario() -> None:
            cfg = config(zk.connect_string, chroot)
            c2, c3 = await start(cfg, 2), await start(cfg, 3)
            try:
                await c2.create_topic("t", 3, 1)
                assert leaders(c2.cluster(), "t") == [(1, 0), (2, 0), (3, 0)]
                t0 = time.monotonic()
                os.kill(child.pid, signal.SIGKILL)
                await async_wait_until(
                    lambda: c2.is_controller or c3.is_controller,
                    5 * SESSION_S,
                    "a new controller after the old one was killed",
                )
                await async_wait_until(
                    lambda: leaders(c3.cluster(), "t")[0] == (NO_LEADER, 1),
                    5 * SESSION_S,
                    "the killed broker's partition to lose its leader",
                )
                elapsed = time.monotonic() - t0
                # Behaviour, not speed: a SIGKILLed broker is noticed through its ZooKeeper
                # session expiring, never before (the lower bound); how long after is a
                # benchmark's question, so the deadlines above are only generous.
                assert elapsed >= SESSION_S * 0.75
                assert [b.node_id for b in c3.cluster().brokers] == [2, 3]
                assert leaders(c3.cluster(), "t")[1:] == [(2, 0), (3, 0)]
            finally:
                await c2.close()
                await c3.close()

        run(scenario)
    finally:
        child.kill()
        child.wait(10)
