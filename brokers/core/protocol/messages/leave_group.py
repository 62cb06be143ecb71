# ruff: noqa: RUF009  -- schema.f() returns a dataclasses.field(); ruff cannot see that.

"""LeaveGroup (key 13), versions 0-4 (4 flexible). v0-2: one member_id leaves; v3+ (KIP-345)
batches members, each with an optional group_instance_id, and answers per member."""

from __future__ import annotations

from dataclasses import dataclass

from brokers.core.protocol.header import flexible_from
from brokers.core.protocol.schema import (
    INT16,
    INT32,
    STRING,
    ArrayOf,
    Message,
    Struct,
    f,
)

API_KEY = 13


@dataclass(slots=True)
class MemberIdentity(Struct):
    member_id: str = f(STRING, "3+")
    group_instance_id: str | None = f(STRING, "3+", nullable="3+", default=None)


@dataclass(slots=True)
class MemberResponse(Struct):
    member_id: str = f(STRING, "3+")
    group_instance_id: str | None = f(STRING, "3+", nullable="3+", default=None)
    error_code: int = f(INT16, "3+")


@dataclass(slots=True)
class LeaveGroupRequest(Message):
    API_KEY = API_KEY
    VERSIONS = (0, 4)
    FLEXIBLE = flexible_from(API_KEY)
    group_id: str = f(STRING, "0+")
    member_id: str = f(STRING, "0-2")
    members: list[MemberIdentity] = f(ArrayOf(MemberIdentity), "3+")


@dataclass(slots=True)
class LeaveGroupResponse(Message):
    API_KEY = API_KEY
    VERSIONS = (0, 4)
    FLEXIBLE = flexible_from(API_KEY)
    throttle_time_ms: int = f(INT32, "1+")
    error_code: int = f(INT16, "0+")
    members: list[MemberResponse] = f(ArrayOf(MemberResponse), "3+")
