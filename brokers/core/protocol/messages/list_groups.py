# ruff: noqa: RUF009  -- schema.f() returns a dataclasses.field(); ruff cannot see that.
"""ListGroups (key 16), versions 0-4 (3+ flexible). Each broker lists the groups it coordinates
(admin clients ask every broker). v4 filters by state and returns each group's state."""

from __future__ import annotations

from dataclasses import dataclass

from brokers.core.protocol.header import flexible_from
from brokers.core.protocol.schema import INT16, INT32, STRING, ArrayOf, Message, Struct, f

API_KEY = 16


@dataclass(slots=True)
class ListGroupsRequest(Message):
    API_KEY = API_KEY
    VERSIONS = (0, 4)
    FLEXIBLE = flexible_from(API_KEY)
    states_filter: list[str] = f(ArrayOf(STRING), "4+")  # empty = every state


@dataclass(slots=True)
class ListedGroup(Struct):
    group_id: str = f(STRING, "0+")
    protocol_type: str = f(STRING, "0+")
    group_state: str = f(STRING, "4+")


@dataclass(slots=True)
class ListGroupsResponse(Message):
    API_KEY = API_KEY
    VERSIONS = (0, 4)
    FLEXIBLE = flexible_from(API_KEY)
    throttle_time_ms: int = f(INT32, "1+")
    error_code: int = f(INT16, "0+")
    groups: list[ListedGroup] = f(ArrayOf(ListedGroup), "0+")
