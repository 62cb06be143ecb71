
"""FindCoordinator (key 10), versions 0-3 (3 is flexible). key_type (v1+): 0 = group,
1 = transaction. error_message (v1+) is nullable. v4+ batches keys (coordinators); not
spoken here."""

from __future__ import annotations

from dataclasses import dataclass

from brokers.core.protocol.header import flexible_from
from brokers.core.protocol.schema import (
    INT8,
    INT16,
    INT32,
    STRING,
    Message,
    f,
)

API_KEY = 10


@dataclass(slots=True)
class FindCoordinatorRequest(Message):
    API_KEY = API_KEY
    VERSIONS = (0, 3)
    FLEXIBLE = flexible_from(API_KEY)
    key: str = f(STRING, "0-3")
    key_type: int = f(INT8, "1+", default=0)


@dataclass(slots=True)
class FindCoordinatorResponse(Message):
    API_KEY = API_KEY
    VERSIONS = (0, 3)
    FLEXIBLE = flexible_from(API_KEY)
    throttle_time_ms: int = f(INT32, "1+")
    error_code: int = f(INT16, "0-3")
    error_message: str | None = f(STRING, "1-3", nullable="1-3", default=None)
    node_id: int = f(INT32, "0-3")
    host: str = f(STRING, "0-3")
    port: int = f(INT32, "0-3")
