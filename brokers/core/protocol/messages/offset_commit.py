# ruff: noqa: RUF009  -- schema.f() returns a dataclasses.field(); ruff cannot see that.
"""OffsetCommit (key 8), versions 2-8 (8 is flexible, no new fields).

The generation field carries the spec's current name, generation_id_or_member_epoch
(default -1). Generation -1 with an empty member_id is a manual-assignment commit and must
be accepted. retention_time_ms exists only in v2-4 (-1 = broker default).
committed_leader_epoch is v6+; group_instance_id v7+ (nullable);
committed_metadata is nullable.
"""

from __future__ import annotations

from dataclasses import dataclass

from brokers.core.protocol.header import flexible_from
from brokers.core.protocol.schema import (
    INT16,
    INT32,
    INT64,
    STRING,
    ArrayOf,
    Message,
    Struct,
    f,
)

API_KEY = 8


@dataclass(slots=True)
class OffsetCommitRequestPartition(Struct):
    partition_index: int = f(INT32, "0+")
    committed_offset: int = f(INT64, "0+")
    committed_leader_epoch: int = f(INT32, "6+", default=-1)
    commit_timestamp: int = f(INT64, "1", default=-1)
    committed_metadata: str | None = f(STRING, "0+", nullable="0+", default="")


@dataclass(slots=True)
class OffsetCommitRequestTopic(Struct):
    name: str = f(STRING, "0+")
    partitions: list[OffsetCommitRequestPartition] = f(ArrayOf(OffsetCommitRequestPartition), "0+")


@dataclass(slots=True)
class OffsetCommitRequest(Message):
    API_KEY = API_KEY
    VERSIONS = (2, 8)
    FLEXIBLE = flexible_from(API_KEY)
    group_id: str = f(STRING, "0+")
    generation_id_or_member_epoch: int = f(INT32, "1+", default=-1)
    member_id: str = f(STRING, "1+")
    group_instance_id: str | None = f(STRING, "7+", nullable="7+", default=None)
    retention_time_ms: int = f(INT64, "2-4", default=-1)
    topics: list[OffsetCommitRequestTopic] = f(ArrayOf(OffsetCommitRequestTopic), "0+")


@dataclass(slots=True)
class OffsetCommitResponsePartition(Struct):
    partition_index: int = f(INT32, "0+")
    error_code: int = f(INT16, "0+")


@dataclass(slots=True)
class OffsetCommitResponseTopic(Struct):
    name: str = f(STRING, "0+")
    partitions: list[OffsetCommitResponsePartition] = f(
        ArrayOf(OffsetCommitResponsePartition), "0+")


@dataclass(slots=True)
class OffsetCommitResponse(Message):
    API_KEY = API_KEY
    VERSIONS = (2, 8)
    FLEXIBLE = flexible_from(API_KEY)
    throttle_time_ms: int = f(INT32, "3+")
    topics: list[OffsetCommitResponseTopic] = f(ArrayOf(OffsetCommitResponseTopic), "0+")
