"""Validation of produced batches against the RecordBatch v2 header, and the broker's prefix.

The broker never decodes records. Everything it needs (length, offsets, timestamps, CRC) is in the
header, so validation is one ``struct`` unpack plus one C CRC call per batch, whatever the number
of records inside. The same check serves the produce path (raise, so the client gets an error code)
and recovery (stop at the first bad batch and truncate there). The header layout itself is the
codec's (``brokers.core.protocol.records``); this module only decides what a broker accepts.
"""

from __future__ import annotations

from typing import NamedTuple

from crc32c import crc32c

from brokers.core.errors import CorruptMessage, InvalidRecord, MessageTooLarge
from brokers.core.protocol.records import (
    ATTR_COMPRESSION_MASK,
    BATCH_HEADER,
    BROKER_PREFIX,
    CRC_START,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC_V2,
    OFFSET_AND_LENGTH,
)

# The smallest possible v2 record: length, attributes, timestampDelta, offsetDelta, keyLen,
# valueLen, headerCount, one byte each.
MIN_RECORD_SIZE = 7
# How many records a batch can hold, read from its header alone. recordsCount (and with it
# lastOffsetDelta, the offsets the batch takes) is a client's claim; believed blindly, a 70-byte
# batch claiming 2^31 records burns 2^31 offsets and forces a segment roll every other batch.
# The payload after the header (P bytes) decodes to at most P x EXPANSION[codec] bytes, each
# record taking at least MIN_RECORD_SIZE of them, so recordsCount * 7 <= P * EXPANSION.
# EXPANSION is the largest output per input byte the codec's format can express at all, so
# no batch a real producer builds is refused:
#   none    1
#   gzip    1032   DEFLATE's limit: a 258-byte match coded in about 2 bits
#   snappy  22     a 3-byte copy element yields at most 64 bytes (Kafka's xerial framing only
#                  adds headers)
#   lz4     255    each extra match-length byte adds at most 255 bytes
#   zstd    32768  every block costs >= 4 bytes (3-byte header + 1 RLE byte) and decodes to at
#                  most 128 KiB; sequences cost more per block than RLE
# Codes 5-7 are no codec (EXPANSION 0: refused).
EXPANSION = (1, 1032, 22, 255, 32768, 0, 0, 0)
_CODEC_NAMES = ("none", "gzip", "snappy", "lz4", "zstd")

_unpack_header = BATCH_HEADER.unpack_from
_unpack_length = OFFSET_AND_LENGTH.unpack_from


class BatchInfo(NamedTuple):
    """What the log keeps about one validated batch (positions are within the scanned buffer).

    A NamedTuple rather than a frozen dataclass: equally immutable, but built in a third of the
    time, and one is built per batch on the produce path.
    """

    position: int
    size: int
    base_offset: int  # as found in the buffer: the producer's 0, or the stored offset
    last_offset_delta: int
    max_timestamp: int

    @property
    def record_offsets(self) -> int:
        """How many offsets the batch consumes."""
        return self.last_offset_delta + 1


def check_batch(buf: memoryview, pos: int, max_batch_bytes: int | None) -> BatchInfo:
    """Validate the batch starting at ``buf[pos]``; raise the Kafka error a producer should get.

    ``max_batch_bytes`` is None during recovery: a batch accepted under an older, larger limit
    (or before the record-count bound existed) is still a valid part of the log.
    """
    # Fast path: every check in one expression, one unpack, one CRC call. Only when it fails
    # does _diagnose work out which error to raise, so good batches pay for nothing else.
    remaining = len(buf) - pos
    if remaining >= HEADER_SIZE:
        (base_offset, batch_length, _e, magic, crc, attributes, last_offset_delta, _bt,
         max_timestamp, _p, _pe, _bs, records_count) = _unpack_header(buf, pos)
        size = batch_length + LOG_OVERHEAD
        if (
            HEADER_SIZE <= size <= remaining
            and (max_batch_bytes is None or (
                size <= max_batch_bytes
                and records_count * MIN_RECORD_SIZE
                <= (size - HEADER_SIZE) * EXPANSION[attributes & ATTR_COMPRESSION_MASK]))
            and magic == MAGIC_V2
            and last_offset_delta >= 0
            and records_count == last_offset_delta + 1
            and crc32c(buf[pos + CRC_START : pos + size]) == crc
        ):
            return BatchInfo(pos, size, base_offset, last_offset_delta, max_timestamp)
    _diagnose(buf, pos, max_batch_bytes)
    raise AssertionError("unreachable: _diagnose accepted a batch the fast path refused")


def _diagnose(buf: memoryview, pos: int, max_batch_bytes: int | None) -> None:
    """The checks of check_batch one at a time, raising the most specific error."""
    remaining = len(buf) - pos
    if remaining < LOG_OVERHEAD:
        raise CorruptMessage(f"truncated batch: {remaining} bytes left")
    size = _unpack_length(buf, pos)[1] + LOG_OVERHEAD
    if size < HEADER_SIZE:
        raise CorruptMessage(f"batchLength {size - LOG_OVERHEAD} is smaller than a v2 header")
    # Size limit before truncation: a client that sent a 100 MiB batch in a short buffer is
    # better served by MESSAGE_TOO_LARGE than by CORRUPT_MESSAGE (which it would retry).
    if max_batch_bytes is not None and size > max_batch_bytes:
        raise MessageTooLarge(f"batch of {size} bytes exceeds max_batch_bytes={max_batch_bytes}")
    if size > remaining:
        raise CorruptMessage(f"truncated batch: batchLength says {size} bytes, {remaining} left")
    (_b, _l, _e, magic, crc, attributes, last_offset_delta, _bt, _mt, _p, _pe, _bs,
     records_count) = _unpack_header(buf, pos)
    if magic != MAGIC_V2:
        raise CorruptMessage(f"unsupported magic {magic} (only RecordBatch v2 is accepted)")
    end = pos + size
    if crc32c(buf[pos + CRC_START : end]) != crc:
        raise CorruptMessage("batch CRC-32C mismatch")
    # From here the bytes are what the client meant to send; inconsistencies are its bug, not
    # line noise, hence INVALID_RECORD rather than the retriable CORRUPT_MESSAGE.
    if last_offset_delta < 0:
        raise InvalidRecord(f"lastOffsetDelta {last_offset_delta} is negative")
    if records_count < 1:
        raise InvalidRecord(f"recordsCount {records_count}: a batch must hold a record")
    # A producer numbers records 0..n-1, so the count and the offset span must agree; a mismatch
    # would make the log's offsets disagree with what consumers decode.
    if records_count != last_offset_delta + 1:
        raise InvalidRecord(
            f"recordsCount {records_count} disagrees with lastOffsetDelta {last_offset_delta}"
        )
    codec = attributes & ATTR_COMPRESSION_MASK
    if max_batch_bytes is None:
        return  # recovery: the producer-facing bounds below do not apply to stored batches
    if codec >= len(_CODEC_NAMES):
        raise CorruptMessage(f"unknown compression codec {codec}")
    # A count the bytes cannot hold is a header the bytes contradict: CORRUPT_MESSAGE, like a
    # bad length or CRC, whether the client or the wire is to blame.
    payload = size - HEADER_SIZE
    if records_count * MIN_RECORD_SIZE > payload * EXPANSION[codec]:
        how = "" if codec == 0 else (
            f" of {_CODEC_NAMES[codec]} data (which decompresses to at most "
            f"{EXPANSION[codec]}x)")
        raise CorruptMessage(f"{records_count} records cannot fit in {payload} bytes{how}")


def validate_batches(buf: memoryview, max_batch_bytes: int) -> list[BatchInfo]:
    """Validate a whole produce payload (one or more concatenated batches) before writing any."""
    end = len(buf)
    if end == 0:
        raise InvalidRecord("empty record set")
    first = check_batch(buf, 0, max_batch_bytes)
    if first.size == end:  # the common case: one batch per partition per request
        return [first]
    batches = [first]
    pos = first.size
    while pos < end:
        info = check_batch(buf, pos, max_batch_bytes)
        batches.append(info)
        pos += info.size
    return batches


def patched_prefix(base_offset: int, size: int, leader_epoch: int) -> bytes:
    """The 16 bytes that replace the client's baseOffset/batchLength/partitionLeaderEpoch."""
    return BROKER_PREFIX.pack(base_offset, size - LOG_OVERHEAD, leader_epoch)
