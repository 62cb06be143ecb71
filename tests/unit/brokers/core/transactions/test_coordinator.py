"""The transaction coordinator over an in-memory store and marker sender (no I/O): what it
stores, which markers it sends where, retries, timeouts, and a successor finishing a
transaction its predecessor decided."""

from __future__ import annotations

import asyncio
from types import MappingProxyType

import pytest

from brokers.core.coordinator import (
    BrokerInfo,
    ClusterView,
    PartitionState,
    TopicInfo,
    TopicPartition,
)
from brokers.core.errors import (
    ConcurrentTransactions,
    NotCoordinator,
    NotLeaderOrFollower,
    UnknownTopicOrPartition,
)
from brokers.core.protocol.messages.transactions import (
    WritableTxnMarkerPartitionResult,
    WritableTxnMarkerResult,
    WritableTxnMarkerTopicResult,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)
from brokers.core.transactions.coordinator import (
    GROUP_MARKER_PREFIX,
    NO_VERSION,
    TransactionCoordinator,
    decode,
)
from brokers.core.transactions.txn_state import TxnState

B1, B2 = BrokerInfo(1, "h1", 1), BrokerInfo(2, "h2", 2)
A0 = TopicPartition("a", 0)
A1 = TopicPartition("a", 1)


class Cluster:
    """A coordinator seam stand-in: two brokers, topic a (partition 0 on 1, 1 on 2)."""

    def __init__(self, me: int, placement: int = 1) -> None:
        self.node_id = me
        self.placement = placement
        self.epoch = 0
        self.next_pid = 1000
        parts = (PartitionState("a", 0, 1, 0, (1,), (1,)), PartitionState("a", 1, 2, 0, (2,), (2,)))
        self.view = ClusterView((B1, B2), 1, MappingProxyType({"a": TopicInfo("a", parts)}))

    def cluster(self) -> ClusterView:
        return self.view

    def group_coordinator(self, key: str) -> BrokerInfo:
        if key.startswith("__transaction__:"):
            return B1 if self.placement == 1 else B2
        return B2  # every group is on broker 2

    def coordination_epoch(self, key: str) -> int:
        return self.epoch

    async def allocate_producer_id(self) -> int:
        self.next_pid += 1
        return self.next_pid


class Store:
    def __init__(self) -> None:
        self.records: dict[str, tuple[bytes, int]] = {}
        self.writes = 0

    async def read_transaction(self, tid: str) -> tuple[bytes | None, int]:
        return self.records.get(tid, (None, NO_VERSION))

    async def write_transaction(self, tid: str, record: bytes, version: int) -> int:
        if self.records.get(tid, (None, NO_VERSION))[1] != version:
            raise NotCoordinator("written since")
        self.writes += 1
        self.records[tid] = (record, version + 1)
        return version + 1

    async def list_transactions(self) -> list[str]:
        return sorted(self.records)

    def state(self, tid: str) -> TxnState:
        return decode(self.records[tid][0]).state


class Sender:
    """Answers every marker with ``codes`` popped per call (0 when exhausted); ``fail`` calls
    raise first."""

    def __init__(self, codes: list[int] | None = None, fail: int = 0) -> None:
        self.sent: list[tuple[int, WriteTxnMarkersRequest]] = []
        self.codes = codes or []
        self.fail = fail

    async def send(self, broker: BrokerInfo, request: WriteTxnMarkersRequest,
                   timeout_s: float) -> WriteTxnMarkersResponse:
        self.sent.append((broker.node_id, request))
        if self.fail:
            self.fail -= 1
            raise OSError("connection refused")
        code = self.codes.pop(0) if self.codes else 0
        m = request.markers[0]
        return WriteTxnMarkersResponse(markers=[WritableTxnMarkerResult(
            producer_id=m.producer_id, topics=[WritableTxnMarkerTopicResult(
                name=t.name, partitions=[WritableTxnMarkerPartitionResult(p, code)
                                         for p in t.partition_indexes]) for t in m.topics])])


async def settle(txn: TransactionCoordinator) -> None:
    for _ in range(200):
        if not txn._completions:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("completion did not finish")


def run(coro):
    return asyncio.run(coro)


async def end_one(txn: TransactionCoordinator, tid: str, commit: bool) -> None:
    """A new producer of ``tid`` writes to partition a-0 and ends its transaction."""
    pid, epoch = await txn.init_producer_id(tid, 60_000, None)
    await txn.add(tid, pid, epoch, partitions=[A0])
    await txn.end_txn(tid, pid, epoch, commit)


def test_a_committed_transaction_writes_its_markers_where_they_belong():
    async def scenario():
        store, sender = Store(), Sender()
        txn = TransactionCoordinator(Cluster(1), store, sender)
        pid, epoch = await txn.init_producer_id("t", 60_000, None)
        await txn.add("t", pid, epoch, partitions=[A0, A1])
        await txn.add("t", pid, epoch, groups=["g"])
        await txn.end_txn("t", pid, epoch, True)
        assert store.state("t") is TxnState.PREPARE_COMMIT  # the decision, before markers
        await settle(txn)
        assert store.state("t") is TxnState.COMPLETE_COMMIT
        assert store.writes == 5  # EMPTY, ONGOING, +group, PREPARE_COMMIT, COMPLETE_COMMIT
        targets = {(node, t.name, tuple(t.partition_indexes))
                   for node, req in sender.sent for t in req.markers[0].topics}
        assert targets == {(1, "a", (0,)), (2, "a", (1,)), (2, GROUP_MARKER_PREFIX + "g", (0,))}
        assert all(req.markers[0].transaction_result for _, req in sender.sent)
    run(scenario())


def test_markers_are_retried_until_written():
    async def scenario():
        store = Store()
        sender = Sender(codes=[NotLeaderOrFollower.code], fail=1)
        txn = TransactionCoordinator(Cluster(1), store, sender)
        await end_one(txn, "t", False)
        await settle(txn)
        assert store.state("t") is TxnState.COMPLETE_ABORT
        assert len(sender.sent) == 3  # refused connection, NOT_LEADER, written
    run(scenario())


def test_unknown_partition_answers_are_retried_until_the_view_drops_the_topic():
    """A leader that does not list the partition yet (restarted, metadata not loaded) answers
    UNKNOWN_TOPIC_OR_PARTITION: the marker is retried until written, not taken as done (the
    nemesis's seed 930555609 on zk: an abort marker lost so, the next commit exposed the
    aborted records). Only the coordinator's own view dropping the topic ends it unwritten."""
    async def scenario():
        store = Store()
        sender = Sender(codes=[UnknownTopicOrPartition.code] * 2)
        txn = TransactionCoordinator(Cluster(1), store, sender)
        await end_one(txn, "t", False)
        await settle(txn)
        assert store.state("t") is TxnState.COMPLETE_ABORT
        assert len(sender.sent) == 3  # twice unknown, then written

        cluster = Cluster(1)
        sender = Sender(codes=[UnknownTopicOrPartition.code] * 100)  # more than 0.5 s of retries
        txn = TransactionCoordinator(cluster, store, sender)
        await end_one(txn, "u", True)
        await asyncio.sleep(0.5)
        assert store.state("u") is TxnState.PREPARE_COMMIT and len(sender.sent) >= 2
        cluster.view = ClusterView((B1, B2), 1, MappingProxyType({}))  # topic a deleted
        await settle(txn)
        assert store.state("u") is TxnState.COMPLETE_COMMIT
    run(scenario())


def test_a_successor_completes_what_its_predecessor_decided():
    async def scenario():
        store = Store()
        first = TransactionCoordinator(Cluster(1), store, Sender(fail=10**6))
        pid, epoch = await first.init_producer_id("t", 60_000, None)
        await first.add("t", pid, epoch, partitions=[A0])
        await first.end_txn("t", pid, epoch, True)
        await asyncio.sleep(0.05)
        await first.close()  # dies with its markers unwritten
        assert store.state("t") is TxnState.PREPARE_COMMIT
        sender = Sender()
        cluster = Cluster(2, placement=2)
        cluster.epoch = 1
        successor = TransactionCoordinator(cluster, store, sender)
        await successor.tick()
        await settle(successor)
        assert store.state("t") is TxnState.COMPLETE_COMMIT
        assert sender.sent and sender.sent[0][1].markers[0].transaction_result
    run(scenario())


def test_a_timed_out_transaction_is_aborted_with_its_epoch_bumped():
    async def scenario():
        now = [1000.0]
        store, sender = Store(), Sender()
        txn = TransactionCoordinator(Cluster(1), store, sender, clock=lambda: now[0])
        pid, epoch = await txn.init_producer_id("t", 5_000, None)
        await txn.add("t", pid, epoch, partitions=[A0])
        await txn.tick()
        assert store.state("t") is TxnState.ONGOING
        now[0] += 6
        await txn.tick()
        await settle(txn)
        rec = decode(store.records["t"][0])
        assert rec.state is TxnState.COMPLETE_ABORT and rec.producer_epoch == epoch + 1
        assert sender.sent[0][1].markers[0].producer_epoch == epoch + 1
    run(scenario())


def test_init_on_an_open_transaction_answers_concurrent_until_the_abort_is_done():
    async def scenario():
        store, sender = Store(), Sender()
        txn = TransactionCoordinator(Cluster(1), store, sender)
        pid, epoch = await txn.init_producer_id("t", 60_000, None)
        await txn.add("t", pid, epoch, partitions=[A0])
        with pytest.raises(ConcurrentTransactions):
            await txn.init_producer_id("t", 60_000, None)
        await settle(txn)
        pid2, epoch2 = await txn.init_producer_id("t", 60_000, None)
        assert (pid2, epoch2) == (pid, epoch + 2)
    run(scenario())


def test_another_writer_or_another_placement_is_not_coordinator():
    async def scenario():
        store = Store()
        txn = TransactionCoordinator(Cluster(1), store, Sender())
        pid, epoch = await txn.init_producer_id("t", 60_000, None)
        # Another broker moved the record on behind this one's cached version.
        raw, version = store.records["t"]
        store.records["t"] = (raw, version + 1)
        with pytest.raises(NotCoordinator):
            await txn.add("t", pid, epoch, partitions=[A0])
        await txn.add("t", pid, epoch, partitions=[A0])  # reloaded: goes through now
        elsewhere = TransactionCoordinator(Cluster(2, placement=1), store, Sender())
        with pytest.raises(NotCoordinator):
            await elsewhere.init_producer_id("t", 60_000, None)
    run(scenario())
