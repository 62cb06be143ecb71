"""Hand-written wire code for the load client's hot requests: Produce, Fetch, ApiVersions.

Everything else the client says (Metadata, CreateTopics, group and offset APIs) goes through the
shared schema codec in ``brokers.core.protocol``; these three are written out with ``struct``
because the client sends one of them per measured operation and must stay far cheaper than the
broker it measures. Tests check them byte-for-byte against the shared codec.

Versions: Produce 3..8 and Fetch 4..11 (non-flexible, no topic ids; see docs/kafka-protocol.md),
ApiVersions 0..2 (empty request body in all three).

A Produce request for one partition is laid out so the whole frame lives in one reusable buffer:
``[frame prefix][RecordBatch]``. The prefix is built once per (topic, partition); per request only
the correlation id (and the batch inside) change, so sending is one ``transport.write``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from brokers.core.errors import ProtocolViolation

__all__ = [
    "API_VERSIONS",
    "FETCH",
    "PRODUCE",
    "FetchPartitionResult",
    "ProducePartitionResult",
    "decode_api_versions_response",
    "decode_fetch_response",
    "decode_produce_response",
    "encode_fetch_request",
    "encode_request_header",
    "produce_prefix",
    "produce_prefix_size",
]

PRODUCE = 0
FETCH = 1
API_VERSIONS = 18

# Offset of the correlation id inside a frame (after size i32, api_key i16, api_version i16).
CORRELATION_OFFSET = 8

_HEADER = struct.Struct(">ihhih")  # size, api_key, api_version, correlation_id, client_id len
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_ACKS = struct.Struct(">hhi")  # transactional_id = null (-1), acks, timeout_ms
_ONE_TOPIC = struct.Struct(">ih")  # topic array count 1, topic name length
_ONE_PART = struct.Struct(">iii")  # partition array count 1, partition index, records length


def _str(s: str) -> bytes:
    b = s.encode()
    return _I16.pack(len(b)) + b


def encode_request_header(
    size_after_prefix: int, api_key: int, version: int, correlation_id: int, client_id: bytes
) -> bytes:
    """Size prefix + request header v1. ``size_after_prefix`` = body length."""
    return (
        _HEADER.pack(
            size_after_prefix + 10 + len(client_id),
            api_key,
            version,
            correlation_id,
            len(client_id),
        )
        + client_id
    )


def produce_prefix_size(client_id: bytes, topic: bytes) -> int:
    return _HEADER.size + len(client_id) + _ACKS.size + _ONE_TOPIC.size + len(topic) + 12


def produce_prefix(
    *,
    version: int,
    client_id: bytes,
    topic: bytes,
    partition: int,
    acks: int,
    timeout_ms: int,
    batch_size: int,
    correlation_id: int = 0,
) -> bytes:
    """Frame prefix of a one-partition Produce request (v3..8 bodies are identical) whose
    records field is the ``batch_size`` bytes that follow it."""
    body_after_header = _ACKS.size + _ONE_TOPIC.size + len(topic) + _ONE_PART.size + batch_size
    return (
        encode_request_header(body_after_header, PRODUCE, version, correlation_id, client_id)
        + _ACKS.pack(-1, acks, timeout_ms)
        + _ONE_TOPIC.pack(1, len(topic))
        + topic
        + _ONE_PART.pack(1, partition, batch_size)
    )


@dataclass(frozen=True, slots=True)
class ProducePartitionResult:
    topic: str
    partition: int
    error_code: int
    base_offset: int


class _Reader:
    """Minimal bounds-checked cursor; malformed responses raise ProtocolViolation."""

    __slots__ = ("data", "end", "pos")

    def __init__(self, data: bytes | memoryview, pos: int = 0) -> None:
        self.data = data
        self.pos = pos
        self.end = len(data)

    def take(self, st: struct.Struct) -> tuple:
        p = self.pos
        if p + st.size > self.end:
            raise ProtocolViolation("truncated response")
        self.pos = p + st.size
        return st.unpack_from(self.data, p)

    def i16(self) -> int:
        return self.take(_I16)[0]

    def i32(self) -> int:
        return self.take(_I32)[0]

    def i64(self) -> int:
        return self.take(_I64)[0]

    def skip(self, n: int) -> None:
        if n < 0 or self.pos + n > self.end:
            raise ProtocolViolation("truncated response")
        self.pos += n

    def string(self) -> str | None:
        n = self.i16()
        if n < 0:
            return None
        p = self.pos
        self.skip(n)
        return bytes(self.data[p : p + n]).decode()

    def count(self) -> int:
        n = self.i32()
        if n > self.end - self.pos:
            raise ProtocolViolation("array count larger than the response")
        return n


_PRODUCE_PART = struct.Struct(">ihqq")  # index, error_code, base_offset, log_append_time_ms


def decode_produce_response(
    body: bytes | memoryview, version: int, pos: int = 0
) -> list[ProducePartitionResult]:
    """Produce response v3..8 body (after the 4-byte response header)."""
    r = _Reader(body, pos)
    out: list[ProducePartitionResult] = []
    for _t in range(r.count()):
        topic = r.string() or ""
        for _p in range(r.count()):
            index, err, base, _lat = r.take(_PRODUCE_PART)
            if version >= 5:
                r.skip(8)  # log_start_offset
            if version >= 8:
                for _e in range(r.count()):
                    r.skip(4)
                    r.string()
                r.string()  # error_message
            out.append(ProducePartitionResult(topic, index, err, base))
    r.skip(4)  # throttle_time_ms
    return out


def encode_fetch_request(
    *,
    version: int,
    max_wait_ms: int,
    min_bytes: int,
    max_bytes: int,
    topic: str,
    partitions: list[tuple[int, int, int]],
) -> bytes:
    """Fetch v4..11 body for one topic; ``partitions`` = (partition, fetch_offset, max_bytes)."""
    out = bytearray(struct.pack(">iiiib", -1, max_wait_ms, min_bytes, max_bytes, 0))
    if version >= 7:
        out += struct.pack(">ii", 0, -1)  # no fetch session (full fetch every time)
    out += _I32.pack(1) + _str(topic) + _I32.pack(len(partitions))
    for partition, offset, pmax in partitions:
        out += _I32.pack(partition)
        if version >= 9:
            out += _I32.pack(-1)  # current_leader_epoch: unknown
        out += _I64.pack(offset)
        if version >= 5:
            out += _I64.pack(-1)  # log_start_offset (followers only)
        out += _I32.pack(pmax)
    if version >= 7:
        out += _I32.pack(0)  # forgotten_topics_data
    if version >= 11:
        out += _str("")  # rack_id
    return bytes(out)


@dataclass(frozen=True, slots=True)
class FetchPartitionResult:
    topic: str
    partition: int
    error_code: int
    high_watermark: int
    # Zero-copy view into the response frame (None when the broker sent null).
    records: memoryview | None


_FETCH_PART = struct.Struct(">ihqq")  # partition, error_code, high_watermark, last_stable


def decode_fetch_response(
    body: bytes | memoryview, version: int, pos: int = 0
) -> tuple[int, list[FetchPartitionResult]]:
    """Fetch response v4..11 body; returns (top-level error_code, partitions)."""
    mv = body if isinstance(body, memoryview) else memoryview(body)
    r = _Reader(mv, pos)
    r.skip(4)  # throttle_time_ms
    top_error = 0
    if version >= 7:
        top_error = r.i16()
        r.skip(4)  # session_id
    out: list[FetchPartitionResult] = []
    for _t in range(r.count()):
        topic = r.string() or ""
        for _p in range(r.count()):
            partition, err, hw, _lso = r.take(_FETCH_PART)
            if version >= 5:
                r.skip(8)  # log_start_offset
            n_aborted = r.i32()
            if n_aborted > 0:
                r.skip(16 * n_aborted)
            if version >= 11:
                r.skip(4)  # preferred_read_replica
            size = r.i32()
            records = None
            if size >= 0:
                p = r.pos
                r.skip(size)
                records = mv[p : p + size]
            out.append(FetchPartitionResult(topic, partition, err, hw, records))
    return top_error, out


_API_RANGE = struct.Struct(">hhh")


def decode_api_versions_response(
    body: bytes | memoryview, pos: int = 0
) -> tuple[int, dict[int, tuple[int, int]]]:
    """ApiVersions response; only the v0 prefix (error_code, api_keys) is read, which is also
    the shape of the KIP-511 fallback answer to a version the broker does not support."""
    r = _Reader(body, pos)
    err = r.i16()
    ranges: dict[int, tuple[int, int]] = {}
    for _ in range(r.count()):
        key, lo, hi = r.take(_API_RANGE)
        ranges[key] = (lo, hi)
    return err, ranges
