# ruff: noqa: RUF009  -- schema.f() returns a dataclasses.field(); ruff cannot see that.
"""CreateTopics (key 19), versions 2-7 (5+ flexible).

num_partitions / replication_factor of -1 mean "broker default" (v4+; earlier clients always
send explicit values). assignments non-empty = manual replica placement. Config values
and error_message are nullable. From v5 the result echoes the partition count, replication
factor and configs the topic got (configs null = not described); v7 adds the topic id.
"""

from __future__ import annotations

from dataclasses import dataclass

from brokers.core.protocol.header import flexible_from
from brokers.core.protocol.schema import (
    BOOL,
    INT8,
    INT16,
    INT32,
    STRING,
    UUID,
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
    VERSIONS = (2, 7)
    FLEXIBLE = flexible_from(API_KEY)
    topics: list[CreatableTopic] = f(ArrayOf(CreatableTopic), "0+")
    timeout_ms: int = f(INT32, "0+", default=60000)
    validate_only: bool = f(BOOL, "1+", default=False)


@dataclass(slots=True)
class CreatableTopicConfigs(Struct):
    name: str = f(STRING, "5+")
    value: str | None = f(STRING, "5+", nullable="5+", default=None)
    read_only: bool = f(BOOL, "5+")
    config_source: int = f(INT8, "5+", default=-1)
    is_sensitive: bool = f(BOOL, "5+")


@dataclass(slots=True)
class CreatableTopicResult(Struct):
    name: str = f(STRING, "0+")
    topic_id: bytes = f(UUID, "7+")
    error_code: int = f(INT16, "0+")
    error_message: str | None = f(STRING, "1+", nullable="0+", default=None)
    topic_config_error_code: int = f(INT16, "5+", tag=0)
    num_partitions: int = f(INT32, "5+", default=-1)
    replication_factor: int = f(INT16, "5+", default=-1)
    configs: list[CreatableTopicConfigs] | None = f(ArrayOf(CreatableTopicConfigs), "5+",
                                                    nullable="5+", default=None)


@dataclass(slots=True)
class CreateTopicsResponse(Message):
    API_KEY = API_KEY
    VERSIONS = (2, 7)
    FLEXIBLE = flexible_from(API_KEY)
    throttle_time_ms: int = f(INT32, "2+")
    topics: list[CreatableTopicResult] = f(ArrayOf(CreatableTopicResult), "0+")
