# ruff: noqa: RUF009  -- schema.f() returns a dataclasses.field(); ruff cannot see that.
"""DeleteRecords (key 21), versions 0-2 (2 flexible), as Kafka 2.8 serves them.

Per partition, the offset to become the log start offset (-1: the high watermark); the answer
is the partition's new low watermark (its log start offset).
"""

from __future__ import annotations

from dataclasses import dataclass

from brokers.core.protocol.header import flexible_from
from brokers.core.protocol.schema import INT16, INT32, INT64, STRING, ArrayOf, Message, Struct, f

API_KEY = 21


@dataclass(slots=True)
class DeleteRecordsPartition(Struct):
    partition_index: int = f(INT32, "0+")
    offset: int = f(INT64, "0+")


@dataclass(slots=True)
class DeleteRecordsTopic(Struct):
    name: str = f(STRING, "0+")
    partitions: list[DeleteRecordsPartition] = f(ArrayOf(DeleteRecordsPartition), "0+")


@dataclass(slots=True)
class DeleteRecordsRequest(Message):
    API_KEY = API_KEY
    VERSIONS = (0, 2)
    FLEXIBLE = flexible_from(API_KEY)
    topics: list[DeleteRecordsTopic] = f(ArrayOf(DeleteRecordsTopic), "0+")
    timeout_ms: int = f(INT32, "0+", default=30000)


@dataclass(slots=True)
class DeleteRecordsPartitionResult(Struct):
    partition_index: int = f(INT32, "0+")
    low_watermark: int = f(INT64, "0+")
    error_code: int = f(INT16, "0+")


@dataclass(slots=True)
class DeleteRecordsTopicResult(Struct):
    name: str = f(STRING, "0+")
    partitions: list[DeleteRecordsPartitionResult] = f(
        ArrayOf(DeleteRecordsPartitionResult), "0+")


@dataclass(slots=True)
class DeleteRecordsResponse(Message):
    API_KEY = API_KEY
    VERSIONS = (0, 2)
    FLEXIBLE = flexible_from(API_KEY)
    throttle_time_ms: int = f(INT32, "0+", default=0)
    topics: list[DeleteRecordsTopicResult] = f(ArrayOf(DeleteRecordsTopicResult), "0+")
