# ruff: noqa: RUF009  -- schema.f() returns a dataclasses.field(); ruff cannot see that.
"""SyncGroup (key 14), versions 0-5 (4+ flexible; v5 names the protocol
type and name in both directions). Only the leader sends assignments; every member gets
its own assignment bytes back (see consumer_protocol.ConsumerProtocolAssignment)."""

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

API_KEY = 14


@dataclass(slots=True)
class SyncGroupRequestAssignment(Struct):
    member_id: str = f(STRING, "0+")
    assignment: bytes = f(BYTES, "0+")


@dataclass(slots=True)
class SyncGroupRequest(Message):
    API_KEY = API_KEY
    VERSIONS = (0, 5)
    FLEXIBLE = flexible_from(API_KEY)
    group_id: str = f(STRING, "0+")
    generation_id: int = f(INT32, "0+")
    member_id: str = f(STRING, "0+")
    group_instance_id: str | None = f(STRING, "3+", nullable="3+", default=None)
    protocol_type: str | None = f(STRING, "5+", nullable="5+", default=None)
    protocol_name: str | None = f(STRING, "5+", nullable="5+", default=None)
    assignments: list[SyncGroupRequestAssignment] = f(ArrayOf(SyncGroupRequestAssignment), "0+")


@dataclass(slots=True)
class SyncGroupResponse(Message):
    API_KEY = API_KEY
    VERSIONS = (0, 5)
    FLEXIBLE = flexible_from(API_KEY)
    throttle_time_ms: int = f(INT32, "1+")
    error_code: int = f(INT16, "0+")
    protocol_type: str | None = f(STRING, "5+", nullable="5+", default=None)
    protocol_name: str | None = f(STRING, "5+", nullable="5+", default=None)
    assignment: bytes = f(BYTES, "0+")
