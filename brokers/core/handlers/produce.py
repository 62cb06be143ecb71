"""Produce: append the client's record batches to partition logs, untouched but for offsets.

The hot path of the benchmark. Per partition: one leadership check (cache, or the coordination
store under the per_request policy), one ``append`` that validates batch headers and CRCs and
writes the bytes, one wake-up of waiting fetches. No per-record work happens here.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from brokers.core.coordinator import TopicPartition
from brokers.core.errors import CorruptMessage, InvalidRequiredAcks, KafkaError
from brokers.core.handlers.context import CLIENT_LEADER_EPOCH, BrokerContext, Call
from brokers.core.protocol.messages.produce import (
    PartitionProduceResponse,
    ProduceRequest,
    ProduceResponse,
    TopicProduceResponse,
)


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
    return _append_all(ctx, req, lambda topic, partition: errors[(topic, partition)])


def _append_all(
    ctx: BrokerContext, req: ProduceRequest,
    leader_error: Callable[[str, int], KafkaError | None],
) -> ProduceResponse | None:
    responses = []
    for topic in req.topic_data:
        name = topic.name
        parts = [
            _append(ctx, name, pd.index, pd.records, leader_error(name, pd.index))
            for pd in topic.partition_data
        ]
        responses.append(TopicProduceResponse(name=name, partition_responses=parts))
    return None if req.acks == 0 else ProduceResponse(responses=responses)


def _append(
    ctx: BrokerContext, topic: str, partition: int, records, error: KafkaError | None
) -> PartitionProduceResponse:
    if error is None:
        try:
            if not records:
                raise CorruptMessage("produce request without record batches")
            log = ctx.store.get_or_create(topic, partition)
            result = log.append(records, CLIENT_LEADER_EPOCH)
        except KafkaError as exc:
            error = exc
        else:
            ctx.notifier.notify(TopicPartition(topic, partition))
            return PartitionProduceResponse(
                index=partition, error_code=0, base_offset=result.base_offset,
                log_append_time_ms=-1, log_start_offset=result.log_start_offset,
            )
    return PartitionProduceResponse(
        index=partition, error_code=error.code, base_offset=-1, log_append_time_ms=-1,
        log_start_offset=-1, error_message=error.message or None,
    )


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
