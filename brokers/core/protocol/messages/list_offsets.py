# ruff: noqa: RUF009  -- schema.f() returns a dataclasses.field(); ruff cannot see that.
"""ListOffsets (key 2), versions 1-6 (6 is flexible, no new fields).

timestamp -1 = latest (log end offset), -2 = earliest, >= 0 = first offset with a timestamp at
or after it. replica_id defaults to -1 (a consumer) rather than the spec's implicit 0.
v1+ answers with a single (timestamp, offset) per partition; old_style_offsets is v0 only.
"""

from __future__ import annotations

from dataclasses import dataclass

from brokers.core.protocol.header import flexible_from
from brokers.core.protocol.schema import (
    INT8,
    INT16,
    INT32,
    INT64,
    STRING,
    ArrayOf,
    Message,
    Struct,
    f,
)

API_KEY = 2


@dataclass(slots=True)
class ListOffsetsPartition(Struct):
    partition_index: int = f(INT32, "0+")
    current_leader_epoch: int = f(INT32, "4+", default=-1)
    timestamp: int = f(INT64, "0+")
    max_num_offsets: int = f(INT32, "0", default=1)


@dataclass(slots=True)
class ListOffsetsTopic(Struct):
    name: str = f(STRING, "0+")
    partitions: list[ListOffsetsPartition] = f(ArrayOf(ListOffsetsPartition), "0+")


@dataclass(slots=True)
class ListOffsetsRequest(Message):
    API_KEY = API_KEY
    VERSIONS = (1, 6)
    FLEXIBLE = flexible_from(API_KEY)
    replica_id: int = f(INT32, "0+", default=-1)
    isolation_level: int = f(INT8, "2+")
    topics: list[ListOffsetsTopic] = f(ArrayOf(ListOffsetsTopic), "0+")


@dataclass(slots=True)
class ListOffsetsPartitionResponse(Struct):
    partition_index: int = f(INT32, "0+")
    error_code: int = f(INT16, "0+")
    old_style_offsets: list[int] = f(ArrayOf(INT64), "0")
    timestamp: int = f(INT64, "1+", default=-1)
    offset: int = f(INT64, "1+", default=-1)
    leader_epoch: int = f(INT32, "4+", default=-1)


@dataclass(slots=True)
class ListOffsetsTopicResponse(Struct):
    name: str = f(STRING, "0+")
    partitions: list[ListOffsetsPartitionResponse] = f(ArrayOf(ListOffsetsPartitionResponse), "0+")


@dataclass(slots=True)
class ListOffsetsResponse(Message):
    API_KEY = API_KEY
    VERSIONS = (1, 6)
    FLEXIBLE = flexible_from(API_KEY)
    throttle_time_ms: int = f(INT32, "2+")
    topics: list[ListOffsetsTopicResponse] = f(ArrayOf(ListOffsetsTopicResponse), "0+")
