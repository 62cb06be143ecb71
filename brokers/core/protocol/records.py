"""RecordBatch v2 (magic 2): header layout, batch iteration, CRC-32C, a generic builder and
decoder. The broker stores what producers send, so the hot path only ever touches the
61-byte header (``iter_batches``/``patch_batch``); ``build_batch``/``decode_records`` are for
tests, tools and the load client.

Header (big-endian, byte offsets): baseOffset q@0, batchLength i@8 (bytes after this field),
partitionLeaderEpoch i@12, magic b@16, crc I@17 (CRC-32C over [21, end)), attributes h@21,
lastOffsetDelta i@23, baseTimestamp q@27, maxTimestamp q@35, producerId q@43,
producerEpoch h@51, baseSequence i@53, recordsCount i@57, records @61.
Only baseOffset and partitionLeaderEpoch lie outside the CRC, which is why the broker may
rewrite exactly those two.

Errors: malformed batches raise ``errors.CorruptMessage`` (wire code 2, what a Produce
partition should answer); compression codecs other than none/gzip raise
``UnsupportedCompression`` from ``decode_records`` (the broker never decompresses).
"""

from __future__ import annotations

import gzip
import struct
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

from crc32c import crc32c

from brokers.core.errors import CorruptMessage, ProtocolViolation, TwinbenchError
from brokers.core.protocol.consumer_protocol import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
    TopicPartition,
)
from brokers.core.protocol.primitives import Buffer, Reader, Writer

__all__ = [
    "BATCH_HEADER",
    "HEADER_SIZE",
    "BatchHeader",
    "ConsumerProtocolAssignment",
    "ConsumerProtocolSubscription",
    "Record",
    "TopicPartition",
    "UnsupportedCompression",
    "batch_crc",
    "build_batch",
    "decode_records",
    "iter_batches",
    "patch_batch",
]

BATCH_HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = BATCH_HEADER.size  # 61
LOG_OVERHEAD = 12  # baseOffset + batchLength: total batch size = batchLength + 12
CRC_START = 21
MAGIC_OFFSET = 16
_OFFSET_AND_LENGTH = struct.Struct(">qi")
_PATCH = struct.Struct(">q")
_EPOCH = struct.Struct(">i")

COMPRESSION_NONE = 0
COMPRESSION_GZIP = 1
ATTR_COMPRESSION_MASK = 0x07
ATTR_LOG_APPEND_TIME = 0x08
ATTR_TRANSACTIONAL = 0x10
ATTR_CONTROL = 0x20


class UnsupportedCompression(TwinbenchError):
    """decode_records met a codec it cannot decompress (snappy, lz4, zstd)."""


class BatchHeader(NamedTuple):
    position: int  # offset of the batch inside the buffer given to iter_batches
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def size(self) -> int:
        """Total bytes of the batch, header included."""
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def compression(self) -> int:
        return self.attributes & ATTR_COMPRESSION_MASK

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & ATTR_TRANSACTIONAL)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & ATTR_CONTROL)


def batch_crc(batch: Buffer) -> int:
    """CRC-32C of one batch's CRC-covered range (compare with ``BatchHeader.crc``)."""
    mv = memoryview(batch)
    return crc32c(mv[CRC_START:])


def iter_batches(buf: Buffer, *, verify_crc: bool = False,
                 allow_partial_tail: bool = True) -> Iterator[BatchHeader]:
    """Yield the header of each complete batch in ``buf``.

    A trailing partial batch is normal in Fetch responses (Kafka cuts at max_bytes) and in a
    torn log tail, so by default iteration just stops there; with ``allow_partial_tail=False``
    it raises CorruptMessage instead (Produce bodies must be whole). The header is validated
    (magic 2, sane batchLength) before the batch is trusted.
    """
    mv = buf if isinstance(buf, memoryview) else memoryview(buf)
    end = len(mv)
    pos = 0
    while pos < end:
        if end - pos < HEADER_SIZE:
            if allow_partial_tail:
                return
            raise CorruptMessage(f"truncated batch header at {pos}")
        h = BatchHeader(pos, *BATCH_HEADER.unpack_from(mv, pos))
        if h.magic != 2:
            raise CorruptMessage(f"batch at {pos} has magic {h.magic}, only magic 2 is supported")
        if h.batch_length < HEADER_SIZE - LOG_OVERHEAD:
            raise CorruptMessage(f"batch at {pos} has impossible batchLength {h.batch_length}")
        stop = pos + h.size
        if stop > end:
            if allow_partial_tail:
                return
            raise CorruptMessage(f"batch at {pos} claims {h.size} bytes, {end - pos} present")
        if verify_crc and crc32c(mv[pos + CRC_START : stop]) != h.crc:
            raise CorruptMessage(f"CRC mismatch in batch at {pos}")
        yield h
        pos = stop


def patch_batch(buf: bytearray | memoryview, position: int, base_offset: int,
                partition_leader_epoch: int | None = None) -> None:
    """Rewrite baseOffset (and optionally partitionLeaderEpoch) in place; CRC stays valid."""
    _PATCH.pack_into(buf, position, base_offset)
    if partition_leader_epoch is not None:
        _EPOCH.pack_into(buf, position + 12, partition_leader_epoch)


@dataclass(slots=True)
class Record:
    """One decoded record with absolute offset and timestamp."""

    offset: int = 0
    timestamp: int = -1
    key: bytes | None = None
    value: bytes | None = None
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)


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
    if compression == COMPRESSION_GZIP:
        payload = gzip.compress(payload)
    elif compression != COMPRESSION_NONE:
        raise UnsupportedCompression(f"build_batch supports none/gzip, not codec {compression}")
    attributes = compression | (ATTR_TRANSACTIONAL if transactional else 0)
    batch_length = HEADER_SIZE - LOG_OVERHEAD + len(payload)
    header = bytearray(BATCH_HEADER.pack(
        base_offset, batch_length, partition_leader_epoch, 2, 0, attributes, len(recs) - 1,
        base_ts, max(stamps), producer_id, producer_epoch, base_sequence, len(recs)))
    out = header + payload
    struct.pack_into(">I", out, 17, crc32c(memoryview(out)[CRC_START:]))
    return bytes(out)


def decode_records(batch: Buffer, *, verify_crc: bool = True) -> list[Record]:
    """Decode every record of every batch in ``batch`` (generic; tests and tools)."""
    out: list[Record] = []
    mv = batch if isinstance(batch, memoryview) else memoryview(batch)
    for h in iter_batches(mv, verify_crc=verify_crc, allow_partial_tail=False):
        body: Buffer = mv[h.position + HEADER_SIZE : h.position + h.size]
        if h.compression == COMPRESSION_GZIP:
            try:
                body = gzip.decompress(body)
            except (OSError, EOFError, ValueError) as exc:
                raise CorruptMessage(f"bad gzip payload in batch at {h.position}") from exc
        elif h.compression != COMPRESSION_NONE:
            raise UnsupportedCompression(
                f"batch at {h.position} uses codec {h.compression}; only none/gzip decode here")
        try:
            out.extend(_decode_batch_records(Reader(body), h))
        except ProtocolViolation as exc:
            raise CorruptMessage(f"malformed record in batch at {h.position}: {exc}") from exc
    return out


def _blob(r: Reader) -> bytes | None:
    n = r.varint()
    if n < -1:
        raise ProtocolViolation(f"negative length {n}")
    return None if n == -1 else bytes(r.raw(n))


def _decode_batch_records(r: Reader, h: BatchHeader) -> list[Record]:
    if h.records_count < 0 or h.records_count > r.remaining:
        raise ProtocolViolation(f"recordsCount {h.records_count} impossible")
    recs = []
    for _ in range(h.records_count):
        length = r.varint()
        if length < 0:
            raise ProtocolViolation("negative record length")
        rr = Reader(r.raw(length))
        rr.int8()  # attributes
        ts_delta = rr.varlong()
        off_delta = rr.varint()
        key = _blob(rr)
        value = _blob(rr)
        nheaders = rr.varint()
        if nheaders < 0 or nheaders > rr.remaining:
            raise ProtocolViolation(f"header count {nheaders} impossible")
        headers = []
        for _ in range(nheaders):
            hk = _blob(rr)
            if hk is None:
                raise ProtocolViolation("null header key")
            headers.append((hk.decode("utf-8", "replace"), _blob(rr)))
        rr.done()
        recs.append(Record(h.base_offset + off_delta, h.base_timestamp + ts_delta, key, value,
                           headers))
    r.done()
    return recs
