"""RecordBatch v2 (magic 2): the one definition of the batch header layout, batch iteration and
a generic record decoder.

The header layout (``HEADER_FIELDS`` and the offsets and structs derived from it) is shared by
every reader and writer of batches: the broker's storage, which treats a batch as opaque bytes
and only reads (and patches) header fields; the load client, which stamps its batches in place;
and ``decode_records``, the generic decoder (tools, tests, and the load client for batches it
did not build, e.g. gzip-compressed ones).

Header (big-endian, byte offsets): baseOffset q@0, batchLength i@8 (bytes after this field),
partitionLeaderEpoch i@12, magic b@16, crc I@17 (CRC-32C over [21, end)), attributes h@21,
lastOffsetDelta i@23, baseTimestamp q@27, maxTimestamp q@35, producerId q@43,
producerEpoch h@51, baseSequence i@53, recordsCount i@57, records @61.
Only baseOffset, batchLength and partitionLeaderEpoch lie before the CRC-covered range, which is
why the broker may rewrite exactly that prefix (``BROKER_PREFIX``).

Errors: malformed batches raise ``errors.CorruptMessage`` (wire code 2, what a Produce
partition should answer); a compression code Kafka does not define raises
``UnsupportedCompression``. ``decompress`` reads every codec Kafka defines (gzip, snappy in both
framings, lz4 frames, zstd); the broker's data paths never call it, only the per-record lookups
that need one batch's records (``decompress``'s docstring).
"""

from __future__ import annotations

import gzip
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

import cramjam
from crc32c import crc32c

from brokers.core.errors import CorruptMessage, ProtocolViolation, TwinbenchError
from brokers.core.protocol.consumer_protocol import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
    ConsumerTopicPartitions,
)
from brokers.core.protocol.primitives import Buffer, Reader

__all__ = [
    "ATTR_COMPRESSION_MASK",
    "BASE_TIMESTAMP_AT",
    "BATCH_HEADER",
    "BROKER_PREFIX",
    "CRC",
    "CRC_AT",
    "CRC_START",
    "HEADER_FIELDS",
    "HEADER_SIZE",
    "LAST_OFFSET_DELTA",
    "LAST_OFFSET_DELTA_AT",
    "LOG_OVERHEAD",
    "MAGIC_V2",
    "MAX_TIMESTAMP",
    "MAX_TIMESTAMP_AT",
    "OFFSET_AND_LENGTH",
    "PRODUCER_AT",
    "PRODUCER_FIELDS",
    "TIMESTAMPS",
    "BatchHeader",
    "ConsumerProtocolAssignment",
    "ConsumerProtocolSubscription",
    "ConsumerTopicPartitions",
    "Record",
    "UnsupportedCompression",
    "decode_records",
    "decompress",
    "iter_batches",
    "record_times",
]

# The header's fields in wire order with their struct codes (big-endian). Everything below (the
# struct, the offsets, BatchHeader) is derived from this table, so the layout is written once.
HEADER_FIELDS: tuple[tuple[str, str], ...] = (
    ("base_offset", "q"),
    ("batch_length", "i"),  # bytes after this field
    ("partition_leader_epoch", "i"),
    ("magic", "b"),
    ("crc", "I"),  # CRC-32C of every byte from attributes to the end of the batch
    ("attributes", "h"),
    ("last_offset_delta", "i"),
    ("base_timestamp", "q"),
    ("max_timestamp", "q"),
    ("producer_id", "q"),
    ("producer_epoch", "h"),
    ("base_sequence", "i"),
    ("records_count", "i"),
)
_NAMES = tuple(name for name, _ in HEADER_FIELDS)


def _offset_of(name: str) -> int:
    codes = "".join(code for _, code in HEADER_FIELDS[: _NAMES.index(name)])
    return struct.calcsize(">" + codes)


BATCH_HEADER = struct.Struct(">" + "".join(code for _, code in HEADER_FIELDS))
HEADER_SIZE = BATCH_HEADER.size  # 61: the records start here
# baseOffset and batchLength precede the bytes batchLength counts: a batch's size is
# batchLength + LOG_OVERHEAD.
LOG_OVERHEAD = _offset_of("partition_leader_epoch")  # 12
MAGIC_AT = _offset_of("magic")  # 16
CRC_AT = _offset_of("crc")  # 17
CRC_START = _offset_of("attributes")  # 21: the CRC covers [CRC_START, end of batch)
LAST_OFFSET_DELTA_AT = _offset_of("last_offset_delta")  # 23
BASE_TIMESTAMP_AT = _offset_of("base_timestamp")  # 27
MAX_TIMESTAMP_AT = _offset_of("max_timestamp")  # 35
PRODUCER_AT = _offset_of("producer_id")  # 43
MAGIC_V2 = 2

# Structs for single fields, to read (or write) one without unpacking the whole header.
OFFSET_AND_LENGTH = struct.Struct(">qi")  # baseOffset, batchLength at 0: enough to walk a log
LAST_OFFSET_DELTA = struct.Struct(">i")  # at LAST_OFFSET_DELTA_AT
MAX_TIMESTAMP = struct.Struct(">q")  # at MAX_TIMESTAMP_AT
TIMESTAMPS = struct.Struct(">qq")  # baseTimestamp, maxTimestamp at BASE_TIMESTAMP_AT
CRC = struct.Struct(">I")  # at CRC_AT
# producerId, producerEpoch, baseSequence at PRODUCER_AT: what idempotent produce checks.
PRODUCER_FIELDS = struct.Struct(">qhi")
assert _offset_of("base_sequence") + 4 == PRODUCER_AT + PRODUCER_FIELDS.size
# The fields the broker owns: baseOffset, batchLength, partitionLeaderEpoch. They lie wholly
# before magic and the CRC, so the broker rewrites them without invalidating the client's CRC.
BROKER_PREFIX = struct.Struct(">qii")
assert BROKER_PREFIX.size == MAGIC_AT
assert OFFSET_AND_LENGTH.size == LOG_OVERHEAD

# attributes: bits 0-2 are the compression codec.
COMPRESSION_NONE = 0
COMPRESSION_GZIP = 1
COMPRESSION_SNAPPY = 2
COMPRESSION_LZ4 = 3
COMPRESSION_ZSTD = 4
ATTR_COMPRESSION_MASK = 0x07
# snappy-java's stream framing (what Kafka's Java producer writes): this magic, two int32
# versions, then blocks of a big-endian int32 length and a raw snappy block. librdkafka writes
# one raw snappy block instead; Kafka reads both, so the reader below does too.
_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = len(_XERIAL_MAGIC) + 8
ATTR_LOG_APPEND_TIME = 0x08
ATTR_TRANSACTIONAL = 0x10
ATTR_CONTROL = 0x20
ATTR_LOG_APPEND_TIME = 0x08  # the timestamp type: every record's time is the batch's maxTimestamp


class UnsupportedCompression(TwinbenchError):
    """decode_records met a compression code Kafka does not define (5-7)."""


def decompress(codec: int, body: Buffer) -> bytes:
    """The records section of a batch compressed with ``codec`` (the attributes' low bits).

    Off the hot paths: the broker stores and serves batches as the producer sent them. Only the
    few places that must look at single records (a ListOffsets by time landing inside a batch,
    the key check of a compacted topic) decompress, one batch at a time. Raises CorruptMessage
    for a payload the codec cannot read, UnsupportedCompression for an undefined codec.
    """
    try:
        if codec == COMPRESSION_NONE:
            return bytes(body)
        if codec == COMPRESSION_GZIP:
            return gzip.decompress(body)
        if codec == COMPRESSION_SNAPPY:
            return _snappy(bytes(body))
        if codec == COMPRESSION_LZ4:
            return bytes(cramjam.lz4.decompress(bytes(body)))
        if codec == COMPRESSION_ZSTD:
            return bytes(cramjam.zstd.decompress(bytes(body)))
    except (OSError, EOFError, ValueError, cramjam.DecompressionError) as exc:
        raise CorruptMessage(f"bad payload for compression codec {codec}: {exc}") from exc
    raise UnsupportedCompression(f"compression codec {codec} is not defined by Kafka")


def _snappy(data: bytes) -> bytes:
    if not data.startswith(_XERIAL_MAGIC):
        return bytes(cramjam.snappy.decompress_raw(data))
    out = bytearray()
    pos = _XERIAL_HEADER
    while pos < len(data):
        if pos + 4 > len(data):
            raise ValueError("truncated snappy-java block length")
        (n,) = struct.unpack_from(">i", data, pos)
        pos += 4
        if n < 0 or pos + n > len(data):
            raise ValueError(f"snappy-java block of {n} bytes overruns the payload")
        out += cramjam.snappy.decompress_raw(data[pos : pos + n])
        pos += n
    return bytes(out)


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


assert BatchHeader._fields[1:] == _NAMES, "BatchHeader must follow HEADER_FIELDS"


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
        if h.magic != MAGIC_V2:
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


@dataclass(slots=True)
class Record:
    """One decoded record with absolute offset and timestamp."""

    offset: int = 0
    timestamp: int = -1
    key: bytes | None = None
    value: bytes | None = None
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)


def decode_records(batch: Buffer, *, verify_crc: bool = True) -> list[Record]:
    """Decode every record of every batch in ``batch`` (generic; tests and tools)."""
    out: list[Record] = []
    mv = batch if isinstance(batch, memoryview) else memoryview(batch)
    for h in iter_batches(mv, verify_crc=verify_crc, allow_partial_tail=False):
        body: Buffer = mv[h.position + HEADER_SIZE : h.position + h.size]
        if h.compression != COMPRESSION_NONE:
            try:
                body = decompress(h.compression, body)
            except CorruptMessage as exc:
                raise CorruptMessage(f"batch at {h.position}: {exc}") from exc
        try:
            out.extend(_decode_batch_records(Reader(body), h))
        except ProtocolViolation as exc:
            raise CorruptMessage(f"malformed record in batch at {h.position}: {exc}") from exc
    return out


def record_times(batch: Buffer) -> Iterator[tuple[int, int]]:
    """(offset, timestamp) of each record of the one batch ``batch`` holds, in order.

    The per-record view ListOffsets by time needs (Kafka answers the first *record* at or after
    a time, not its batch). Under LogAppendTime every record carries the batch's maxTimestamp,
    whatever its delta says, so the records are not even read. A record's key, value and
    headers are skipped, not decoded. Raises CorruptMessage for a malformed batch.
    """
    mv = batch if isinstance(batch, memoryview) else memoryview(batch)
    h = BatchHeader(0, *BATCH_HEADER.unpack_from(mv, 0))
    if h.attributes & ATTR_LOG_APPEND_TIME:
        for delta in range(h.last_offset_delta + 1):
            yield h.base_offset + delta, h.max_timestamp
        return
    body: Buffer = mv[HEADER_SIZE : h.size]
    if h.compression != COMPRESSION_NONE:
        body = decompress(h.compression, body)
    r = Reader(body)
    try:
        for _ in range(h.records_count):
            length = r.varint()
            if length < 0:
                raise ProtocolViolation("negative record length")
            rr = Reader(r.raw(length))
            rr.int8()  # attributes
            ts_delta = rr.varlong()
            yield h.base_offset + rr.varint(), h.base_timestamp + ts_delta
    except ProtocolViolation as exc:
        raise CorruptMessage(f"malformed record in batch at offset {h.base_offset}: {exc}"
                             ) from exc


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
