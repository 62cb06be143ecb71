# ruff: noqa: RUF009  -- schema.f() returns a dataclasses.field(); ruff cannot see that.
"""OffsetFetch (key 9), versions 1-7 (6+ flexible).

topics is nullable from v2: None = every partition the group has committed. A partition
with no committed offset answers committed_offset=-1 with error 0. The top-level
error_code exists from v2; committed_leader_epoch from v5; metadata is nullable.
require_stable (v7) asks for offsets without pending transactions: a partition with offsets
pending in a transaction (TxnOffsetCommit before its marker) answers UNSTABLE_OFFSET_COMMIT.
"""

from __future__ import annotations

from dataclasses import dataclass

from brokers.core.protocol.header import flexible_from
from brokers.core.protocol.schema import (
    BOOL,
    INT16,
    INT32,
    INT64,
    STRING,
    ArrayOf,
    Message,
    Struct,
    f,
)

API_KEY = 9


@dataclass(slots=True)
class OffsetFetchRequestTopic(Struct):
    name: str = f(STRING, "0-7")
    partition_indexes: list[int] = f(ArrayOf(INT32), "0-7")


@dataclass(slots=True)
class OffsetFetchRequest(Message):
    API_KEY = API_KEY
    VERSIONS = (1, 7)
    FLEXIBLE = flexible_from(API_KEY)
    group_id: str = f(STRING, "0-7")
    topics: list[OffsetFetchRequestTopic] | None = f(ArrayOf(OffsetFetchRequestTopic), "0-7",
                                                     nullable="2-7")
    require_stable: bool = f(BOOL, "7", default=False)


@dataclass(slots=True)
class OffsetFetchResponsePartition(Struct):
    partition_index: int = f(INT32, "0-7")
    committed_offset: int = f(INT64, "0-7", default=-1)
    committed_leader_epoch: int = f(INT32, "5-7", default=-1)
    metadata: str | None = f(STRING, "0-7", nullable="0-7", default="")
    error_code: int = f(INT16, "0-7")


@dataclass(slots=True)
class OffsetFetchResponseTopic(Struct):
    name: str = f(STRING, "0-7")
    partitions: list[OffsetFetchResponsePartition] = f(ArrayOf(OffsetFetchResponsePartition),
                                                       "0-7")


@dataclass(slots=True)
class OffsetFetchResponse(Message):
    API_KEY = API_KEY
    VERSIONS = (1, 7)
    FLEXIBLE = flexible_from(API_KEY)
    throttle_time_ms: int = f(INT32, "3+")
    topics: list[OffsetFetchResponseTopic] = f(ArrayOf(OffsetFetchResponseTopic), "0-7")
    error_code: int = f(INT16, "2-7", default=0)
