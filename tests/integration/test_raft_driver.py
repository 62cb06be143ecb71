"""Three Raft nodes on loopback, each with its storage on disk and the metadata image as its
state machine: one leader; proposals committed and applied alike everywhere (a name created
once); the leader stopped, the others go on; it restarts from its directory and catches up,
past a compaction, to the same image; a read barrier at the leader."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from brokers.raft_broker.metadata import records as r
from brokers.raft_broker.metadata.image import MetadataImage, Outcome
from brokers.raft_broker.node import NodeFailed, RaftDriver
from brokers.raft_broker.raft.config import RaftConfig
from brokers.raft_broker.raft.core import Role

pytestmark = pytest.mark.integration

KEY = b"raft driver test cluster key, 32"
VOTERS = (1, 2, 3)
CONFIG = RaftConfig(snapshot_threshold=10)


class Member:
    """One node: its driver and the image it applies."""

    def __init__(self, node_id: int, root: Path) -> None:
        self.image = MetadataImage()
        self.failures: list[tuple[str, BaseException]] = []
        self.broken_at: int | None = None  # apply raises from this index on (a planted bug)
        self.driver = RaftDriver(
            node_id, VOTERS, (), directory=root / f"node-{node_id}", listen=("127.0.0.1", 0),
            peers={}, key=KEY, apply=self._apply, snapshot=lambda: self.image.snapshot(),
            restore=self._restore, config=CONFIG, tick_s=0.02,
            on_failure=lambda what, exc: self.failures.append((what, exc)))

    def _apply(self, index: int, data: bytes) -> Outcome:
        if self.broken_at is not None and index >= self.broken_at:
            raise RuntimeError(f"planted: applying {index}")
        return self.image.apply_entry(index, data)[1]

    def _restore(self, data: bytes) -> None:
        self.image = MetadataImage.restore(data)


async def _connect(members: dict[int, Member]) -> None:
    for a in members.values():
        for b in members.values():
            if a is not b:
                a.driver.transport.set_peer(b.driver.node.id, ("127.0.0.1", b.driver.port))


async def _leader(members: dict[int, Member]) -> Member:
    async with asyncio.timeout(20):
        while True:
            leaders = [m for m in members.values() if m.driver.node.role is Role.LEADER]
            if len(leaders) == 1:
                return leaders[0]
            await asyncio.sleep(0.02)  # polling for an election's outcome


async def _converged(members: dict[int, Member]) -> None:
    async with asyncio.timeout(20):
        while len({m.image.snapshot() for m in members.values()}) != 1:
            await asyncio.sleep(0.02)  # polling until every image applied the same log


async def _started(root: Path) -> dict[int, Member]:
    """Every voter started and connected to the others."""
    members = {i: Member(i, root) for i in VOTERS}
    for m in members.values():
        await m.driver.start()
    await _connect(members)
    return members


def _topic(name: str) -> bytes:
    return r.encode(r.CreateTopic(name, (r.PartitionInit((1,), (1,), 1),), ()))


def test_three_nodes_agree_survive_their_leader_and_take_it_back(tmp_path: Path) -> None:
    async def main() -> None:
        members = await _started(tmp_path)
        try:
            leader = await _leader(members)
            # A read right after an election: its index is the new leader's empty entry, which
            # the state machine has applied too (a barrier waiting on the image would hang).
            index = await leader.driver.read()
            assert index >= 1 and leader.image.applied_index >= index
            outcomes = [await leader.driver.propose(_topic(f"t{i}")) for i in range(25)]
            assert all(o.applied for o in outcomes)
            again = await leader.driver.propose(_topic("t3"))
            assert not again.applied and "already exists" in again.reason
            await _converged(members)
            assert sorted(members[2].image.topics) == sorted(f"t{i}" for i in range(25))

            # The leader stops: the other two elect one of themselves and go on.
            old = leader.driver.node.id
            await leader.driver.close()
            rest = {i: m for i, m in members.items() if i != old}
            second = await _leader(rest)
            for i in range(25, 40):
                assert (await second.driver.propose(_topic(f"t{i}"))).applied
            assert await second.driver.read() >= 40

            # Restarted from its directory (its vote, log and snapshot), it catches up.
            members[old] = Member(old, tmp_path)
            await members[old].driver.start()
            await _connect(members)
            await _converged(members)
            assert len(members[old].image.topics) == 40
            # Every node compacted its log into snapshots along the way.
            assert all((tmp_path / f"node-{i}" / "snapshot").exists() for i in VOTERS)
            assert members[old].driver.node.term >= leader.driver.node.term
        finally:
            for m in members.values():
                await m.driver.close()
    asyncio.run(main())


def test_a_node_that_fails_stops_taking_part_and_the_others_go_on(tmp_path: Path) -> None:
    async def main() -> None:
        members = await _started(tmp_path)
        try:
            leader = await _leader(members)
            broken = next(m for m in members.values() if m is not leader)
            broken.broken_at = leader.driver.node.log.last_index + 2
            for i in range(5):
                assert (await leader.driver.propose(_topic(f"t{i}"))).applied
            async with asyncio.timeout(20):
                while broken.driver.failure is None:
                    await asyncio.sleep(0.02)  # polling for the planted failure
            # Told once, with the cause; it answers nothing more.
            assert len(broken.failures) == 1 and "planted" in str(broken.failures[0][1])
            with pytest.raises(NodeFailed):
                await broken.driver.propose(_topic("x"))
            with pytest.raises(NodeFailed):
                await broken.driver.read()
            # The other two keep committing.
            for i in range(5, 10):
                assert (await leader.driver.propose(_topic(f"t{i}"))).applied
        finally:
            for m in members.values():
                await m.driver.close()
    asyncio.run(main())
