"""Build and take apart real RecordBatch v2 bytes for storage tests.

Independent of brokers/core/protocol on purpose: the storage tests must not move when the codec
does, and an independent encoder cross-checks the storage layer's header parsing.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

from crc32c import crc32c

HEADER = struct.Struct(">qiibIhiqqqhii")


def zigzag_varint(n: int) -> bytes:
    """Kafka record varint: zig-zag (signed) then base-128 little-endian groups."""
    z = (n << 1) ^ (n >> 63)
    z &= (1 << 64) - 1
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    shift = z = 0
    while True:
        b = buf[pos]
        pos += 1
        z |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
    return (z >> 1) ^ -(z & 1), pos


def encode_record(
    offset_delta: int,
    value: bytes | None,
    key: bytes | None = None,
    timestamp_delta: int = 0,
    headers: Sequence[tuple[str, bytes | None]] = (),
) -> bytes:
    body = bytearray(b"\x00")  # attributes
    body += zigzag_varint(timestamp_delta)
    body += zigzag_varint(offset_delta)
    for blob in (key, value):
        if blob is None:
            body += zigzag_varint(-1)
        else:
            body += zigzag_varint(len(blob)) + blob
    body += zigzag_varint(len(headers))
    for hkey, hval in headers:
        kb = hkey.encode()
        body += zigzag_varint(len(kb)) + kb
        body += zigzag_varint(-1) if hval is None else zigzag_varint(len(hval)) + hval
    return zigzag_varint(len(body)) + bytes(body)


def build_batch(
    values: Sequence[bytes | None],
    *,
    base_offset: int = 0,
    base_timestamp: int = 1_700_000_000_000,
    timestamp_deltas: Sequence[int] | None = None,
    keys: Sequence[bytes | None] | None = None,
    leader_epoch: int = -1,
    attributes: int = 0,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    magic: int = 2,
) -> bytes:
    """A complete, CRC-correct v2 batch holding ``values`` (one record each)."""
    deltas = list(timestamp_deltas) if timestamp_deltas is not None else [0] * len(values)
    keys = list(keys) if keys is not None else [None] * len(values)
    records = b"".join(
        encode_record(i, v, keys[i], deltas[i]) for i, v in enumerate(values)
    )
    max_ts = base_timestamp + max(deltas, default=0)
    body_after_crc = struct.pack(
        ">hiqqqhii",
        attributes,
        len(values) - 1,
        base_timestamp,
        max_ts,
        producer_id,
        producer_epoch,
        base_sequence,
        len(values),
    ) + records
    crc = crc32c(body_after_crc)
    batch_length = 4 + 1 + 4 + len(body_after_crc)  # epoch + magic + crc + rest
    prefix = struct.pack(">qiibI", base_offset, batch_length, leader_epoch, magic, crc)
    return prefix + body_after_crc


def recrc(batch: bytes | bytearray) -> bytes:
    """Recompute the CRC after a test tampered with a CRC-covered field."""
    b = bytearray(batch)
    struct.pack_into(">I", b, 17, crc32c(bytes(b[21:])))
    return bytes(b)


@dataclass(frozen=True)
class ParsedBatch:
    base_offset: int
    leader_epoch: int
    last_offset_delta: int
    max_timestamp: int
    raw: bytes
    values: list[bytes | None]

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta


def parse_batches(data: bytes | bytearray | memoryview) -> list[ParsedBatch]:
    """Split stored bytes into batches and decode record values (checks each CRC)."""
    data = bytes(data)
    out: list[ParsedBatch] = []
    pos = 0
    while pos < len(data):
        (base, length, epoch, magic, crc, _attrs, last_delta, _bts, max_ts, _pid, _pe, _bs,
         count) = HEADER.unpack_from(data, pos)
        end = pos + length + 12
        assert magic == 2
        assert crc32c(data[pos + 21 : end]) == crc, "CRC mismatch in stored batch"
        values: list[bytes | None] = []
        rp = pos + 61
        for _ in range(count):
            rlen, rp = read_varint(data, rp)
            rec_end = rp + rlen
            q = rp + 1
            _, q = read_varint(data, q)  # timestamp delta
            _, q = read_varint(data, q)  # offset delta
            klen, q = read_varint(data, q)
            q += max(klen, 0)
            vlen, q = read_varint(data, q)
            values.append(None if vlen < 0 else data[q : q + vlen])
            rp = rec_end
        assert rp == end
        out.append(ParsedBatch(base, epoch, last_delta, max_ts, data[pos:end], values))
        pos = end
    return out


def stored_form(batch: bytes, base_offset: int, leader_epoch: int = -1) -> bytes:
    """What the log should hold for ``batch`` appended at ``base_offset``."""
    return struct.pack(">q", base_offset) + batch[8:12] + struct.pack(">i", leader_epoch) + (
        batch[16:]
    )
