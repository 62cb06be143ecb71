"""WriteTxnMarkers: a transaction coordinator ends a transaction in the partitions led here.

Each marker names a producer, its epoch, commit or abort, the coordinator's epoch and the
partitions; each partition led here gets the control batch (brokers/core/transactions/markers.py)
through the idempotence table, which fences a marker older than the producer's epoch
(INVALID_PRODUCER_EPOCH) and lets a newer one fence the producer's late batches. A replicated
partition answers once its in-sync replicas hold the marker, as Kafka appends markers with
acks=-1: the coordinator may then call the transaction complete, and no leader elected from the
ISR can lose the marker. A partition not led here: NOT_LEADER_OR_FOLLOWER, which the
coordinator retries after looking the leader up again.
"""

from __future__ import annotations

import asyncio
import time

from brokers.core.coordinator import TopicPartition
from brokers.core.errors import KafkaError
from brokers.core.handlers.context import CLIENT_LEADER_EPOCH, BrokerContext, Call
from brokers.core.protocol.messages.transactions import (
    WritableTxnMarkerPartitionResult,
    WritableTxnMarkerResult,
    WritableTxnMarkerTopicResult,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)

# How long a marker waits for the in-sync replicas (Kafka's request.timeout.ms default).
MARKER_REPLICATION_TIMEOUT_MS = 30_000


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
