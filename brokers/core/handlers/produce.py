"""Produce: append the client's record batches to partition logs, untouched but for offsets.

The hot path of the benchmark. Per partition: one leadership check (cache, or the coordination
store under the per_request policy), one ``append`` that validates batch headers and CRCs and
writes the bytes, one wake-up of waiting fetches. No per-record work happens here.

Idempotent producers (producerId >= 0 in the batch header) also go through the partition's
idempotence table (``producer_state.py``): a retried batch gets its first copy's offset back
instead of a second copy. Whether a batch is idempotent is one byte of its header, the sign
byte of producerId, so the producers of the benchmark (producerId -1) pay one index operation.

A partition with more than one replica that this broker leads (``ctx.replicas``; one dict
lookup, a miss for every partition of replication factor 1) gets its leader epoch stamped into
the batches, the min.insync.replicas check for acks=-1, and with acks=-1 an answer that waits
until the in-sync replicas have the batch (brokers/core/replication/manager.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from brokers.core.coordinator import TopicPartition
from brokers.core.errors import (
    CorruptMessage,
    InvalidRecord,
    InvalidRequiredAcks,
    KafkaError,
    NotEnoughReplicasAfterAppend,
    NotLeaderOrFollower,
)
from brokers.core.handlers.context import CLIENT_LEADER_EPOCH, BrokerContext, Call
from brokers.core.logs import PartitionLogLike
from brokers.core.protocol.messages.produce import (
    PartitionProduceResponse,
    ProduceRequest,
    ProduceResponse,
    TopicProduceResponse,
)
from brokers.core.protocol.records import (
    HEADER_SIZE,
    LAST_OFFSET_DELTA,
    LAST_OFFSET_DELTA_AT,
    LOG_OVERHEAD,
    OFFSET_AND_LENGTH,
    PRODUCER_AT,
    PRODUCER_FIELDS,
)
from brokers.core.storage import AppendResult
from brokers.core.storage.batch_header import check_batch

_unpack_producer = PRODUCER_FIELDS.unpack_from
_unpack_last_delta = LAST_OFFSET_DELTA.unpack_from
_unpack_length = OFFSET_AND_LENGTH.unpack_from


def handle_produce(
    ctx: BrokerContext, call: Call, req: ProduceRequest
) -> ProduceResponse | Awaitable[ProduceResponse | None] | None:
    if req.acks not in (0, 1, -1):
        return _all_failed(req, InvalidRequiredAcks(f"acks={req.acks}"))
    if ctx.per_request:
        return _produce_checked(ctx, req)
    return _append_all(ctx, req, ctx.cached_leader_check)


async def _produce_checked(ctx: BrokerContext, req: ProduceRequest) -> ProduceResponse | None:
    # Ask the coordination store first (the per_request policy), then append exactly as the
    # cached path does.
    errors = {
        (t.name, pd.index): await ctx.fresh_leader_check(t.name, pd.index)
        for t in req.topic_data
        for pd in t.partition_data
    }
    result = _append_all(ctx, req, lambda topic, partition: errors[(topic, partition)])
    return result if result is None or isinstance(result, ProduceResponse) else await result


def _append_all(
    ctx: BrokerContext, req: ProduceRequest,
    leader_error: Callable[[str, int], KafkaError | None],
) -> ProduceResponse | Awaitable[ProduceResponse | None] | None:
    responses = []
    waits: list[tuple[PartitionProduceResponse, asyncio.Future[KafkaError | None]]] = []
    for topic in req.topic_data:
        name = topic.name
        parts = [
            _append(ctx, req, name, pd.index, pd.records, leader_error(name, pd.index), waits)
            for pd in topic.partition_data
        ]
        responses.append(TopicProduceResponse(name=name, partition_responses=parts))
    if req.acks == 0:
        return None
    response = ProduceResponse(responses=responses)
    return _when_replicated(response, waits) if waits else response


async def _when_replicated(
    response: ProduceResponse,
    waits: list[tuple[PartitionProduceResponse, asyncio.Future[KafkaError | None]]],
) -> ProduceResponse:
    """acks=-1 on replicated partitions: answer once every in-sync replica has each batch (or
    with the error that ended the wait: timeout, leadership moved, ISR below the minimum)."""
    for part, fut in waits:
        error = await fut
        if error is not None:
            part.error_code = error.code
            part.error_message = error.message or None
            if not isinstance(error, NotEnoughReplicasAfterAppend):
                part.base_offset = -1  # the batch is in no ISR's keeping: say nothing of it
    return response


def _append(
    ctx: BrokerContext, req: ProduceRequest, topic: str, partition: int, records,
    error: KafkaError | None,
    waits: list[tuple[PartitionProduceResponse, asyncio.Future[KafkaError | None]]],
) -> PartitionProduceResponse:
    if error is None:
        try:
            if not records:
                raise CorruptMessage("produce request without record batches")
            log = ctx.store.get_or_create(topic, partition)
            # Only partitions with more than one replica are in the replica manager.
            replicas = ctx.replicas
            leader = None if replicas is None else replicas.leaders.get(
                TopicPartition(topic, partition))
            if leader is None or replicas is None:
                if replicas is not None and replicas.following and (
                        TopicPartition(topic, partition) in replicas.following):
                    # The store already names this broker (the per_request check) but its
                    # view has not caught up: appending unreplicated would ack too early.
                    raise NotLeaderOrFollower(
                        f"{topic}-{partition}: this broker is taking over its leadership")
                epoch = CLIENT_LEADER_EPOCH
            else:
                epoch = leader.leader_epoch
                if req.acks == -1:
                    leader.check_min_isr(replicas.min_isr(topic))
            # producerId's first byte is below 0x80 exactly when producerId >= 0 (idempotent).
            if len(records) > PRODUCER_AT and records[PRODUCER_AT] < 0x80:
                result = _append_idempotent(ctx, topic, partition, log, records, epoch)
            else:
                result = log.append(records, epoch)
        except KafkaError as exc:
            error = exc
        else:
            tp = TopicPartition(topic, partition)
            ctx.notifier.notify(tp)
            part = PartitionProduceResponse(
                index=partition, error_code=0, base_offset=result.base_offset,
                log_append_time_ms=-1, log_start_offset=result.log_start_offset,
            )
            if leader is not None and replicas is not None:
                fut = replicas.appended(tp, leader, result.last_offset + 1, req.acks,
                                        req.timeout_ms)
                if fut is not None:
                    waits.append((part, fut))
            return part
    return PartitionProduceResponse(
        index=partition, error_code=error.code, base_offset=-1, log_append_time_ms=-1,
        log_start_offset=-1, error_message=error.message or None,
    )


def _append_idempotent(
    ctx: BrokerContext, topic: str, partition: int, log: PartitionLogLike, records,
    leader_epoch: int,
) -> AppendResult:
    """Append a batch of an idempotent producer, or answer a retried one with its offset."""
    view = records if type(records) is memoryview else memoryview(records)
    if view.itemsize != 1 or view.ndim != 1:
        view = view.cast("B")
    # Produce v3+ carries one batch per partition (Kafka refuses more): the sequence check
    # below is about that one batch.
    if len(view) < HEADER_SIZE or _unpack_length(view, 0)[1] + LOG_OVERHEAD != len(view):
        check_batch(view, 0, ctx.config.storage.max_batch_bytes)  # the precise error if bad
        raise InvalidRecord("an idempotent produce carries exactly one batch per partition")
    producer_id, epoch, first_seq = _unpack_producer(view, PRODUCER_AT)
    if epoch < 0 or first_seq < 0:
        raise InvalidRecord(
            f"producer {producer_id} sent epoch {epoch} and base sequence {first_seq}")
    last_delta = _unpack_last_delta(view, LAST_OFFSET_DELTA_AT)[0]
    table = ctx.producers.get(topic, partition, log)
    duplicate_of = table.check(producer_id, epoch, first_seq, last_delta)
    if duplicate_of is not None:
        # Validated like any batch, so a corrupt copy is refused rather than acknowledged.
        check_batch(view, 0, ctx.config.storage.max_batch_bytes)
        return AppendResult(duplicate_of, duplicate_of + last_delta, log.log_start_offset)
    result = log.append(view, leader_epoch)
    table.record(producer_id, epoch, first_seq, last_delta, result.base_offset)
    return result


def _all_failed(req: ProduceRequest, error: KafkaError) -> ProduceResponse:
    return ProduceResponse(
        responses=[
            TopicProduceResponse(
                name=t.name,
                partition_responses=[
                    PartitionProduceResponse(
                        index=p.index, error_code=error.code, base_offset=-1,
                        log_append_time_ms=-1, log_start_offset=-1,
                        error_message=error.message or None,
                    )
                    for p in t.partition_data
                ],
            )
            for t in req.topic_data
        ]
    )
