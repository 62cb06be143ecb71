"""The transaction APIs: AddPartitionsToTxn, AddOffsetsToTxn and EndTxn (answered by the
transaction coordinator, brokers/core/transactions/coordinator.py), TxnOffsetCommit (by the
group's coordinator: the offsets wait pending for the marker, brokers/core/transactions/
offsets.py) and WriteTxnMarkers.

WriteTxnMarkers: a transaction coordinator ends a transaction in the partitions led here.

Each marker names a producer, its epoch, commit or abort, the coordinator's epoch and the
partitions; each partition led here gets the control batch (brokers/core/transactions/markers.py)
through the idempotence table, which fences a marker older than the producer's epoch
(INVALID_PRODUCER_EPOCH) and lets a newer one fence the producer's late batches. A replicated
partition answers once its in-sync replicas hold the marker, as Kafka appends markers with
acks=-1: the coordinator may then call the transaction complete, and no leader elected from the
ISR can lose the marker. A partition not led here: NOT_LEADER_OR_FOLLOWER, which the
coordinator retries after looking the leader up again. A marker "topic" named
``GROUP_MARKER_PREFIX + group`` ends the transaction's offsets in that group, on the group's
coordinator (NOT_COORDINATOR elsewhere).
"""

from __future__ import annotations

import asyncio
import time

from brokers.core.coordinator import TopicPartition
from brokers.core.errors import (
    KafkaError,
    OperationNotAttempted,
    UnknownTopicOrPartition,
)
from brokers.core.handlers.context import CLIENT_LEADER_EPOCH, BrokerContext, Call, fenced_code
from brokers.core.handlers.offsets import checked_offsets
from brokers.core.protocol.messages.transactions import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnPartitionResult,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    AddPartitionsToTxnTopicResult,
    EndTxnRequest,
    EndTxnResponse,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
    TxnOffsetCommitResponsePartition,
    TxnOffsetCommitResponseTopic,
    WritableTxnMarkerPartitionResult,
    WritableTxnMarkerResult,
    WritableTxnMarkerTopicResult,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)
from brokers.core.transactions.coordinator import GROUP_MARKER_PREFIX
from brokers.core.transactions.offsets import commit_pending, complete_pending

# How long a marker waits for the in-sync replicas (Kafka's request.timeout.ms default).
MARKER_REPLICATION_TIMEOUT_MS = 30_000
# The first versions that may carry PRODUCER_FENCED (KIP-588); older ones hear
# INVALID_PRODUCER_EPOCH.
FENCED_FROM = {"add_partitions": 2, "add_offsets": 2, "end_txn": 2, "txn_offset_commit": 3}


async def handle_add_partitions_to_txn(
    ctx: BrokerContext, call: Call, req: AddPartitionsToTxnRequest
) -> AddPartitionsToTxnResponse:
    """Every partition must exist (else UNKNOWN_TOPIC_OR_PARTITION for it and
    OPERATION_NOT_ATTEMPTED for the rest, as Kafka answers); then one answer for all."""
    view = ctx.coordinator.cluster()
    wanted = [TopicPartition(t.name, p) for t in req.topics for p in t.partitions]
    unknown = {tp for tp in wanted if view.partition(tp.topic, tp.partition) is None}
    codes: dict[TopicPartition, int]
    if unknown:
        codes = {tp: UnknownTopicOrPartition.code if tp in unknown
                 else OperationNotAttempted.code for tp in wanted}
    else:
        try:
            await ctx.transactions().add(req.transactional_id, req.producer_id,
                                         req.producer_epoch, partitions=wanted)
            code = 0
        except KafkaError as exc:
            code = fenced_code(exc, call.api_version, FENCED_FROM["add_partitions"])
        codes = dict.fromkeys(wanted, code)
    return AddPartitionsToTxnResponse(results=[
        AddPartitionsToTxnTopicResult(name=t.name, results=[
            AddPartitionsToTxnPartitionResult(partition_index=p,
                                              error_code=codes[TopicPartition(t.name, p)])
            for p in t.partitions])
        for t in req.topics])


async def handle_add_offsets_to_txn(
    ctx: BrokerContext, call: Call, req: AddOffsetsToTxnRequest
) -> AddOffsetsToTxnResponse:
    try:
        await ctx.transactions().add(req.transactional_id, req.producer_id, req.producer_epoch,
                                     groups=[req.group_id])
    except KafkaError as exc:
        return AddOffsetsToTxnResponse(
            error_code=fenced_code(exc, call.api_version, FENCED_FROM["add_offsets"]))
    return AddOffsetsToTxnResponse(error_code=0)


async def handle_end_txn(ctx: BrokerContext, call: Call, req: EndTxnRequest) -> EndTxnResponse:
    try:
        await ctx.transactions().end_txn(req.transactional_id, req.producer_id,
                                         req.producer_epoch, req.committed)
    except KafkaError as exc:
        return EndTxnResponse(error_code=fenced_code(exc, call.api_version,
                                                     FENCED_FROM["end_txn"]))
    return EndTxnResponse(error_code=0)


async def handle_txn_offset_commit(
    ctx: BrokerContext, call: Call, req: TxnOffsetCommitRequest
) -> TxnOffsetCommitResponse:
    codes, offsets = checked_offsets(ctx, req.topics)
    error: KafkaError | None = ctx.not_group_coordinator(req.group_id)
    if error is None and offsets:
        try:
            await commit_pending(ctx.coordinator, ctx.groups, req.group_id, req.producer_id,
                                 req.generation_id, req.member_id, offsets)
        except KafkaError as exc:
            error = exc
    for tp in offsets:
        codes[tp] = 0 if error is None else fenced_code(
            error, call.api_version, FENCED_FROM["txn_offset_commit"])
    return TxnOffsetCommitResponse(topics=[
        TxnOffsetCommitResponseTopic(name=t.name, partitions=[
            TxnOffsetCommitResponsePartition(
                partition_index=p.partition_index,
                error_code=codes[TopicPartition(t.name, p.partition_index)])
            for p in t.partitions])
        for t in req.topics])


async def handle_write_txn_markers(
    ctx: BrokerContext, call: Call, req: WriteTxnMarkersRequest
) -> WriteTxnMarkersResponse:
    now_ms = int(time.time() * 1000)
    results = []
    waits: list[tuple[WritableTxnMarkerPartitionResult, asyncio.Future[KafkaError | None]]] = []
    for marker in req.markers:
        topics = []
        for t in marker.topics:
            parts = []
            if t.name.startswith(GROUP_MARKER_PREFIX):
                group_id = t.name[len(GROUP_MARKER_PREFIX):]
                code = 0
                try:
                    error = ctx.not_group_coordinator(group_id)
                    if error is not None:
                        raise error
                    await complete_pending(ctx.coordinator, group_id, marker.producer_id,
                                           marker.transaction_result, marker.coordinator_epoch)
                except KafkaError as exc:
                    code = exc.code
                topics.append(WritableTxnMarkerTopicResult(name=t.name, partitions=[
                    WritableTxnMarkerPartitionResult(partition_index=i, error_code=code)
                    for i in t.partition_indexes]))
                continue
            for index in t.partition_indexes:
                part = WritableTxnMarkerPartitionResult(partition_index=index, error_code=0)
                try:
                    error, replica_count = ctx.cached_leader_state(t.name, index)
                    if error is not None:
                        raise error
                    tp = TopicPartition(t.name, index)
                    replicas = ctx.replicas
                    leader = (None if replicas is None
                              else replicas.produce_leader(tp, -1, replica_count))
                    plog = ctx.store.get_or_create(t.name, index)
                    result = ctx.producers.append_marker(
                        t.name, index, plog, marker.producer_id, marker.producer_epoch,
                        marker.transaction_result, marker.coordinator_epoch,
                        CLIENT_LEADER_EPOCH if leader is None else leader.leader_epoch, now_ms)
                    ctx.notifier.notify(tp)
                    if leader is not None and replicas is not None:
                        fut = replicas.appended(tp, leader, result.last_offset + 1, -1,
                                                MARKER_REPLICATION_TIMEOUT_MS)
                        if fut is not None:
                            waits.append((part, fut))
                except KafkaError as exc:
                    part.error_code = exc.code
                parts.append(part)
            topics.append(WritableTxnMarkerTopicResult(name=t.name, partitions=parts))
        results.append(WritableTxnMarkerResult(producer_id=marker.producer_id, topics=topics))
    for part, fut in waits:
        error = await fut
        if error is not None:
            part.error_code = error.code
    return WriteTxnMarkersResponse(markers=results)
