# ruff: noqa: RUF009  -- schema.f() returns a dataclasses.field(); ruff cannot see that.
"""DescribeGroups (key 15), versions 0-5 (5 flexible). A group this broker does not know is
described as state "Dead" with no members (Kafka's answer); member metadata and assignment are
the opaque bytes the members and the leader sent. v3 adds authorized operations (not computed:
the spec's "not requested" value), v4 each member's group_instance_id."""

from __future__ import annotations

from dataclasses import dataclass

from brokers.core.protocol.header import flexible_from
from brokers.core.protocol.schema import (
    BOOL,
    BYTES,
    INT16,
    INT32,
    STRING,
    ArrayOf,
    Message,
    Struct,
    f,
)

API_KEY = 15
AUTHORIZED_OPERATIONS_OMITTED = -2147483648


@dataclass(slots=True)
class DescribeGroupsRequest(Message):
    API_KEY = API_KEY
    VERSIONS = (0, 5)
    FLEXIBLE = flexible_from(API_KEY)
    groups: list[str] = f(ArrayOf(STRING), "0+")
    include_authorized_operations: bool = f(BOOL, "3+")


@dataclass(slots=True)
class DescribedGroupMember(Struct):
    member_id: str = f(STRING, "0+")
    group_instance_id: str | None = f(STRING, "4+", nullable="4+", default=None)
    client_id: str = f(STRING, "0+")
    client_host: str = f(STRING, "0+")
    member_metadata: bytes = f(BYTES, "0+")
    member_assignment: bytes = f(BYTES, "0+")


@dataclass(slots=True)
class DescribedGroup(Struct):
    error_code: int = f(INT16, "0+")
    group_id: str = f(STRING, "0+")
    group_state: str = f(STRING, "0+")
    protocol_type: str = f(STRING, "0+")
    protocol_data: str = f(STRING, "0+")
    members: list[DescribedGroupMember] = f(ArrayOf(DescribedGroupMember), "0+")
    authorized_operations: int = f(INT32, "3+", default=AUTHORIZED_OPERATIONS_OMITTED)


@dataclass(slots=True)
class DescribeGroupsResponse(Message):
    API_KEY = API_KEY
    VERSIONS = (0, 5)
    FLEXIBLE = flexible_from(API_KEY)
    throttle_time_ms: int = f(INT32, "1+")
    groups: list[DescribedGroup] = f(ArrayOf(DescribedGroup), "0+")
