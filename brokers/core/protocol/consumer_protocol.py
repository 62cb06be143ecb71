# ruff: noqa: RUF009  -- schema.f() returns a dataclasses.field(); ruff cannot see that.
"""The "consumer" embedded protocol: what consumers put inside JoinGroup metadata and
SyncGroup assignment bytes (ConsumerProtocolSubscription / ConsumerProtocolAssignment specs).

Each blob is ``int16 version`` followed by the body at that version (non-flexible, v0-3).
Decoding is forward compatible the way Kafka's own ConsumerProtocol is: a blob from a newer
client is read with our highest version and the unknown tail is ignored. The broker parses
assignments only to record partition ownership; otherwise these bytes are opaque to it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Self

from brokers.core.errors import ProtocolViolation
from brokers.core.protocol.primitives import Buffer, Reader, Writer
from brokers.core.protocol.schema import (
    BYTES,
    DECODE_ERRORS,
    INT32,
    STRING,
    ArrayOf,
    Struct,
    decode_struct,
    encode_struct,
    f,
    plan,
)

MAX_VERSION = 3


# One topic and some of its partitions, as the blobs list them (owned or assigned). Not the
# broker's ``coordinator.TopicPartition``, which names one partition.
@dataclass(slots=True)
class ConsumerTopicPartitions(Struct):
    topic: str = f(STRING, "0+")
    partitions: list[int] = f(ArrayOf(INT32), "0+")


class _Embedded(Struct):
    __slots__ = ()

    def encode(self) -> bytes:
        # Each embedded struct declares ``version`` (a field of the concrete dataclass).
        version: int = self.version  # type: ignore[attr-defined]
        if not 0 <= version <= MAX_VERSION:
            raise ValueError(f"{type(self).__name__} version {version} is outside 0-{MAX_VERSION}")
        w = Writer()
        w.int16(version)
        encode_struct(w, self, plan(type(self), version))
        return b"".join(w.finish())

    @classmethod
    def decode(cls, data: Buffer) -> Self:
        r = Reader(data)
        try:
            version = r.int16()
            if version < 0:
                raise ProtocolViolation(f"negative {cls.__name__} version {version}")
            obj = decode_struct(cls, plan(cls, min(version, MAX_VERSION)), r)
        except ProtocolViolation:
            raise
        except DECODE_ERRORS as exc:
            raise ProtocolViolation(f"malformed {cls.__name__}: {exc}") from exc
        obj.version = version  # type: ignore[attr-defined]  # as in encode()
        if version <= MAX_VERSION:
            r.done()
        return obj


@dataclass(slots=True)
class ConsumerProtocolSubscription(_Embedded):
    topics: list[str] = f(ArrayOf(STRING), "0+")
    user_data: bytes | None = f(BYTES, "0+", nullable="0+", default=None)
    owned_partitions: list[ConsumerTopicPartitions] = f(ArrayOf(ConsumerTopicPartitions), "1+")
    generation_id: int = f(INT32, "2+", default=-1)
    rack_id: str | None = f(STRING, "3+", nullable="3+", default=None)
    version: int = 0  # not a schema field: the blob's leading int16


@dataclass(slots=True)
class ConsumerProtocolAssignment(_Embedded):
    assigned_partitions: list[ConsumerTopicPartitions] = f(
        ArrayOf(ConsumerTopicPartitions), "0+")
    user_data: bytes | None = f(BYTES, "0+", nullable="0+", default=None)
    version: int = 0
