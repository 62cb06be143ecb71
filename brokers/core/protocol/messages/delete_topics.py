# ruff: noqa: RUF009  -- schema.f() returns a dataclasses.field(); ruff cannot see that.
"""DeleteTopics (key 20), versions 0-5 (4+ flexible), as Kafka 2.8 serves them.

One result per named topic. v1 adds the throttle time, v5 an error message per topic; v6
(topics named by id, Kafka 3.0) is not served: topics here have no ids.
"""

from __future__ import annotations

from dataclasses import dataclass

from brokers.core.protocol.header import flexible_from
from brokers.core.protocol.schema import INT16, INT32, STRING, ArrayOf, Message, Struct, f

API_KEY = 20


@dataclass(slots=True)
class DeleteTopicsRequest(Message):
    API_KEY = API_KEY
    VERSIONS = (0, 5)
    FLEXIBLE = flexible_from(API_KEY)
    topic_names: list[str] = f(ArrayOf(STRING), "0+")
    timeout_ms: int = f(INT32, "0+", default=30000)


@dataclass(slots=True)
class DeletableTopicResult(Struct):
    name: str = f(STRING, "0+")
    error_code: int = f(INT16, "0+")
    error_message: str | None = f(STRING, "5+", nullable="5+", default=None)


@dataclass(slots=True)
class DeleteTopicsResponse(Message):
    API_KEY = API_KEY
    VERSIONS = (0, 5)
    FLEXIBLE = flexible_from(API_KEY)
    throttle_time_ms: int = f(INT32, "1+", default=0)
    responses: list[DeletableTopicResult] = f(ArrayOf(DeletableTopicResult), "0+")
