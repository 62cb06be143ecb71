
"""InitProducerId (key 22), versions 0-4 (2+ flexible; v3+ lets a
producer name its current id and epoch, KIP-360). transactional_id is nullable (None for a plain
idempotent producer). Producer ids handed out must not collide across brokers."""

from __future__ import annotations

from dataclasses import dataclass

from brokers.core.protocol.header import flexible_from
from brokers.core.protocol.schema import (
    INT16,
    INT32,
    INT64,
    STRING,
    Message,
    f,
)

API_KEY = 22


@dataclass(slots=True)
class InitProducerIdRequest(Message):
    API_KEY = API_KEY
    VERSIONS = (0, 4)
    FLEXIBLE = flexible_from(API_KEY)
    transactional_id: str | None = f(STRING, "0+", nullable="0+", default=None)
    transaction_timeout_ms: int = f(INT32, "0+")
    producer_id: int = f(INT64, "3+", default=-1)
    producer_epoch: int = f(INT16, "3+", default=-1)


@dataclass(slots=True)
class InitProducerIdResponse(Message):
    API_KEY = API_KEY
    VERSIONS = (0, 4)
    FLEXIBLE = flexible_from(API_KEY)
    throttle_time_ms: int = f(INT32, "0+")
    error_code: int = f(INT16, "0+")
    producer_id: int = f(INT64, "0+", default=-1)
    producer_epoch: int = f(INT16, "0+", default=-1)
