"""Fetch: return stored batches as they are, long-polling when there is too little data.

Every partition the request names appears in the response (kafka-python discards a response
that omits one). The first partition with data always gets at least one whole batch, even past
``max_bytes``, so a consumer can never be stuck behind a batch larger than its limits; after
that, partitions stop receiving data once the response-level ``max_bytes`` is spent.

Partitions with more than one replica (``ctx.replicas.leaders``): a follower's fetch
(``replica_id`` >= 0) reports its log end to the leader and reads past the high watermark; a
consumer reads only batches below it, and the answer's high watermark is the replicated one.
A follower's ``current_leader_epoch`` older than the leader's is FENCED_LEADER_EPOCH, a newer
one UNKNOWN_LEADER_EPOCH. Consumers' epochs are not checked: Metadata tells clients -1
(``CLIENT_LEADER_EPOCH``), and librdkafka still sends an epoch it inferred, which would fence it
for good. With replication factor 1 the high watermark is the log end, as before.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable

from brokers.core.coordinator import TopicPartition
from brokers.core.errors import (
    FencedLeaderEpoch,
    KafkaError,
    NotLeaderOrFollower,
    OffsetOutOfRange,
    UnknownLeaderEpoch,
)
from brokers.core.handlers.context import BrokerContext, Call
from brokers.core.protocol.messages.fetch import (
    READ_COMMITTED,
    AbortedTransaction,
    FetchableTopicResponse,
    FetchRequest,
    FetchResponse,
    PartitionData,
)
from brokers.core.protocol.records import iter_batches
from brokers.core.replication.leader import LeaderPartition

# Ceiling on one response, whatever the client asks (Kafka's fetch.max.bytes default): a client
# asking for 2 GiB must not make the broker read 2 GiB into memory.
MAX_RESPONSE_BYTES = 50 * 1024 * 1024


def handle_fetch(
    ctx: BrokerContext, call: Call, req: FetchRequest
) -> FetchResponse | Awaitable[FetchResponse]:
    if ctx.per_request:
        return _fetch_checked(ctx, req)
    errors = {
        (t.topic, p.partition): ctx.cached_leader_check(t.topic, p.partition)
        for t in req.topics
        for p in t.partitions
    }
    return _answer_or_wait(ctx, req, errors)


async def _fetch_checked(ctx: BrokerContext, req: FetchRequest) -> FetchResponse:
    errors = {}
    for t in req.topics:
        for p in t.partitions:
            errors[(t.topic, p.partition)] = await ctx.fresh_leader_check(t.topic, p.partition)
    result = _answer_or_wait(ctx, req, errors)
    return result if isinstance(result, FetchResponse) else await result


def _answer_or_wait(
    ctx: BrokerContext, req: FetchRequest, errors: dict[tuple[str, int], KafkaError | None]
) -> FetchResponse | Awaitable[FetchResponse]:
    response, size = _read(ctx, req, errors)
    # Waiting only makes sense when some partition could receive data; otherwise answer now so
    # the client sees its errors without a max_wait_ms delay.
    waitable = any(e is None for e in errors.values())
    if size >= req.min_bytes or req.max_wait_ms <= 0 or not waitable:
        return response
    return _long_poll(ctx, req, errors)


async def _long_poll(
    ctx: BrokerContext, req: FetchRequest, errors: dict[tuple[str, int], KafkaError | None]
) -> FetchResponse:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + min(req.max_wait_ms, ctx.config.max_fetch_wait_ms) / 1000
    partitions = [TopicPartition(t, p) for (t, p), e in errors.items() if e is None]
    while True:
        woke = await ctx.notifier.wait_any(partitions, deadline - loop.time())
        response, size = _read(ctx, req, errors)
        if size >= req.min_bytes or not woke or loop.time() >= deadline:
            return response


def _read(
    ctx: BrokerContext, req: FetchRequest, errors: dict[tuple[str, int], KafkaError | None]
) -> tuple[FetchResponse, int]:
    budget = min(req.max_bytes, MAX_RESPONSE_BYTES) if req.max_bytes > 0 else MAX_RESPONSE_BYTES
    total = 0
    replicas = ctx.replicas
    txn_tables = ctx.producers.txns
    topics = []
    for t in req.topics:
        parts = []
        for p in t.partitions:
            error = errors[(t.topic, p.partition)]
            if error is not None:
                parts.append(_failed(p.partition, error))
                continue
            log = ctx.store.get(t.topic, p.partition)
            if log is None:  # led here but nothing produced yet: an empty log
                if p.fetch_offset != 0:
                    parts.append(_failed(p.partition, OffsetOutOfRange(
                        f"offset {p.fetch_offset} outside [0, 0]")))
                else:
                    parts.append(PartitionData(
                        partition_index=p.partition, high_watermark=0, last_stable_offset=0,
                        log_start_offset=0, records=b"",
                    ))
                continue
            limit = min(p.partition_max_bytes, budget - total)
            leader = None if replicas is None else replicas.leaders.get(
                TopicPartition(t.topic, p.partition))
            try:
                if leader is not None and replicas is not None:
                    if req.replica_id >= 0:
                        _check_epoch(leader, p.current_leader_epoch)
                        replicas.replica_fetched(TopicPartition(t.topic, p.partition),
                                                 req.replica_id, p.fetch_offset)
                elif req.replica_id >= 0:
                    raise NotLeaderOrFollower(
                        f"{t.topic}-{p.partition} is not a replicated partition led here")
                elif replicas is not None and replicas.following and (
                        TopicPartition(t.topic, p.partition) in replicas.following):
                    # Led here per the store (per_request) but not yet per the view: no high
                    # watermark to cap the read at yet.
                    raise NotLeaderOrFollower(
                        f"{t.topic}-{p.partition}: this broker is taking over its leadership")
                # limit <= 0 once the budget is spent: only the first data-bearing partition
                # may exceed it (read returns at least one batch), the rest get nothing.
                data = log.read(p.fetch_offset, limit) if (limit > 0 or total == 0) else b""
            except KafkaError as exc:
                parts.append(_failed(p.partition, exc))
                continue
            if leader is None:
                end = log.log_end_offset
            else:
                end = leader.high_watermark
                if req.replica_id < 0 and data:
                    data = _below(data, end)
            stable, aborted = end, None
            if req.replica_id < 0:
                txns = txn_tables.get(t.topic, p.partition, log)
                if txns is not None:
                    # Aborted transactions retention (or DeleteRecords) removed go, so the
                    # list does not grow with every abort the partition ever saw.
                    txns.drop_before(log.log_start_offset)
                    stable = txns.last_stable_offset(end)
                    if req.isolation_level == READ_COMMITTED:
                        # Nothing of an open transaction, and the aborted ones the client
                        # must drop from what it gets.
                        if data and stable < end:
                            data = _below(data, stable)
                        aborted = [AbortedTransaction(a.producer_id, a.first_offset)
                                   for a in txns.aborted_between(p.fetch_offset, stable)]
            total += len(data)
            parts.append(PartitionData(
                partition_index=p.partition, high_watermark=end, last_stable_offset=stable,
                log_start_offset=log.log_start_offset, aborted_transactions=aborted,
                records=data,
            ))
        topics.append(FetchableTopicResponse(topic=t.topic, partitions=parts))
    return FetchResponse(responses=topics), total


def _failed(partition: int, error: KafkaError) -> PartitionData:
    return PartitionData(
        partition_index=partition, error_code=error.code, high_watermark=-1,
        last_stable_offset=-1, log_start_offset=-1, records=b"",
    )


def _check_epoch(leader: LeaderPartition, current_leader_epoch: int) -> None:
    """The asker's idea of the leader epoch (-1: none) against this leader's."""
    if current_leader_epoch < 0 or current_leader_epoch == leader.leader_epoch:
        return
    if current_leader_epoch < leader.leader_epoch:
        raise FencedLeaderEpoch(
            f"epoch {current_leader_epoch} is older than the leader's {leader.leader_epoch}")
    raise UnknownLeaderEpoch(
        f"epoch {current_leader_epoch} is newer than the leader's {leader.leader_epoch}")


def _below(data: bytes | memoryview, high_watermark: int) -> bytes | memoryview:
    """The whole batches of ``data`` below ``high_watermark`` (always a batch boundary: the
    leader's and every follower's log ends are), walking headers only."""
    cut = 0
    for header in iter_batches(data):
        if header.base_offset >= high_watermark:
            break
        cut = header.position + header.size
    return data if cut == len(data) else memoryview(data)[:cut]
