# ruff: noqa: RUF009  -- schema.f() returns a dataclasses.field(); ruff cannot see that.
"""OffsetForLeaderEpoch (key 23), versions 2-3 (4 is flexible and not served).

A replica asks the leader where the leader's log of a given epoch ends, to cut its own log
there (brokers/core/replication/truncation.py). v2 adds ``current_leader_epoch`` (the asker's
idea of the leader's epoch: a stale one is FENCED_LEADER_EPOCH, a newer one
UNKNOWN_LEADER_EPOCH); v3 adds ``replica_id`` (-1: a consumer validating its position, which
the broker answers from the high watermark's side of the log alike). In the response,
``leader_epoch`` is the largest epoch at or below the one asked for that the leader has, and
``end_offset`` where that epoch's records end; both -1 when it has none.
"""

from __future__ import annotations

from dataclasses import dataclass

from brokers.core.protocol.header import flexible_from
from brokers.core.protocol.schema import INT16, INT32, INT64, STRING, ArrayOf, Message, Struct, f

API_KEY = 23


@dataclass(slots=True)
class OffsetForLeaderPartition(Struct):
    partition: int = f(INT32, "0+")
    current_leader_epoch: int = f(INT32, "2+", default=-1)
    leader_epoch: int = f(INT32, "0+")


@dataclass(slots=True)
class OffsetForLeaderTopic(Struct):
    topic: str = f(STRING, "0+")
    partitions: list[OffsetForLeaderPartition] = f(ArrayOf(OffsetForLeaderPartition), "0+")


@dataclass(slots=True)
class OffsetForLeaderEpochRequest(Message):
    API_KEY = API_KEY
    VERSIONS = (2, 3)
    FLEXIBLE = flexible_from(API_KEY)
    replica_id: int = f(INT32, "3+", default=-1)
    topics: list[OffsetForLeaderTopic] = f(ArrayOf(OffsetForLeaderTopic), "0+")


@dataclass(slots=True)
class EpochEndOffset(Struct):
    error_code: int = f(INT16, "0+")
    partition: int = f(INT32, "0+")
    leader_epoch: int = f(INT32, "1+", default=-1)
    end_offset: int = f(INT64, "0+", default=-1)


@dataclass(slots=True)
class OffsetForLeaderTopicResult(Struct):
    topic: str = f(STRING, "0+")
    partitions: list[EpochEndOffset] = f(ArrayOf(EpochEndOffset), "0+")


@dataclass(slots=True)
class OffsetForLeaderEpochResponse(Message):
    API_KEY = API_KEY
    VERSIONS = (2, 3)
    FLEXIBLE = flexible_from(API_KEY)
    throttle_time_ms: int = f(INT32, "2+")
    topics: list[OffsetForLeaderTopicResult] = f(ArrayOf(OffsetForLeaderTopicResult), "0+")
