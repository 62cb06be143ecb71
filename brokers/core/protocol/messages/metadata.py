# ruff: noqa: RUF009  -- schema.f() returns a dataclasses.field(); ruff cannot see that.
"""Metadata (key 3), versions 1-11 (9+ flexible; 10+ topic ids;
11 drops include_cluster_authorized_operations).

Subtleties: ``MetadataRequest.topics`` is nullable from v1 (None = all topics; an empty list
= no topics). ``allow_auto_topic_creation`` exists from v4 (default True). v8 adds the two
``include_*_authorized_operations`` flags and the ``*_authorized_operations`` response fields.
``MetadataResponseBroker.rack`` and ``MetadataResponse.cluster_id`` are nullable.
"""

from __future__ import annotations

from dataclasses import dataclass

from brokers.core.protocol.header import flexible_from
from brokers.core.protocol.schema import (
    BOOL,
    INT16,
    INT32,
    STRING,
    UUID,
    ArrayOf,
    Message,
    Struct,
    f,
)

API_KEY = 3


@dataclass(slots=True)
class MetadataRequestTopic(Struct):
    topic_id: bytes = f(UUID, "10+")
    # Null from v10 when the client names the topic by id (we have no topic ids: all zero).
    name: str | None = f(STRING, "0+", nullable="10+")


@dataclass(slots=True)
class MetadataRequest(Message):
    API_KEY = API_KEY
    VERSIONS = (1, 11)
    FLEXIBLE = flexible_from(API_KEY)
    # librdkafka 2.16's AdminClient asks for all topics at v11 with a body of 7 bytes
    # (00 00 00 00 01 00 00) where the fields take 4: Kafka reads the fields it knows and
    # ignores the rest (null topic list: all topics), and so must we, or list_topics fails.
    TRAILING_IGNORED_FROM = 9
    topics: list[MetadataRequestTopic] | None = f(ArrayOf(MetadataRequestTopic), "0+",
                                                  nullable="1+")
    allow_auto_topic_creation: bool = f(BOOL, "4+", default=True)
    include_cluster_authorized_operations: bool = f(BOOL, "8-10")
    include_topic_authorized_operations: bool = f(BOOL, "8+")


@dataclass(slots=True)
class MetadataResponseBroker(Struct):
    node_id: int = f(INT32, "0+")
    host: str = f(STRING, "0+")
    port: int = f(INT32, "0+")
    rack: str | None = f(STRING, "1+", nullable="1+", default=None)


@dataclass(slots=True)
class MetadataResponsePartition(Struct):
    error_code: int = f(INT16, "0+")
    partition_index: int = f(INT32, "0+")
    leader_id: int = f(INT32, "0+")
    leader_epoch: int = f(INT32, "7+", default=-1)
    replica_nodes: list[int] = f(ArrayOf(INT32), "0+")
    isr_nodes: list[int] = f(ArrayOf(INT32), "0+")
    offline_replicas: list[int] = f(ArrayOf(INT32), "5+")


@dataclass(slots=True)
class MetadataResponseTopic(Struct):
    error_code: int = f(INT16, "0+")
    name: str = f(STRING, "0+")
    topic_id: bytes = f(UUID, "10+")
    is_internal: bool = f(BOOL, "1+", default=False)
    partitions: list[MetadataResponsePartition] = f(ArrayOf(MetadataResponsePartition), "0+")
    topic_authorized_operations: int = f(INT32, "8+", default=-2147483648)


@dataclass(slots=True)
class MetadataResponse(Message):
    API_KEY = API_KEY
    VERSIONS = (1, 11)
    FLEXIBLE = flexible_from(API_KEY)
    throttle_time_ms: int = f(INT32, "3+")
    brokers: list[MetadataResponseBroker] = f(ArrayOf(MetadataResponseBroker), "0+")
    cluster_id: str | None = f(STRING, "2+", nullable="2+", default=None)
    controller_id: int = f(INT32, "1+", default=-1)
    topics: list[MetadataResponseTopic] = f(ArrayOf(MetadataResponseTopic), "0+")
    cluster_authorized_operations: int = f(INT32, "8-10", default=-2147483648)
