# ruff: noqa: RUF009  -- schema.f() returns a dataclasses.field(); ruff cannot see that.
"""CreateTopics (key 19), versions 2-4.

num_partitions / replication_factor of -1 mean "broker default" (v4+; earlier clients always
send explicit values). assignments non-empty = manual replica placement. Config values
and error_message are nullable. Fields that exist only in flexible versions (5+) are omitted.
"""

from __future__ import annotations

from dataclasses import dataclass

from brokers.core.protocol.schema import (
    BOOL,
    INT16,
    INT32,
    STRING,
    ArrayOf,
    Message,
    Struct,
    f,
)

API_KEY = 19


@dataclass(slots=True)
class CreatableReplicaAssignment(Struct):
    partition_index: int = f(INT32, "0+")
    broker_ids: list[int] = f(ArrayOf(INT32), "0+")


@dataclass(slots=True)
class CreatableTopicConfig(Struct):
    name: str = f(STRING, "0+")
    value: str | None = f(STRING, "0+", nullable="0+", default=None)


@dataclass(slots=True)
class CreatableTopic(Struct):
    name: str = f(STRING, "0+")
    num_partitions: int = f(INT32, "0+")
    replication_factor: int = f(INT16, "0+")
    assignments: list[CreatableReplicaAssignment] = f(ArrayOf(CreatableReplicaAssignment), "0+")
    configs: list[CreatableTopicConfig] = f(ArrayOf(CreatableTopicConfig), "0+")


@dataclass(slots=True)
class CreateTopicsRequest(Message):
    API_KEY = API_KEY
    VERSIONS = (2, 4)
    topics: list[CreatableTopic] = f(ArrayOf(CreatableTopic), "0+")
    timeout_ms: int = f(INT32, "0+", default=60000)
    validate_only: bool = f(BOOL, "1+", default=False)


@dataclass(slots=True)
class CreatableTopicResult(Struct):
    name: str = f(STRING, "0+")
    error_code: int = f(INT16, "0+")
    error_message: str | None = f(STRING, "1+", nullable="0+", default=None)


@dataclass(slots=True)
class CreateTopicsResponse(Message):
    API_KEY = API_KEY
    VERSIONS = (2, 4)
    throttle_time_ms: int = f(INT32, "2+")
    topics: list[CreatableTopicResult] = f(ArrayOf(CreatableTopicResult), "0+")
