"""A generic RecordBatch v2 builder for tests: any keys, values, headers, timestamps, codecs.

The product never builds arbitrary batches (producers send them; the load client stamps its own
fixed layout, ``workloads/payload.py``), so this lives with the tests. It writes the header
through the codec's one layout definition (``brokers.core.protocol.records``) and is checked
against kafka-python's builder (tests/unit/brokers/core/protocol/test_kafka_python.py).
"""

from __future__ import annotations

import gzip
import time
from collections.abc import Iterable

import cramjam
from crc32c import crc32c

from brokers.core.protocol.primitives import Writer
from brokers.core.protocol.records import (
    ATTR_TRANSACTIONAL,
    BATCH_HEADER,
    COMPRESSION_GZIP,
    COMPRESSION_LZ4,
    COMPRESSION_NONE,
    COMPRESSION_SNAPPY,
    COMPRESSION_ZSTD,
    CRC,
    CRC_AT,
    CRC_START,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC_V2,
    Record,
    UnsupportedCompression,
)

__all__ = ["Record", "build_batch", "compress"]


def _encode_record(w: Writer, rec: Record, offset_delta: int, timestamp_delta: int) -> None:
    body = Writer()
    body.int8(0)  # record attributes: unused by the format
    body.varlong(timestamp_delta)
    body.varint(offset_delta)
    for blob in (rec.key, rec.value):
        if blob is None:
            body.varint(-1)
        else:
            body.varint(len(blob))
            body.cur += blob
    body.varint(len(rec.headers))
    for hkey, hval in rec.headers:
        kb = hkey.encode()
        body.varint(len(kb))
        body.cur += kb
        if hval is None:
            body.varint(-1)
        else:
            body.varint(len(hval))
            body.cur += hval
    w.varint(len(body.cur))
    w.cur += body.cur


def compress(codec: int, payload: bytes) -> bytes:
    """The records section compressed as a Kafka client would (raw snappy as librdkafka)."""
    if codec == COMPRESSION_NONE:
        return payload
    if codec == COMPRESSION_GZIP:
        return gzip.compress(payload)
    if codec == COMPRESSION_SNAPPY:
        return bytes(cramjam.snappy.compress_raw(payload))
    if codec == COMPRESSION_LZ4:
        return bytes(cramjam.lz4.compress(payload))
    if codec == COMPRESSION_ZSTD:
        return bytes(cramjam.zstd.compress(payload))
    raise UnsupportedCompression(f"compression codec {codec} is not defined by Kafka")


def build_batch(records: Iterable[Record | tuple[bytes | None, bytes | None]],
                base_offset: int = 0, *, timestamp_ms: int | None = None,
                producer_id: int = -1, producer_epoch: int = -1, base_sequence: int = -1,
                partition_leader_epoch: int = -1, transactional: bool = False,
                compression: int = COMPRESSION_NONE) -> bytes:
    """Build one RecordBatch v2. Tuples are (key, value) stamped with ``timestamp_ms``
    (default: now); Record objects keep their timestamp (-1 -> ``timestamp_ms``). Offsets
    are assigned consecutively from ``base_offset``; the objects' own offsets are ignored."""
    if timestamp_ms is None:
        timestamp_ms = int(time.time() * 1000)
    recs = [r if isinstance(r, Record) else Record(0, timestamp_ms, r[0], r[1]) for r in records]
    if not recs:
        raise ValueError("a record batch holds at least one record")
    stamps = [r.timestamp if r.timestamp >= 0 else timestamp_ms for r in recs]
    base_ts = min(stamps)
    w = Writer()
    for i, (rec, ts) in enumerate(zip(recs, stamps, strict=True)):
        _encode_record(w, rec, i, ts - base_ts)
    payload = bytes(w.cur)
    payload = compress(compression, payload)
    attributes = compression | (ATTR_TRANSACTIONAL if transactional else 0)
    batch_length = HEADER_SIZE - LOG_OVERHEAD + len(payload)
    header = bytearray(BATCH_HEADER.pack(
        base_offset, batch_length, partition_leader_epoch, MAGIC_V2, 0, attributes,
        len(recs) - 1, base_ts, max(stamps), producer_id, producer_epoch, base_sequence,
        len(recs)))
    out = header + payload
    CRC.pack_into(out, CRC_AT, crc32c(memoryview(out)[CRC_START:]))
    return bytes(out)
