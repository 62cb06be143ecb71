# ruff: noqa: RUF009  -- schema.f() returns a dataclasses.field(); ruff cannot see that.
"""CreatePartitions (key 37), versions 0-3 (2+ flexible).

``count`` is the topic's new total partition count, not the number to add. ``assignments``
null = the broker places the new partitions; otherwise one replica list per new partition.
"""

from __future__ import annotations

from dataclasses import dataclass

from brokers.core.protocol.header import flexible_from
from brokers.core.protocol.schema import BOOL, INT16, INT32, STRING, ArrayOf, Message, Struct, f

API_KEY = 37


@dataclass(slots=True)
class CreatePartitionsAssignment(Struct):
    broker_ids: list[int] = f(ArrayOf(INT32), "0+")


@dataclass(slots=True)
class CreatePartitionsTopic(Struct):
    name: str = f(STRING, "0+")
    count: int = f(INT32, "0+")
    assignments: list[CreatePartitionsAssignment] | None = f(
        ArrayOf(CreatePartitionsAssignment), "0+", nullable="0+", default=None)


@dataclass(slots=True)
class CreatePartitionsRequest(Message):
    API_KEY = API_KEY
    VERSIONS = (0, 3)
    FLEXIBLE = flexible_from(API_KEY)
    topics: list[CreatePartitionsTopic] = f(ArrayOf(CreatePartitionsTopic), "0+")
    timeout_ms: int = f(INT32, "0+", default=60000)
    validate_only: bool = f(BOOL, "0+", default=False)


@dataclass(slots=True)
class CreatePartitionsTopicResult(Struct):
    name: str = f(STRING, "0+")
    error_code: int = f(INT16, "0+")
    error_message: str | None = f(STRING, "0+", nullable="0+", default=None)


@dataclass(slots=True)
class CreatePartitionsResponse(Message):
    API_KEY = API_KEY
    VERSIONS = (0, 3)
    FLEXIBLE = flexible_from(API_KEY)
    throttle_time_ms: int = f(INT32, "0+")
    results: list[CreatePartitionsTopicResult] = f(ArrayOf(CreatePartitionsTopicResult), "0+")
