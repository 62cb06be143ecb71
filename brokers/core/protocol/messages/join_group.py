# ruff: noqa: RUF009  -- schema.f() returns a dataclasses.field(); ruff cannot see that.
"""JoinGroup (key 11), versions 0-7 (6+ flexible). v7 returns protocol_type
and makes protocol_name nullable.

rebalance_timeout_ms is v1+ (v0 clients: use session_timeout_ms). group_instance_id
(v5+, static membership) is nullable; we may accept and ignore it. Protocol metadata and
member metadata are opaque bytes to the broker (see
consumer_protocol.ConsumerProtocolSubscription).
"""

from __future__ import annotations

from dataclasses import dataclass

from brokers.core.protocol.header import flexible_from
from brokers.core.protocol.schema import (
    BYTES,
    INT16,
    INT32,
    STRING,
    ArrayOf,
    Message,
    Struct,
    f,
)

API_KEY = 11


@dataclass(slots=True)
class JoinGroupRequestProtocol(Struct):
    name: str = f(STRING, "0+")
    metadata: bytes = f(BYTES, "0+")


@dataclass(slots=True)
class JoinGroupRequest(Message):
    API_KEY = API_KEY
    VERSIONS = (0, 7)
    FLEXIBLE = flexible_from(API_KEY)
    group_id: str = f(STRING, "0+")
    session_timeout_ms: int = f(INT32, "0+")
    rebalance_timeout_ms: int = f(INT32, "1+", default=-1)
    member_id: str = f(STRING, "0+")
    group_instance_id: str | None = f(STRING, "5+", nullable="5+", default=None)
    protocol_type: str = f(STRING, "0+")
    protocols: list[JoinGroupRequestProtocol] = f(ArrayOf(JoinGroupRequestProtocol), "0+")


@dataclass(slots=True)
class JoinGroupResponseMember(Struct):
    member_id: str = f(STRING, "0+")
    group_instance_id: str | None = f(STRING, "5+", nullable="5+", default=None)
    metadata: bytes = f(BYTES, "0+")


@dataclass(slots=True)
class JoinGroupResponse(Message):
    API_KEY = API_KEY
    VERSIONS = (0, 7)
    FLEXIBLE = flexible_from(API_KEY)
    throttle_time_ms: int = f(INT32, "2+")
    error_code: int = f(INT16, "0+")
    generation_id: int = f(INT32, "0+", default=-1)
    protocol_type: str | None = f(STRING, "7+", nullable="7+", default=None)
    protocol_name: str | None = f(STRING, "0+", nullable="7+")
    leader: str = f(STRING, "0+")
    member_id: str = f(STRING, "0+")
    members: list[JoinGroupResponseMember] = f(ArrayOf(JoinGroupResponseMember), "0+")
