"""ListOffsets (earliest / latest / by time), DeleteRecords, OffsetCommit and OffsetFetch.

Committed offsets live behind the Coordinator seam (a ZooKeeper znode per partition, or the
DSBS coordinator's local table); the group state machine validates who may commit.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Iterable, Sequence
from typing import Protocol

from brokers.core.coordinator import OffsetAndMetadata, TopicPartition
from brokers.core.errors import (
    InvalidRequest,
    KafkaError,
    OffsetMetadataTooLarge,
    OffsetOutOfRange,
    UnknownTopicOrPartition,
    UnstableOffsetCommit,
)
from brokers.core.handlers.context import CLIENT_LEADER_EPOCH, BrokerContext, Call
from brokers.core.protocol.messages.delete_records import (
    DeleteRecordsPartitionResult,
    DeleteRecordsRequest,
    DeleteRecordsResponse,
    DeleteRecordsTopicResult,
)
from brokers.core.protocol.messages.fetch import READ_COMMITTED
from brokers.core.protocol.messages.list_offsets import (
    ListOffsetsPartitionResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsTopicResponse,
)
from brokers.core.protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
)
from brokers.core.protocol.messages.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchResponse,
    OffsetFetchResponsePartition,
    OffsetFetchResponseTopic,
)
from brokers.core.transactions.offsets import is_pending, parse_pending

LATEST = -1
EARLIEST = -2
HIGH_WATERMARK = -1  # DeleteRecords: up to the high watermark
# offset.metadata.max.bytes: commit metadata is a client's note, not a storage service.
MAX_METADATA_CHARS = 4096


def handle_list_offsets(
    ctx: BrokerContext, call: Call, req: ListOffsetsRequest
) -> ListOffsetsResponse:
    topics = []
    for t in req.topics:
        parts = []
        for p in t.partitions:
            try:
                error = ctx.cached_leader_check(t.name, p.partition_index)
                if error is not None:
                    raise error
                offset, timestamp = _lookup(ctx, t.name, p.partition_index, p.timestamp,
                                            req.isolation_level == READ_COMMITTED)
            except KafkaError as exc:
                parts.append(ListOffsetsPartitionResponse(
                    partition_index=p.partition_index, error_code=exc.code, timestamp=-1,
                    offset=-1, leader_epoch=-1))
            else:
                parts.append(ListOffsetsPartitionResponse(
                    partition_index=p.partition_index, error_code=0, timestamp=timestamp,
                    offset=offset, leader_epoch=CLIENT_LEADER_EPOCH))
        topics.append(ListOffsetsTopicResponse(name=t.name, partitions=parts))
    return ListOffsetsResponse(topics=topics)


def handle_delete_records(
    ctx: BrokerContext, call: Call, req: DeleteRecordsRequest
) -> DeleteRecordsResponse:
    """The leader moves each partition's log start offset (-1: to the high watermark) and
    answers the new one; beyond the high watermark is OFFSET_OUT_OF_RANGE. On a replicated
    partition the high watermark is what the in-sync replicas hold, not the leader's log end
    (records above it may yet be cut by a new leader); the followers move their own start when
    their next fetch brings the leader's (brokers/core/replication/fetcher.py), so deleted
    records do not come back after a failover. Without replication the log end is the high
    watermark."""
    topics = []
    for t in req.topics:
        parts = []
        for p in t.partitions:
            try:
                error = ctx.cached_leader_check(t.name, p.partition_index)
                if error is not None:
                    raise error
                log = ctx.store.get(t.name, p.partition_index)
                if log is None:  # led here, nothing produced yet: nothing to delete
                    if p.offset not in (0, HIGH_WATERMARK):
                        raise OffsetOutOfRange(f"offset {p.offset} outside [0, 0]")
                    low = 0
                else:
                    high = _high_watermark(ctx, t.name, p.partition_index, log.log_end_offset)
                    offset = high if p.offset == HIGH_WATERMARK else p.offset
                    if offset > high:
                        raise OffsetOutOfRange(f"offset {offset} is beyond the high watermark "
                                               f"{high}")
                    low = log.delete_records(offset)
            except KafkaError as exc:
                parts.append(DeleteRecordsPartitionResult(
                    partition_index=p.partition_index, low_watermark=-1, error_code=exc.code))
            else:
                parts.append(DeleteRecordsPartitionResult(
                    partition_index=p.partition_index, low_watermark=low, error_code=0))
        topics.append(DeleteRecordsTopicResult(name=t.name, partitions=parts))
    return DeleteRecordsResponse(topics=topics)


def _high_watermark(ctx: BrokerContext, topic: str, partition: int, log_end: int) -> int:
    """What the in-sync replicas hold: the leader's high watermark on a replicated partition,
    the log end on an unreplicated one."""
    leader = ctx.replicas.leaders.get(TopicPartition(topic, partition)) \
        if ctx.replicas is not None else None
    return log_end if leader is None else leader.high_watermark


def _lookup(ctx: BrokerContext, topic: str, partition: int, timestamp: int,
            read_committed: bool) -> tuple[int, int]:
    log = ctx.store.get(topic, partition)
    start, end = (log.log_start_offset, log.log_end_offset) if log else (0, 0)
    # Consumers see only what the in-sync replicas have, and read_committed ones nothing of a
    # transaction still open (the last stable offset).
    end = _high_watermark(ctx, topic, partition, end)
    if read_committed:
        txns = ctx.producers.txns.get(topic, partition, log)
        if txns is not None:
            end = txns.last_stable_offset(end)
    if timestamp == LATEST:
        return end, -1
    if timestamp == EARLIEST:
        return start, -1
    if timestamp < 0:
        raise InvalidRequest(f"unsupported special timestamp {timestamp}")
    found = log.offset_for_timestamp(timestamp) if log else None
    # No record at or after the time that a consumer may read yet (Kafka also hides one past
    # the high watermark): offset -1, timestamp -1.
    return found if found is not None and found[0] < end else (-1, -1)


class _CommittedPartition(Protocol):
    @property
    def partition_index(self) -> int: ...
    @property
    def committed_offset(self) -> int: ...
    @property
    def committed_leader_epoch(self) -> int: ...
    @property
    def committed_metadata(self) -> str | None: ...


class _CommittedTopic(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def partitions(self) -> Sequence[_CommittedPartition]: ...


def checked_offsets(
    ctx: BrokerContext, topics: Iterable[_CommittedTopic]
) -> tuple[dict[TopicPartition, int], dict[TopicPartition, OffsetAndMetadata]]:
    """An offset commit's partitions (OffsetCommit's and TxnOffsetCommit's alike): the error
    code of each refused one (UNKNOWN_TOPIC_OR_PARTITION, OFFSET_METADATA_TOO_LARGE) and the
    offsets to store for the rest, stamped now."""
    now_ms = int(time.time() * 1000)
    codes: dict[TopicPartition, int] = {}
    offsets: dict[TopicPartition, OffsetAndMetadata] = {}
    view = ctx.coordinator.cluster()
    for t in topics:
        for p in t.partitions:
            tp = TopicPartition(t.name, p.partition_index)
            if view.partition(t.name, p.partition_index) is None:
                codes[tp] = UnknownTopicOrPartition.code
            elif p.committed_metadata is not None and (
                    len(p.committed_metadata) > MAX_METADATA_CHARS):
                codes[tp] = OffsetMetadataTooLarge.code
            else:
                offsets[tp] = OffsetAndMetadata(
                    p.committed_offset, p.committed_metadata, p.committed_leader_epoch, now_ms)
    return codes, offsets


async def handle_offset_commit(
    ctx: BrokerContext, call: Call, req: OffsetCommitRequest
) -> OffsetCommitResponse:
    codes, offsets = checked_offsets(ctx, req.topics)
    error = ctx.not_group_coordinator(req.group_id)
    if error is None and offsets:
        try:
            await ctx.groups.commit(
                group_id=req.group_id, generation_id=req.generation_id_or_member_epoch,
                member_id=req.member_id, offsets=offsets,
                group_instance_id=req.group_instance_id,
            )
        except KafkaError as exc:
            error = exc
    for tp in offsets:
        codes[tp] = error.code if error else 0
    return OffsetCommitResponse(
        topics=[
            OffsetCommitResponseTopic(
                name=t.name,
                partitions=[
                    OffsetCommitResponsePartition(
                        partition_index=p.partition_index,
                        error_code=codes[TopicPartition(t.name, p.partition_index)],
                    )
                    for p in t.partitions
                ],
            )
            for t in req.topics
        ]
    )


def handle_offset_fetch(
    ctx: BrokerContext, call: Call, req: OffsetFetchRequest
) -> OffsetFetchResponse | Awaitable[OffsetFetchResponse]:
    error = ctx.not_group_coordinator(req.group_id)
    if error is not None:
        return _offset_fetch_failed(req, error, call.api_version)
    return _offset_fetch(ctx, req, call.api_version)


async def _offset_fetch(
    ctx: BrokerContext, req: OffsetFetchRequest, version: int
) -> OffsetFetchResponse:
    wanted = None if req.topics is None else [
        TopicPartition(t.name, p) for t in req.topics for p in t.partition_indexes
    ]
    # A transaction's offsets wait under pending keys (brokers/core/transactions/offsets.py):
    # never shown, and a partition with one is UNSTABLE_OFFSET_COMMIT to a client asking for
    # stable offsets only (KIP-447), which asks again.
    stable_only = version >= 7 and req.require_stable
    try:
        committed = await ctx.coordinator.fetch_offsets(
            req.group_id, None if stable_only else wanted)
    except KafkaError as exc:
        return _offset_fetch_failed(req, exc, version)
    unstable = {parsed[1] for parsed in map(parse_pending, committed) if parsed is not None}
    by_topic: dict[str, list[OffsetFetchResponsePartition]] = {}
    for tp in wanted if wanted is not None else sorted(committed):
        if is_pending(tp):
            continue
        om = committed.get(tp)
        by_topic.setdefault(tp.topic, []).append(OffsetFetchResponsePartition(
            partition_index=tp.partition,
            committed_offset=om.offset if om else -1,
            committed_leader_epoch=om.leader_epoch if om else -1,
            metadata=(om.metadata if om and om.metadata is not None else ""),
            error_code=UnstableOffsetCommit.code if stable_only and tp in unstable else 0,
        ))
    return OffsetFetchResponse(
        topics=[OffsetFetchResponseTopic(name=n, partitions=ps) for n, ps in by_topic.items()],
        error_code=0,
    )


def _offset_fetch_failed(
    req: OffsetFetchRequest, error: KafkaError, version: int
) -> OffsetFetchResponse:
    # v1 has no top-level error code: the error goes on every partition the client named.
    topics = [
        OffsetFetchResponseTopic(
            name=t.name,
            partitions=[
                OffsetFetchResponsePartition(
                    partition_index=p, committed_offset=-1, committed_leader_epoch=-1,
                    metadata="", error_code=error.code)
                for p in t.partition_indexes
            ],
        )
        for t in req.topics or []
    ]
    return OffsetFetchResponse(topics=topics if version < 2 else [], error_code=error.code)
