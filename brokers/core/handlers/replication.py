"""OffsetForLeaderEpoch: where this leader's log of an epoch ends (a returning replica cuts
its own log there; brokers/core/replication/truncation.py)."""

from __future__ import annotations

from brokers.core.coordinator import TopicPartition
from brokers.core.errors import FencedLeaderEpoch, KafkaError, UnknownLeaderEpoch
from brokers.core.handlers.context import BrokerContext, Call
from brokers.core.protocol.messages.offset_for_leader_epoch import (
    EpochEndOffset,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
    OffsetForLeaderTopicResult,
)
from brokers.core.replication.epochs import UNDEFINED_EPOCH, UNDEFINED_OFFSET


def handle_offset_for_leader_epoch(
    ctx: BrokerContext, call: Call, req: OffsetForLeaderEpochRequest
) -> OffsetForLeaderEpochResponse:
    topics = []
    for t in req.topics:
        parts = []
        for p in t.partitions:
            try:
                epoch, end = _answer(ctx, TopicPartition(t.topic, p.partition),
                                     p.current_leader_epoch, p.leader_epoch)
            except KafkaError as exc:
                parts.append(EpochEndOffset(error_code=exc.code, partition=p.partition))
            else:
                parts.append(EpochEndOffset(error_code=0, partition=p.partition,
                                            leader_epoch=epoch, end_offset=end))
        topics.append(OffsetForLeaderTopicResult(topic=t.topic, partitions=parts))
    return OffsetForLeaderEpochResponse(topics=topics)


def _answer(ctx: BrokerContext, tp: TopicPartition, current_epoch: int,
            asked_epoch: int) -> tuple[int, int]:
    error = ctx.cached_leader_check(tp.topic, tp.partition)
    if error is not None:
        raise error
    leader = ctx.replicas.leaders.get(tp) if ctx.replicas is not None else None
    if leader is None or ctx.replicas is None:
        # Replication factor 1: no batch carries an epoch, so there is none to answer about.
        return UNDEFINED_EPOCH, UNDEFINED_OFFSET
    if 0 <= current_epoch < leader.leader_epoch:
        raise FencedLeaderEpoch(
            f"epoch {current_epoch} is older than the leader's {leader.leader_epoch}")
    if current_epoch > leader.leader_epoch:
        raise UnknownLeaderEpoch(
            f"epoch {current_epoch} is newer than the leader's {leader.leader_epoch}")
    return ctx.replicas.end_offset_for(tp, asked_epoch)
