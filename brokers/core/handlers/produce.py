"""Produce: append the client's record batches to partition logs, untouched but for offsets.

The hot path of the benchmark. Per partition: one leadership check (cache, or the coordination
store under the per_request policy), one ``append`` that validates batch headers and CRCs and
writes the bytes, one wake-up of waiting fetches. No per-record work happens here for ordinary
topics: each topic's ``ProduceRules`` (brokers/core/topic_config.py) are looked up once per topic
per request, a miss for every topic that sets none. A topic with rules gets its batches checked
against its own ``max.message.bytes`` (MESSAGE_TOO_LARGE) and, when its ``cleanup.policy`` holds
compact, every record for a key (INVALID_RECORD with KIP-467's ``record_errors`` naming the keyless
ones, brokers/core/record_checks.py): the one case where records are read, as Kafka reads them.
The checks run on the leader only, before the append; followers copy what their leader accepted.

Idempotent producers (producerId >= 0 in the batch header) go through the partition's
idempotence table instead (``ProducerStates.append``, brokers/core/producer_state.py): a retried
batch gets its first copy's offset back instead of a second copy. Whether a batch is idempotent
is one byte of its header, the sign byte of producerId, so the producers of the benchmark
(producerId -1) pay one index operation.

Replication is asked once per partition (``ReplicaManager.produce_leader``; one dict lookup, a
miss for every partition of replication factor 1): a partition with more than one replica that
this broker leads gets its leader epoch stamped into the batches, the min.insync.replicas check
for acks=-1, and with acks=-1 an answer that waits until the in-sync replicas have the batch
(brokers/core/replication/manager.py). A partition the leadership check says has several
replicas is never appended unreplicated: until the replica manager has taken its leadership,
the answer is NOT_LEADER_OR_FOLLOWER (retriable).

Produce v0-2 (magic 0/1 batches) is advertised, for librdkafka's sake, but not served: the
dispatcher hands such a request to ``answer_unserved``, which fails every partition with
UNSUPPORTED_VERSION.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from brokers.core.coordinator import TopicPartition
from brokers.core.errors import (
    CorruptMessage,
    InvalidRequiredAcks,
    KafkaError,
    MessageTooLarge,
    NotEnoughReplicasAfterAppend,
    UnsupportedVersion,
)
from brokers.core.handlers.context import CLIENT_LEADER_EPOCH, BrokerContext, Call
from brokers.core.protocol.messages.produce import (
    BatchIndexAndErrorMessage,
    PartitionProduceResponse,
    ProduceRequest,
    ProduceResponse,
    TopicProduceResponse,
)
from brokers.core.protocol.records import PRODUCER_AT
from brokers.core.record_checks import RecordsRejected, check_keys
from brokers.core.storage.batch_header import validate_batches
from brokers.core.topic_config import ProduceRules

log = logging.getLogger("twinbench.produce")


def handle_produce(
    ctx: BrokerContext, call: Call, req: ProduceRequest
) -> ProduceResponse | Awaitable[ProduceResponse | None] | None:
    if req.acks not in (0, 1, -1):
        return _all_failed(req, InvalidRequiredAcks(f"acks={req.acks}"))
    if ctx.per_request:
        return _produce_checked(ctx, req)
    return _append_all(ctx, req, ctx.cached_leader_state)


async def _produce_checked(ctx: BrokerContext, req: ProduceRequest) -> ProduceResponse | None:
    # Ask the coordination store first (the per_request policy), then append exactly as the
    # cached path does.
    states = {
        (t.name, pd.index): await ctx.fresh_leader_state(t.name, pd.index)
        for t in req.topic_data
        for pd in t.partition_data
    }
    result = _append_all(ctx, req, lambda topic, partition: states[(topic, partition)])
    return result if result is None or isinstance(result, ProduceResponse) else await result


def _append_all(
    ctx: BrokerContext, req: ProduceRequest,
    leader_state: Callable[[str, int], tuple[KafkaError | None, int]],
) -> ProduceResponse | Awaitable[ProduceResponse | None] | None:
    responses = []
    waits: list[tuple[PartitionProduceResponse, asyncio.Future[KafkaError | None]]] = []
    rules = ctx.topic_rules
    for topic in req.topic_data:
        name = topic.name
        topic_rules = rules.get(name)
        parts = [
            _append(ctx, req, name, pd.index, pd.records, *leader_state(name, pd.index), waits,
                    topic_rules)
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
    error: KafkaError | None, replica_count: int,
    waits: list[tuple[PartitionProduceResponse, asyncio.Future[KafkaError | None]]],
    rules: ProduceRules | None = None,
) -> PartitionProduceResponse:
    if error is None:
        try:
            if not records:
                raise CorruptMessage("produce request without record batches")
            plog = ctx.store.get_or_create(topic, partition)
            tp = TopicPartition(topic, partition)
            replicas = ctx.replicas
            leader = (None if replicas is None
                      else replicas.produce_leader(tp, req.acks, replica_count))
            epoch = CLIENT_LEADER_EPOCH if leader is None else leader.leader_epoch
            if rules is not None:  # after the min.insync check, before the append: Kafka's order
                _check_rules(ctx, rules, records, topic, partition)
            # producerId's first byte is below 0x80 exactly when producerId >= 0 (idempotent).
            if len(records) > PRODUCER_AT and records[PRODUCER_AT] < 0x80:
                result = ctx.producers.append(topic, partition, plog, records, epoch,
                                              ctx.config.storage.max_batch_bytes)
            else:
                result = plog.append(records, epoch)
        except KafkaError as exc:
            error = exc
        else:
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
    part = PartitionProduceResponse(
        index=partition, error_code=error.code, base_offset=-1, log_append_time_ms=-1,
        log_start_offset=-1, error_message=error.message or None,
    )
    if isinstance(error, RecordsRejected):
        part.record_errors = [BatchIndexAndErrorMessage(e.batch_index, e.message)
                              for e in error.record_errors]
    return part


def _check_rules(ctx: BrokerContext, rules: ProduceRules, records, topic: str,
                 partition: int) -> None:
    """A topic's own produce checks (``ProduceRules``); raises the error the partition gets."""
    view = records if isinstance(records, memoryview) else memoryview(records)
    # The batches' own errors (CRC, framing) come first, as the append would raise them.
    batches = validate_batches(view, ctx.config.storage.max_batch_bytes)
    limit = rules.max_message_bytes
    if limit is not None:
        for b in batches:
            if b.size > limit:
                raise MessageTooLarge(f"a batch of {b.size} bytes for {topic}-{partition} "
                                      f"exceeds the topic's max.message.bytes={limit}")
    if rules.keys_required:
        check_keys(view, topic, partition)


def answer_unserved(req: ProduceRequest, version: int, client_id: str | None
                    ) -> ProduceResponse | None:
    """Produce v0-2 (magic 0/1), decoded only to name its partitions: each one answered with
    UNSUPPORTED_VERSION (nothing with acks=0). The fields v0-2 encode are those of the answer
    the dispatcher used to build itself: index, error code, base offset -1 and, from v2, log
    append time -1."""
    log.info("%s sent Produce v%d (magic 0/1); answering UNSUPPORTED_VERSION", client_id,
             version)
    if req.acks == 0:
        return None
    return _all_failed(req, UnsupportedVersion(f"Produce v{version} (magic 0/1) is not served"))


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
