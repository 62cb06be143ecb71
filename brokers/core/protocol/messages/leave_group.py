
"""LeaveGroup (key 13), versions 0-1: one member leaves (batched members is v3+)."""

from __future__ import annotations

from dataclasses import dataclass

from brokers.core.protocol.schema import (
    INT16,
    INT32,
    STRING,
    Message,
    f,
)

API_KEY = 13


@dataclass(slots=True)
class LeaveGroupRequest(Message):
    API_KEY = API_KEY
    VERSIONS = (0, 1)
    group_id: str = f(STRING, "0+")
    member_id: str = f(STRING, "0-2")


@dataclass(slots=True)
class LeaveGroupResponse(Message):
    API_KEY = API_KEY
    VERSIONS = (0, 1)
    throttle_time_ms: int = f(INT32, "1+")
    error_code: int = f(INT16, "0+")
