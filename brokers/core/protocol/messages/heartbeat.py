
"""Heartbeat (key 12), versions 0-4 (4 is flexible). group_instance_id (v3+) is nullable."""

from __future__ import annotations

from dataclasses import dataclass

from brokers.core.protocol.header import flexible_from
from brokers.core.protocol.schema import (
    INT16,
    INT32,
    STRING,
    Message,
    f,
)

API_KEY = 12


@dataclass(slots=True)
class HeartbeatRequest(Message):
    API_KEY = API_KEY
    VERSIONS = (0, 4)
    FLEXIBLE = flexible_from(API_KEY)
    group_id: str = f(STRING, "0+")
    generation_id: int = f(INT32, "0+")
    member_id: str = f(STRING, "0+")
    group_instance_id: str | None = f(STRING, "3+", nullable="3+", default=None)


@dataclass(slots=True)
class HeartbeatResponse(Message):
    API_KEY = API_KEY
    VERSIONS = (0, 4)
    FLEXIBLE = flexible_from(API_KEY)
    throttle_time_ms: int = f(INT32, "1+")
    error_code: int = f(INT16, "0+")
