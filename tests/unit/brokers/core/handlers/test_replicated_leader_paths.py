"""What a leader of a replicated partition does before its followers have caught up: never
append unreplicated, never delete beyond the high watermark.

Produce (issue 31): the zk twin under per_request checks asks ZooKeeper whether it leads a
partition, and ZooKeeper can say so for a topic just created before the broker's replica manager
has taken that leadership. The produce then took the path of a replication-factor-1 partition:
no min.insync check, acknowledged at once, lost if that broker died before the followers copied
it. Both leadership paths (the store asked on every request, the cached view) now answer
NOT_LEADER_OR_FOLLOWER until the replica manager leads, and a client retries.

DeleteRecords moved the leader's log start to its log end, past records the in-sync replicas
did not all hold (a new leader may cut them); it stops at the high watermark now.

The coordinator here is an in-memory stand-in (what the handlers read of it: one partition's
state); the store, the replica manager, the leader's partition state and the handlers are the
product's.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from brokers.core.config import BrokerConfig
from brokers.core.coordinator import ClusterView, PartitionState, TopicInfo, TopicPartition
from brokers.core.errors import NotLeaderOrFollower, OffsetOutOfRange
from brokers.core.handlers.context import BrokerContext, Call
from brokers.core.handlers.offsets import handle_delete_records
from brokers.core.handlers.produce import handle_produce
from brokers.core.notify import AppendNotifier
from brokers.core.protocol.messages.delete_records import (
    DeleteRecordsPartition,
    DeleteRecordsRequest,
    DeleteRecordsTopic,
)
from brokers.core.protocol.messages.produce import (
    PartitionProduceData,
    ProduceRequest,
    ProduceResponse,
    TopicProduceData,
)
from brokers.core.replication.config import ReplicationConfig
from brokers.core.replication.leader import LeaderPartition
from brokers.core.replication.manager import ReplicaManager
from brokers.core.storage.manager import LogManager
from tests.support.record_builder import build_batch

TOPIC = "fresh"


class StoreSaysILead:
    """The coordination store's answer for a topic it has just created: this broker (0) leads
    partition 0 of ``replicas``; the cached view knows the topic only when ``cached``."""

    def __init__(self, replicas: tuple[int, ...], *, remote: bool, cached: bool) -> None:
        self.state = PartitionState(TOPIC, 0, leader=0, leader_epoch=0, replicas=replicas,
                                    isr=replicas)
        self.view_is_store = not remote
        self._cached = cached

    def cluster(self) -> ClusterView:
        topics = {TOPIC: TopicInfo(TOPIC, (self.state,))} if self._cached else {}
        return ClusterView(brokers=(), controller_id=0, topics=topics)

    async def partition_state(self, topic: str, partition: int, fresh: bool = False
                              ) -> PartitionState | None:
        return self.state if (topic, partition) == (TOPIC, 0) else None


def broker(tmp_path: Path, replicas: tuple[int, ...], policy: str) -> BrokerContext:
    """Broker 0's handlers' context: its store, its replica manager (leading nothing yet)."""
    coordinator = StoreSaysILead(replicas, remote=policy == "per_request",
                                 cached=policy == "cached")
    config = BrokerConfig(node_id=0, host="127.0.0.1", port=0, data_dir=tmp_path,
                          metadata_check=policy)  # type: ignore[arg-type]
    store = LogManager(tmp_path / "logs", config.storage)
    notifier = AppendNotifier()
    ctx = BrokerContext(config, coordinator, store, None, notifier)  # type: ignore[arg-type]
    ctx.replicas = ReplicaManager(0, ReplicationConfig(), coordinator,  # type: ignore[arg-type]
                                  store, notifier, lambda t, p: None)
    return ctx


def produce(tmp_path: Path, replicas: tuple[int, ...], policy: str) -> tuple[int, int]:
    """(error code, records in the log) after one acks=all produce to a broker whose replica
    manager has not taken the partition's leadership."""
    ctx = broker(tmp_path, replicas, policy)
    store = ctx.store
    assert ctx.replicas is not None
    assert ctx.replicas.leaders == {}  # it has not taken the leadership yet
    req = ProduceRequest(acks=-1, timeout_ms=1000, topic_data=[TopicProduceData(
        TOPIC, [PartitionProduceData(0, build_batch([(None, b"v")]))])])

    async def run() -> ProduceResponse:
        reply = handle_produce(ctx, Call(9, "test", "127.0.0.1:1"), req)
        out = await reply if asyncio.iscoroutine(reply) else reply
        assert isinstance(out, ProduceResponse)
        return out

    response = asyncio.run(run())
    (part,) = response.responses[0].partition_responses
    end = store.get_or_create(TOPIC, 0).log_end_offset
    store.close()
    return part.error_code, end


@pytest.mark.filesystem
@pytest.mark.parametrize("policy", ["per_request", "cached"])
def test_a_replicated_partition_waits_for_its_replica_manager(tmp_path: Path,
                                                              policy: str) -> None:
    error, end = produce(tmp_path, (0, 1, 2), policy)
    assert error == NotLeaderOrFollower.code and end == 0  # nothing acknowledged, nothing kept


@pytest.mark.filesystem
@pytest.mark.parametrize("policy", ["per_request", "cached"])
def test_replication_factor_one_is_appended_as_it_comes(tmp_path: Path, policy: str) -> None:
    assert produce(tmp_path, (0,), policy) == (0, 1)


@pytest.mark.filesystem
def test_delete_records_stops_at_the_high_watermark_of_a_replicated_partition(
        tmp_path: Path) -> None:
    ctx = broker(tmp_path, (0, 1, 2), "cached")
    plog = ctx.store.get_or_create(TOPIC, 0)
    for i in range(10):
        plog.append(build_batch([(None, b"%d" % i)]), 0)
    # Broker 0 leads; its followers hold 6 of the 10 records (the high watermark).
    assert ctx.replicas is not None
    ctx.replicas.leaders[TopicPartition(TOPIC, 0)] = LeaderPartition(
        0, 0, (0, 1, 2), (0, 1, 2), log_end_offset=10, high_watermark=6, now_ms=0)

    def delete(offset: int) -> tuple[int, int]:
        req = DeleteRecordsRequest(topics=[DeleteRecordsTopic(
            name=TOPIC, partitions=[DeleteRecordsPartition(partition_index=0, offset=offset)])])
        got = handle_delete_records(ctx, Call(2, "test", "127.0.0.1:1"), req)
        part = got.topics[0].partitions[0]
        return part.error_code, part.low_watermark

    assert delete(8) == (OffsetOutOfRange.code, -1)  # the log end would allow it
    assert plog.log_start_offset == 0
    assert delete(-1) == (0, 6)  # "everything": what the in-sync replicas hold
    assert plog.log_start_offset == 6
    ctx.store.close()
