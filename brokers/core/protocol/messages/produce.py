# ruff: noqa: RUF009  -- schema.f() returns a dataclasses.field(); ruff cannot see that.
"""Produce (key 0). Advertised 0-9 (9 is flexible, no new fields); the codec decodes all of
0-9 (0-2 only so the broker can recognise and reject them with UNSUPPORTED_VERSION: their
records are magic 0/1 message sets).

Subtleties: ``transactional_id`` (v3+) is nullable, default None. ``records`` is nullable and
decodes to a memoryview into the request frame (zero copy; keep the frame alive while you use
it, or copy with ``bytes()``). acks=0 requests get no response at all. Response fields:
``log_append_time_ms`` v2+ (-1 = CreateTime), ``log_start_offset`` v5+, ``record_errors`` and
``error_message`` (nullable) v8+.

``ProduceRequest.decode`` and ``ProduceResponse.encode`` are hand-written (the broker's hot
path), one branch for the classic versions and one for flexible v9; the other two
directions use the generic schema codec. Tests check both agree.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from brokers.core.errors import ProtocolViolation
from brokers.core.protocol.header import flexible_from
from brokers.core.protocol.primitives import S16, S32, Buffer, Parts, put_uvarint, uvarint_at
from brokers.core.protocol.schema import (
    INT16,
    INT32,
    INT64,
    RECORDS,
    STRING,
    ArrayOf,
    Message,
    Struct,
    check_decode_version,
    check_encode_version,
    f,
    skip_tagged_at,
)

API_KEY = 0


@dataclass(slots=True)
class PartitionProduceData(Struct):
    index: int = f(INT32, "0+")
    records: memoryview | bytes | None = f(RECORDS, "0+", nullable="0+")


@dataclass(slots=True)
class TopicProduceData(Struct):
    name: str = f(STRING, "0+")
    partition_data: list[PartitionProduceData] = f(ArrayOf(PartitionProduceData), "0+")


_ACKS_TIMEOUT = struct.Struct(">hi")
_INDEX_LEN = struct.Struct(">ii")


@dataclass(slots=True)
class ProduceRequest(Message):
    API_KEY = API_KEY
    VERSIONS = (0, 9)
    FLEXIBLE = flexible_from(API_KEY)
    transactional_id: str | None = f(STRING, "3+", nullable="3+", default=None)
    acks: int = f(INT16, "0+")
    timeout_ms: int = f(INT32, "0+")
    topic_data: list[TopicProduceData] = f(ArrayOf(TopicProduceData), "0+")

    @classmethod
    def decode(cls, data: Buffer, version: int) -> ProduceRequest:
        check_decode_version(cls, version)
        try:
            if version >= cls.FLEXIBLE:
                return _decode_flexible_request(cls, data)
            return _decode_produce_request(cls, data, version)
        except (struct.error, ValueError, IndexError) as exc:  # short buffer / bad UTF-8
            raise ProtocolViolation(f"malformed ProduceRequest v{version}: {exc}") from exc


def _decode_produce_request(cls: type[ProduceRequest], data: Buffer, version: int
                            ) -> ProduceRequest:
    # Hand-rolled for speed: one pass, precompiled structs, every length checked against the
    # remaining bytes before slicing. struct.error on a short read is converted by the caller.
    mv = data if isinstance(data, memoryview) else memoryview(data)
    end = len(mv)
    pos = 0
    tid = None
    if version >= 3:
        n = S16.unpack_from(mv, 0)[0]
        pos = 2
        if n >= 0:
            if pos + n > end:
                raise ProtocolViolation("truncated transactional_id")
            tid = str(mv[pos : pos + n], "utf-8")
            pos += n
        elif n != -1:
            raise ProtocolViolation(f"negative string length {n}")
    acks, timeout = _ACKS_TIMEOUT.unpack_from(mv, pos)
    pos += 6
    ntopics = S32.unpack_from(mv, pos)[0]
    pos += 4
    if ntopics < 0 or ntopics * 6 > end - pos:
        raise ProtocolViolation(f"bad topic count {ntopics}")
    topics = []
    for _ in range(ntopics):
        n = S16.unpack_from(mv, pos)[0]
        pos += 2
        if n < 0 or pos + n > end:
            raise ProtocolViolation(f"bad topic name length {n}")
        name = str(mv[pos : pos + n], "utf-8")
        pos += n
        nparts = S32.unpack_from(mv, pos)[0]
        pos += 4
        if nparts < 0 or nparts * 8 > end - pos:
            raise ProtocolViolation(f"bad partition count {nparts}")
        parts = []
        for _ in range(nparts):
            index, rlen = _INDEX_LEN.unpack_from(mv, pos)
            pos += 8
            if rlen >= 0:
                if pos + rlen > end:
                    raise ProtocolViolation("truncated records")
                records: memoryview | None = mv[pos : pos + rlen]
                pos += rlen
            elif rlen == -1:
                records = None
            else:
                raise ProtocolViolation(f"negative records length {rlen}")
            parts.append(PartitionProduceData(index, records))
        topics.append(TopicProduceData(name, parts))
    if pos != end:
        raise ProtocolViolation(f"{end - pos} unexpected trailing bytes")
    return cls(tid, acks, timeout, topics)


def _decode_flexible_request(cls: type[ProduceRequest], data: Buffer) -> ProduceRequest:
    # v9: the classic path's shape with compact lengths (one byte each in practice) and empty
    # tagged-field sections (one zero byte each).
    mv = data if isinstance(data, memoryview) else memoryview(data)
    end = len(mv)
    n, pos = uvarint_at(mv, 0)
    tid = None
    if n:
        n -= 1
        if pos + n > end:
            raise ProtocolViolation("truncated transactional_id")
        tid = str(mv[pos : pos + n], "utf-8")
        pos += n
    acks, timeout = _ACKS_TIMEOUT.unpack_from(mv, pos)
    pos += 6
    ntopics, pos = uvarint_at(mv, pos)
    ntopics -= 1
    if ntopics < 0 or ntopics * 3 > end - pos:
        raise ProtocolViolation(f"bad topic count {ntopics}")
    topics = []
    for _ in range(ntopics):
        n, pos = uvarint_at(mv, pos)
        n -= 1
        if n < 0 or pos + n > end:
            raise ProtocolViolation(f"bad topic name length {n}")
        name = str(mv[pos : pos + n], "utf-8")
        pos += n
        nparts, pos = uvarint_at(mv, pos)
        nparts -= 1
        if nparts < 0 or nparts * 6 > end - pos:
            raise ProtocolViolation(f"bad partition count {nparts}")
        parts = []
        for _ in range(nparts):
            index = S32.unpack_from(mv, pos)[0]
            pos += 4
            # Inlined: the per-partition work stays bytecode, no calls, in the usual case.
            rlen = mv[pos]
            if rlen < 0x80:
                pos += 1
            elif mv[pos + 1] < 0x80:  # batches under 16 KiB
                rlen = (rlen & 0x7F) | (mv[pos + 1] << 7)
                pos += 2
            else:
                rlen, pos = uvarint_at(mv, pos)
            if rlen:
                rlen -= 1
                if pos + rlen > end:
                    raise ProtocolViolation("truncated records")
                records: memoryview | None = mv[pos : pos + rlen]
                pos += rlen
            else:
                records = None
            if mv[pos]:
                pos = skip_tagged_at(mv, pos)
            else:
                pos += 1
            parts.append(PartitionProduceData(index, records))
        pos = skip_tagged_at(mv, pos) if mv[pos] else pos + 1
        topics.append(TopicProduceData(name, parts))
    pos = skip_tagged_at(mv, pos) if pos < end and mv[pos] else pos + 1
    if pos != end:
        raise ProtocolViolation(f"{end - pos} unexpected trailing bytes")
    return cls(tid, acks, timeout, topics)


@dataclass(slots=True)
class BatchIndexAndErrorMessage(Struct):
    batch_index: int = f(INT32, "8+")
    batch_index_error_message: str | None = f(STRING, "8+", nullable="8+", default=None)


@dataclass(slots=True)
class PartitionProduceResponse(Struct):
    index: int = f(INT32, "0+")
    error_code: int = f(INT16, "0+")
    base_offset: int = f(INT64, "0+")
    log_append_time_ms: int = f(INT64, "2+", default=-1)
    log_start_offset: int = f(INT64, "5+", default=-1)
    record_errors: list[BatchIndexAndErrorMessage] = f(ArrayOf(BatchIndexAndErrorMessage), "8+")
    error_message: str | None = f(STRING, "8+", nullable="8+", default=None)


@dataclass(slots=True)
class TopicProduceResponse(Struct):
    name: str = f(STRING, "0+")
    partition_responses: list[PartitionProduceResponse] = f(
        ArrayOf(PartitionProduceResponse), "0+")


# Fixed-width prefix of a partition response per version band.
_P0 = struct.Struct(">ihq")
_P2 = struct.Struct(">ihqq")
_P5 = struct.Struct(">ihqqq")


def _nstring(out: bytearray, s: str | None) -> None:
    if s is None:
        out += b"\xff\xff"
    else:
        b = s.encode()
        out += S16.pack(len(b))
        out += b


def _compact_nstring(out: bytearray, s: str | None) -> None:
    if s is None:
        out.append(0)
    else:
        b = s.encode()
        put_uvarint(out, len(b) + 1)
        out += b


@dataclass(slots=True)
class ProduceResponse(Message):
    API_KEY = API_KEY
    VERSIONS = (0, 9)
    FLEXIBLE = flexible_from(API_KEY)
    responses: list[TopicProduceResponse] = f(ArrayOf(TopicProduceResponse), "0+")
    throttle_time_ms: int = f(INT32, "1+")

    def encode(self, version: int) -> Parts:
        check_encode_version(self, version)
        if version >= self.FLEXIBLE:
            return self._encode_flexible()
        out = bytearray(S32.pack(len(self.responses)))
        for t in self.responses:
            name = t.name.encode()
            out += S16.pack(len(name))
            out += name
            out += S32.pack(len(t.partition_responses))
            for p in t.partition_responses:
                if version >= 5:
                    out += _P5.pack(p.index, p.error_code, p.base_offset, p.log_append_time_ms,
                                    p.log_start_offset)
                    if version >= 8:
                        out += S32.pack(len(p.record_errors))
                        for e in p.record_errors:
                            out += S32.pack(e.batch_index)
                            _nstring(out, e.batch_index_error_message)
                        _nstring(out, p.error_message)
                elif version >= 2:
                    out += _P2.pack(p.index, p.error_code, p.base_offset, p.log_append_time_ms)
                else:
                    out += _P0.pack(p.index, p.error_code, p.base_offset)
        if version >= 1:
            out += S32.pack(self.throttle_time_ms)
        return [bytes(out)]

    def _encode_flexible(self) -> Parts:
        out = bytearray()
        put_uvarint(out, len(self.responses) + 1)
        for t in self.responses:
            _compact_nstring(out, t.name)
            put_uvarint(out, len(t.partition_responses) + 1)
            for p in t.partition_responses:
                out += _P5.pack(p.index, p.error_code, p.base_offset, p.log_append_time_ms,
                                p.log_start_offset)
                put_uvarint(out, len(p.record_errors) + 1)
                for e in p.record_errors:
                    out += S32.pack(e.batch_index)
                    _compact_nstring(out, e.batch_index_error_message)
                    out.append(0)  # no tagged fields
                _compact_nstring(out, p.error_message)
                out.append(0)
            out.append(0)
        out += S32.pack(self.throttle_time_ms)
        out.append(0)
        return [bytes(out)]
