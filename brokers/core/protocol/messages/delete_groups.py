# ruff: noqa: RUF009  -- schema.f() returns a dataclasses.field(); ruff cannot see that.
"""DeleteGroups (key 42), versions 0-2 (2 flexible), and OffsetDelete (key 47), version 0.

DeleteGroups removes empty groups and their committed offsets, one result per group.
OffsetDelete removes some of one group's committed offsets: a top-level error for the group,
then one per partition (GROUP_SUBSCRIBED_TO_TOPIC while a live member consumes the topic).
"""

from __future__ import annotations

from dataclasses import dataclass

from brokers.core.protocol.header import flexible_from
from brokers.core.protocol.schema import INT16, INT32, STRING, ArrayOf, Message, Struct, f

DELETE_GROUPS_KEY = 42
OFFSET_DELETE_KEY = 47


@dataclass(slots=True)
class DeleteGroupsRequest(Message):
    API_KEY = DELETE_GROUPS_KEY
    VERSIONS = (0, 2)
    FLEXIBLE = flexible_from(DELETE_GROUPS_KEY)
    groups_names: list[str] = f(ArrayOf(STRING), "0+")


@dataclass(slots=True)
class DeletableGroupResult(Struct):
    group_id: str = f(STRING, "0+")
    error_code: int = f(INT16, "0+")


@dataclass(slots=True)
class DeleteGroupsResponse(Message):
    API_KEY = DELETE_GROUPS_KEY
    VERSIONS = (0, 2)
    FLEXIBLE = flexible_from(DELETE_GROUPS_KEY)
    throttle_time_ms: int = f(INT32, "0+")
    results: list[DeletableGroupResult] = f(ArrayOf(DeletableGroupResult), "0+")


@dataclass(slots=True)
class OffsetDeleteRequestPartition(Struct):
    partition_index: int = f(INT32, "0+")


@dataclass(slots=True)
class OffsetDeleteRequestTopic(Struct):
    name: str = f(STRING, "0+")
    partitions: list[OffsetDeleteRequestPartition] = f(
        ArrayOf(OffsetDeleteRequestPartition), "0+")


@dataclass(slots=True)
class OffsetDeleteRequest(Message):
    API_KEY = OFFSET_DELETE_KEY
    VERSIONS = (0, 0)
    FLEXIBLE = flexible_from(OFFSET_DELETE_KEY)
    group_id: str = f(STRING, "0+")
    topics: list[OffsetDeleteRequestTopic] = f(ArrayOf(OffsetDeleteRequestTopic), "0+")


@dataclass(slots=True)
class OffsetDeleteResponsePartition(Struct):
    partition_index: int = f(INT32, "0+")
    error_code: int = f(INT16, "0+")


@dataclass(slots=True)
class OffsetDeleteResponseTopic(Struct):
    name: str = f(STRING, "0+")
    partitions: list[OffsetDeleteResponsePartition] = f(
        ArrayOf(OffsetDeleteResponsePartition), "0+")


@dataclass(slots=True)
class OffsetDeleteResponse(Message):
    API_KEY = OFFSET_DELETE_KEY
    VERSIONS = (0, 0)
    FLEXIBLE = flexible_from(OFFSET_DELETE_KEY)
    error_code: int = f(INT16, "0+")
    throttle_time_ms: int = f(INT32, "0+")
    topics: list[OffsetDeleteResponseTopic] = f(ArrayOf(OffsetDeleteResponseTopic), "0+")
