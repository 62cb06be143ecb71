"""OffsetForLeaderEpoch v2-3: field layout by version, and round trips."""

from __future__ import annotations

import struct

import pytest

from brokers.core.protocol.messages.offset_for_leader_epoch import (
    EpochEndOffset,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
    OffsetForLeaderPartition,
    OffsetForLeaderTopic,
    OffsetForLeaderTopicResult,
)


def _bytes(parts) -> bytes:
    return b"".join(bytes(p) for p in parts)


def test_v3_request_starts_with_the_replica_id_and_v2_has_none():
    req = OffsetForLeaderEpochRequest(replica_id=2, topics=[OffsetForLeaderTopic(
        topic="t", partitions=[OffsetForLeaderPartition(partition=0, current_leader_epoch=5,
                                                        leader_epoch=4)])])
    v3 = _bytes(req.encode(3))
    v2 = _bytes(req.encode(2))
    topic = struct.pack(">ih", 1, 1) + b"t" + struct.pack(">iiii", 1, 0, 5, 4)
    assert v3 == struct.pack(">i", 2) + topic
    assert v2 == topic


@pytest.mark.parametrize("version", [2, 3])
def test_round_trips(version):
    req = OffsetForLeaderEpochRequest(replica_id=1 if version >= 3 else -1, topics=[
        OffsetForLeaderTopic(topic="a", partitions=[
            OffsetForLeaderPartition(partition=3, current_leader_epoch=7, leader_epoch=6)])])
    assert OffsetForLeaderEpochRequest.decode(_bytes(req.encode(version)), version) == req
    resp = OffsetForLeaderEpochResponse(throttle_time_ms=0, topics=[
        OffsetForLeaderTopicResult(topic="a", partitions=[
            EpochEndOffset(error_code=0, partition=3, leader_epoch=6, end_offset=1234),
            EpochEndOffset(error_code=74, partition=4)])])
    assert OffsetForLeaderEpochResponse.decode(_bytes(resp.encode(version)), version) == resp
