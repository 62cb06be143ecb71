# ruff: noqa: RUF009  -- schema.f() returns a dataclasses.field(); ruff cannot see that.
"""Fetch (key 1), versions 4-12 (12 is flexible: compact encodings, last_fetched_epoch per
partition, a tagged cluster_id; the response's tagged diverging-epoch/leader/snapshot structs
are for replicas and KRaft, never sent by us, and skipped when read).

Subtleties for the broker: v7+ carries incremental-fetch sessions (``session_id``,
``session_epoch``, ``forgotten_topics_data``); we do not implement sessions, so always answer
``session_id=0`` (the default) and treat every request as a full fetch. v9+ sends
``current_leader_epoch`` per partition (-1 = unknown). v11 adds ``rack_id`` (request) and
``preferred_read_replica`` (response, default -1: read from the leader).
``aborted_transactions`` is a nullable array (None = none, the default). ``records`` may be
any buffer; large ones are emitted by reference (never copied) by ``FetchResponse.encode``.
A full response must list every partition the request named.

``FetchRequest.decode`` and ``FetchResponse.encode`` are hand-written (hot path), one branch
for the classic versions and one for v12.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from brokers.core.errors import ProtocolViolation
from brokers.core.protocol.header import flexible_from
from brokers.core.protocol.primitives import (
    S16,
    S32,
    ZERO_COPY_THRESHOLD,
    Buffer,
    Parts,
    Reader,
    put_uvarint,
    uvarint_at,
)
from brokers.core.protocol.schema import (
    INT8,
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
    decode_tagged,
    f,
    plan,
    skip_tagged_at,
)

API_KEY = 1


@dataclass(slots=True)
class FetchPartition(Struct):
    partition: int = f(INT32, "0+")
    current_leader_epoch: int = f(INT32, "9+", default=-1)
    fetch_offset: int = f(INT64, "0+")
    last_fetched_epoch: int = f(INT32, "12+", default=-1)
    log_start_offset: int = f(INT64, "5+", default=-1)
    partition_max_bytes: int = f(INT32, "0+")


@dataclass(slots=True)
class FetchTopic(Struct):
    topic: str = f(STRING, "0-12")
    partitions: list[FetchPartition] = f(ArrayOf(FetchPartition), "0+")


@dataclass(slots=True)
class ForgottenTopic(Struct):
    topic: str = f(STRING, "7-12")
    partitions: list[int] = f(ArrayOf(INT32), "7+")


# isolation_level: what a consumer may read of transactions (docs/transactions.md).
READ_UNCOMMITTED = 0
READ_COMMITTED = 1

_REQ_HEAD = struct.Struct(">iiiib")  # replica_id, max_wait_ms, min_bytes, max_bytes, isolation
_SESSION = struct.Struct(">ii")
_PART_V4 = struct.Struct(">iqi")  # partition, fetch_offset, partition_max_bytes
_PART_V5 = struct.Struct(">iqqi")  # + log_start_offset
_PART_V9 = struct.Struct(">iiqqi")  # + current_leader_epoch


@dataclass(slots=True)
class FetchRequest(Message):
    API_KEY = API_KEY
    VERSIONS = (4, 12)
    FLEXIBLE = flexible_from(API_KEY)
    replica_id: int = f(INT32, "0-14", default=-1)
    max_wait_ms: int = f(INT32, "0+")
    min_bytes: int = f(INT32, "0+")
    max_bytes: int = f(INT32, "3+", default=0x7FFFFFFF)
    isolation_level: int = f(INT8, "4+", default=0)
    session_id: int = f(INT32, "7+", default=0)
    session_epoch: int = f(INT32, "7+", default=-1)
    topics: list[FetchTopic] = f(ArrayOf(FetchTopic), "0+")
    forgotten_topics_data: list[ForgottenTopic] = f(ArrayOf(ForgottenTopic), "7+")
    rack_id: str = f(STRING, "11+", default="")
    cluster_id: str | None = f(STRING, "12+", nullable="12+", default=None, tag=0)

    @classmethod
    def decode(cls, data: Buffer, version: int) -> FetchRequest:
        check_decode_version(cls, version)
        try:
            if version >= cls.FLEXIBLE:
                return _decode_flexible_request(cls, data, version)
            return _decode_fetch_request(cls, data, version)
        except (struct.error, ValueError, IndexError) as exc:
            raise ProtocolViolation(f"malformed FetchRequest v{version}: {exc}") from exc


def _string(mv: memoryview, pos: int, end: int) -> tuple[str, int]:
    n = S16.unpack_from(mv, pos)[0]
    pos += 2
    if n < 0 or pos + n > end:
        raise ProtocolViolation(f"bad string length {n}")
    return str(mv[pos : pos + n], "utf-8"), pos + n


def _count(mv: memoryview, pos: int, end: int, min_size: int) -> int:
    n = S32.unpack_from(mv, pos)[0]
    if n < 0 or n * min_size > end - pos - 4:
        raise ProtocolViolation(f"bad array length {n}")
    return n


def _decode_fetch_request(cls: type[FetchRequest], data: Buffer, version: int) -> FetchRequest:
    mv = data if isinstance(data, memoryview) else memoryview(data)
    end = len(mv)
    replica_id, max_wait, min_bytes, max_bytes, isolation = _REQ_HEAD.unpack_from(mv, 0)
    pos = 17
    session_id, session_epoch = 0, -1
    if version >= 7:
        session_id, session_epoch = _SESSION.unpack_from(mv, pos)
        pos += 8
    if version >= 9:
        pfmt, psize = _PART_V9, 28
    elif version >= 5:
        pfmt, psize = _PART_V5, 24
    else:
        pfmt, psize = _PART_V4, 16
    ntopics = _count(mv, pos, end, 6)
    pos += 4
    topics = []
    for _ in range(ntopics):
        name, pos = _string(mv, pos, end)
        nparts = _count(mv, pos, end, psize)
        pos += 4
        parts = []
        for _ in range(nparts):
            if version >= 9:
                p, epoch, off, lso, pmax = pfmt.unpack_from(mv, pos)
            elif version >= 5:
                p, off, lso, pmax = pfmt.unpack_from(mv, pos)
                epoch = -1
            else:
                p, off, pmax = pfmt.unpack_from(mv, pos)
                epoch, lso = -1, -1
            pos += psize
            parts.append(FetchPartition(p, epoch, off, -1, lso, pmax))
        topics.append(FetchTopic(name, parts))
    forgotten = []
    rack_id = ""
    if version >= 7:
        nforgot = _count(mv, pos, end, 6)
        pos += 4
        for _ in range(nforgot):
            name, pos = _string(mv, pos, end)
            n = _count(mv, pos, end, 4)
            pos += 4
            forgotten.append(ForgottenTopic(name, list(struct.unpack_from(f">{n}i", mv, pos))))
            pos += 4 * n
        if version >= 11:
            rack_id, pos = _string(mv, pos, end)
    if pos != end:
        raise ProtocolViolation(f"{end - pos} unexpected trailing bytes")
    return cls(replica_id, max_wait, min_bytes, max_bytes, isolation, session_id, session_epoch,
               topics, forgotten, rack_id)


_PART_V12 = struct.Struct(">iiqiqi")  # partition, leader epoch, offset, last epoch, lso, max


def _compact_string(mv: memoryview, pos: int, end: int) -> tuple[str, int]:
    n, pos = uvarint_at(mv, pos)
    n -= 1
    if n < 0 or pos + n > end:
        raise ProtocolViolation(f"bad compact string length {n}")
    return str(mv[pos : pos + n], "utf-8"), pos + n


def _compact_count(mv: memoryview, pos: int, end: int, min_size: int) -> tuple[int, int]:
    n, pos = uvarint_at(mv, pos)
    n -= 1
    if n < 0 or n * min_size > end - pos:
        raise ProtocolViolation(f"bad compact array length {n}")
    return n, pos


def _decode_flexible_request(cls: type[FetchRequest], data: Buffer, version: int
                             ) -> FetchRequest:
    # v12: the classic path's shape with compact lengths and tagged-field sections.
    mv = data if isinstance(data, memoryview) else memoryview(data)
    end = len(mv)
    replica_id, max_wait, min_bytes, max_bytes, isolation = _REQ_HEAD.unpack_from(mv, 0)
    session_id, session_epoch = _SESSION.unpack_from(mv, 17)
    ntopics, pos = _compact_count(mv, 25, end, 3)
    topics = []
    for _ in range(ntopics):
        name, pos = _compact_string(mv, pos, end)
        nparts, pos = _compact_count(mv, pos, end, _PART_V12.size + 1)
        parts = []
        for _ in range(nparts):
            p, epoch, off, last_epoch, lso, pmax = _PART_V12.unpack_from(mv, pos)
            pos += _PART_V12.size
            if mv[pos]:
                pos = skip_tagged_at(mv, pos)
            else:
                pos += 1
            parts.append(FetchPartition(p, epoch, off, last_epoch, lso, pmax))
        pos = skip_tagged_at(mv, pos)
        topics.append(FetchTopic(name, parts))
    forgotten = []
    nforgot, pos = _compact_count(mv, pos, end, 3)
    for _ in range(nforgot):
        name, pos = _compact_string(mv, pos, end)
        n, pos = _compact_count(mv, pos, end, 4)
        forgotten.append(ForgottenTopic(name, list(struct.unpack_from(f">{n}i", mv, pos))))
        pos = skip_tagged_at(mv, pos + 4 * n)
    rack_id, pos = _compact_string(mv, pos, end)
    cluster_id: str | None = None
    if pos < end and mv[pos] == 0:
        pos += 1
    else:  # the one tagged field a request may carry: cluster_id
        r = Reader(mv, pos)
        tags: dict[str, object] = {}
        decode_tagged(r, plan(cls, version, True).tagged or (), tags)
        found, pos = tags.get("cluster_id"), r.pos
        cluster_id = found if isinstance(found, str) else None  # a STRING field: str or None
    if pos != end:
        raise ProtocolViolation(f"{end - pos} unexpected trailing bytes")
    return cls(replica_id, max_wait, min_bytes, max_bytes, isolation, session_id, session_epoch,
               topics, forgotten, rack_id, cluster_id)


@dataclass(slots=True)
class AbortedTransaction(Struct):
    producer_id: int = f(INT64, "4+")
    first_offset: int = f(INT64, "4+")


@dataclass(slots=True)
class PartitionData(Struct):
    partition_index: int = f(INT32, "0+")
    error_code: int = f(INT16, "0+")
    high_watermark: int = f(INT64, "0+")
    last_stable_offset: int = f(INT64, "4+", default=-1)
    log_start_offset: int = f(INT64, "5+", default=-1)
    aborted_transactions: list[AbortedTransaction] | None = f(
        ArrayOf(AbortedTransaction), "4+", nullable="4+", default=None)
    preferred_read_replica: int = f(INT32, "11+", default=-1)
    records: memoryview | bytes | None = f(RECORDS, "0+", nullable="0+")


@dataclass(slots=True)
class FetchableTopicResponse(Struct):
    topic: str = f(STRING, "0-12")
    partitions: list[PartitionData] = f(ArrayOf(PartitionData), "0+")


_RESP_HEAD = struct.Struct(">ihi")  # throttle_time_ms, error_code, session_id (v7+)
_PD_V4 = struct.Struct(">ihqq")  # partition_index, error_code, high_watermark, last_stable
_PD_V5 = struct.Struct(">ihqqq")  # + log_start_offset
_ABORTED = struct.Struct(">qq")


@dataclass(slots=True)
class FetchResponse(Message):
    API_KEY = API_KEY
    VERSIONS = (4, 12)
    FLEXIBLE = flexible_from(API_KEY)
    throttle_time_ms: int = f(INT32, "1+")
    error_code: int = f(INT16, "7+")
    session_id: int = f(INT32, "7+", default=0)
    responses: list[FetchableTopicResponse] = f(ArrayOf(FetchableTopicResponse), "0+")

    def encode(self, version: int) -> Parts:
        check_encode_version(self, version)
        if version >= self.FLEXIBLE:
            return self._encode_flexible()
        parts: Parts = []
        if version >= 7:
            out = bytearray(_RESP_HEAD.pack(self.throttle_time_ms, self.error_code,
                                            self.session_id))
        else:
            out = bytearray(S32.pack(self.throttle_time_ms))
        out += S32.pack(len(self.responses))
        for t in self.responses:
            name = t.topic.encode()
            out += S16.pack(len(name))
            out += name
            out += S32.pack(len(t.partitions))
            for p in t.partitions:
                if version >= 5:
                    out += _PD_V5.pack(p.partition_index, p.error_code, p.high_watermark,
                                       p.last_stable_offset, p.log_start_offset)
                else:
                    out += _PD_V4.pack(p.partition_index, p.error_code, p.high_watermark,
                                       p.last_stable_offset)
                aborted = p.aborted_transactions
                if aborted is None:
                    out += b"\xff\xff\xff\xff"
                else:
                    out += S32.pack(len(aborted))
                    for a in aborted:
                        out += _ABORTED.pack(a.producer_id, a.first_offset)
                if version >= 11:
                    out += S32.pack(p.preferred_read_replica)
                records = p.records
                if records is None:
                    out += b"\xff\xff\xff\xff"
                    continue
                n = len(records)
                out += S32.pack(n)
                if n >= ZERO_COPY_THRESHOLD:
                    # Stored log bytes go out by reference: the whole point of Fetch is not
                    # to copy megabytes per request.
                    parts.append(bytes(out))
                    parts.append(records)
                    out = bytearray()
                else:
                    out += records
        if out:
            parts.append(bytes(out))
        return parts

    def _encode_flexible(self) -> Parts:
        parts: Parts = []
        out = bytearray(_RESP_HEAD.pack(self.throttle_time_ms, self.error_code, self.session_id))
        put_uvarint(out, len(self.responses) + 1)
        for t in self.responses:
            name = t.topic.encode()
            put_uvarint(out, len(name) + 1)
            out += name
            put_uvarint(out, len(t.partitions) + 1)
            for p in t.partitions:
                out += _PD_V5.pack(p.partition_index, p.error_code, p.high_watermark,
                                   p.last_stable_offset, p.log_start_offset)
                aborted = p.aborted_transactions
                if aborted is None:
                    out.append(0)
                else:
                    put_uvarint(out, len(aborted) + 1)
                    for a in aborted:
                        out += _ABORTED.pack(a.producer_id, a.first_offset)
                        out.append(0)  # no tagged fields
                out += S32.pack(p.preferred_read_replica)
                records = p.records
                if records is None:
                    out.append(0)
                else:
                    n = len(records)
                    put_uvarint(out, n + 1)
                    if n >= ZERO_COPY_THRESHOLD:
                        parts.append(bytes(out))
                        parts.append(records)
                        out = bytearray()
                    else:
                        out += records
                out.append(0)  # partition tagged fields: none
            out.append(0)  # topic tagged fields
        out.append(0)  # response tagged fields
        parts.append(bytes(out))
        return parts
