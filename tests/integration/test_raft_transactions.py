"""The Raft twin as the core's TransactionStore: three coordinators in one process on loopback.
A transaction record written on the broker that places its id is read on another; a write from
a stale version, or from a broker that does not place the id, is refused by the log
(NOT_COORDINATOR); the core's TransactionCoordinator runs on it; a broker that was down while
the records were compacted into a snapshot comes back with them."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from brokers.core.coordinator import BrokerInfo
from brokers.core.errors import NotCoordinator
from brokers.core.protocol.messages.transactions import (
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)
from brokers.core.transactions.coordinator import (
    NO_VERSION,
    TransactionCoordinator,
    TransactionStore,
    decode,
    placement_key,
)
from brokers.raft_broker.coordinator import RaftCoordinator
from tests.integration.test_raft_coordinator import Cluster

pytestmark = pytest.mark.integration


class NoMarkers:
    """No transaction here reaches its markers: none is ended."""

    async def send(self, broker: BrokerInfo, request: WriteTxnMarkersRequest,
                   timeout_s: float) -> WriteTxnMarkersResponse:
        raise AssertionError("no markers expected")


def test_transaction_records_in_the_metadata_log(tmp_path: Path) -> None:
    async def main() -> None:
        cluster = Cluster(tmp_path)
        try:
            await asyncio.gather(*(cluster.start(i) for i in range(3)))
            nodes = cluster.nodes
            assert all(isinstance(c, TransactionStore) for c in nodes.values())
            owner = nodes[nodes[0].group_coordinator(placement_key("tx")).node_id]
            other = nodes[(owner.node_id + 1) % 3]
            reader = nodes[(owner.node_id + 2) % 3]

            assert await reader.read_transaction("tx") == (None, NO_VERSION)
            assert await owner.write_transaction("tx", b"one", NO_VERSION) == 0
            # Read on another broker at once: reads go behind a ReadIndex barrier.
            assert await reader.read_transaction("tx") == (b"one", 0)

            # A writer still at an older version (here: "absent") is refused; nothing moves.
            with pytest.raises(NotCoordinator, match="at version 0"):
                await owner.write_transaction("tx", b"stale", NO_VERSION)
            # A broker that does not place the id is refused, even from the right version.
            with pytest.raises(NotCoordinator, match="no longer coordinates transactional id"):
                await other.write_transaction("tx", b"intruder", 0)
            assert await reader.read_transaction("tx") == (b"one", 0)
            assert await owner.write_transaction("tx", b"two", 0) == 1
            assert await other.read_transaction("tx") == (b"two", 1)
            for c in nodes.values():
                assert await c.list_transactions() == ["tx"]
            assert (owner.counters().raft_transaction_writes,
                    owner.counters().raft_transaction_writes_refused) == (3, 1)
            assert other.counters().raft_transaction_writes_refused == 1

            # The core's coordinator on the raft store: a producer id for a new id, and the
            # same id again from a coordinator with nothing cached (a restart) bumps the epoch
            # from the record it reads back.
            tid = next(f"app-{n}" for n in range(100) if owner.group_coordinator(
                placement_key(f"app-{n}")).node_id == owner.node_id)
            first = TransactionCoordinator(owner, owner, NoMarkers())
            pid, epoch = await first.init_producer_id(tid, 60_000, None)
            again = TransactionCoordinator(owner, owner, NoMarkers())
            assert await again.init_producer_id(tid, 60_000, None) == (pid, epoch + 1)
            # The first one's cache is stale now: its next write is refused by the log.
            with pytest.raises(NotCoordinator):
                await first.init_producer_id(tid, 60_000, None)
            raw, _ = await reader.read_transaction(tid)
            assert raw is not None and decode(raw).producer_epoch == epoch + 1
            with pytest.raises(NotCoordinator):  # the core's own placement check
                await TransactionCoordinator(other, other, NoMarkers()).init_producer_id(
                    tid, 60_000, None)

            # A broker down while the log is compacted past the records (a snapshot every 5
            # entries) gets them back from a snapshot.
            down = reader
            await down.close()
            rest = [c for c in nodes.values() if c is not down]
            await cluster.until("it is fenced", lambda: all(
                down.node_id not in [b.node_id for b in c.cluster().brokers] for c in rest))
            placer = nodes[rest[0].group_coordinator(placement_key("ty")).node_id]
            version = NO_VERSION
            for n in range(12):
                version = await placer.write_transaction("ty", f"ty-{n}".encode(), version)
            assert version == 11
            back: RaftCoordinator = await cluster.start(down.node_id)
            assert back.counters().raft_events.get("snapshots_installed", 0) >= 1
            assert await back.read_transaction("ty") == (b"ty-11", 11)
            assert back.image.transactions == placer.image.transactions
            assert await back.list_transactions() == sorted(["tx", "ty", tid])
        finally:
            for c in cluster.nodes.values():
                await c.close()

    asyncio.run(main())
