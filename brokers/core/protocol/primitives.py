"""Kafka wire primitives: a bounds-checked ``Reader`` and a buffer-list ``Writer``.

Everything is big-endian, as the Kafka protocol requires. Two families of encodings live
here: the classic ones (int16-length strings, int32-length bytes and arrays) and the compact
ones of flexible message versions (KIP-482: unsigned-varint length + 1, 0 = null), plus the
zig-zag varints RecordBatch v2 records use. Tagged-field sections are built from these by
:mod:`schema`, the one place that knows their layout.

Why a hand-rolled reader instead of ``struct.unpack`` at call sites: every length read from the
wire is checked against the bytes that remain *before* anything is sliced or allocated, so a
hostile length field can never make us allocate gigabytes, and every failure surfaces as
``ProtocolViolation`` instead of ``IndexError``/``struct.error``.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from brokers.core.errors import ProtocolViolation

T = TypeVar("T")

# Precompiled structs: struct.Struct avoids re-parsing the format string on every call.
S8 = struct.Struct(">b")
S16 = struct.Struct(">h")
S32 = struct.Struct(">i")
S64 = struct.Struct(">q")
SU32 = struct.Struct(">I")

Buffer = bytes | bytearray | memoryview
Parts = list[bytes | memoryview]

# Buffers at least this large are appended to the output list by reference instead of being
# copied into the running bytearray. Small ones are cheaper to copy than to track.
ZERO_COPY_THRESHOLD = 512


class Reader:
    """Sequential reader over one buffer. ``pos`` is public so fast paths can share it."""

    __slots__ = ("buf", "end", "pos")

    def __init__(self, data: Buffer, pos: int = 0) -> None:
        self.buf = data if isinstance(data, memoryview) else memoryview(data)
        if self.buf.format != "B" or self.buf.ndim != 1:
            self.buf = self.buf.cast("B")
        self.pos = pos
        self.end = len(self.buf)

    @property
    def remaining(self) -> int:
        return self.end - self.pos

    def _need(self, n: int) -> int:
        """Reserve ``n`` bytes and return their start; raise if the buffer is short."""
        p = self.pos
        if n < 0 or p + n > self.end:
            raise ProtocolViolation(f"truncated: need {n} bytes at offset {p}, have {self.end - p}")
        self.pos = p + n
        return p

    def int8(self) -> int:
        return S8.unpack_from(self.buf, self._need(1))[0]

    def int16(self) -> int:
        return S16.unpack_from(self.buf, self._need(2))[0]

    def int32(self) -> int:
        return S32.unpack_from(self.buf, self._need(4))[0]

    def int64(self) -> int:
        return S64.unpack_from(self.buf, self._need(8))[0]

    def uint32(self) -> int:
        return SU32.unpack_from(self.buf, self._need(4))[0]

    def boolean(self) -> bool:
        return self.buf[self._need(1)] != 0

    def raw(self, n: int) -> memoryview:
        p = self._need(n)
        return self.buf[p : p + n]

    def nullable_string(self) -> str | None:
        n = self.int16()
        if n < 0:
            if n == -1:
                return None
            raise ProtocolViolation(f"negative string length {n}")
        p = self._need(n)
        try:
            return str(self.buf[p : p + n], "utf-8")
        except UnicodeDecodeError as exc:
            raise ProtocolViolation(f"string is not UTF-8 at offset {p}") from exc

    def string(self) -> str:
        s = self.nullable_string()
        if s is None:
            raise ProtocolViolation("null where a non-nullable string was expected")
        return s

    def nullable_bytes_view(self) -> memoryview | None:
        """Nullable int32-length bytes as a zero-copy view into the input (used for records)."""
        n = self.int32()
        if n < 0:
            if n == -1:
                return None
            raise ProtocolViolation(f"negative bytes length {n}")
        p = self._need(n)
        return self.buf[p : p + n]

    def nullable_bytes(self) -> bytes | None:
        v = self.nullable_bytes_view()
        return None if v is None else bytes(v)

    def bytes_(self) -> bytes:
        v = self.nullable_bytes_view()
        if v is None:
            raise ProtocolViolation("null where non-nullable bytes were expected")
        return bytes(v)

    def array_count(self, min_elem_size: int = 1) -> int:
        """Read an int32 array count (-1 = null) and check it against the bytes left.

        The check happens before the caller allocates anything for the elements: a count
        of two billion in a 20-byte body is rejected here.
        """
        n = self.int32()
        if n < -1:
            raise ProtocolViolation(f"negative array length {n}")
        if n > 0 and n * min_elem_size > self.end - self.pos:
            raise ProtocolViolation(
                f"array of {n} elements cannot fit in {self.end - self.pos} remaining bytes"
            )
        return n

    def array(self, read: Callable[[], T], min_elem_size: int = 1) -> list[T]:
        n = self.array_count(min_elem_size)
        if n < 0:
            raise ProtocolViolation("null where a non-nullable array was expected")
        return [read() for _ in range(n)]

    def nullable_array(self, read: Callable[[], T], min_elem_size: int = 1) -> list[T] | None:
        n = self.array_count(min_elem_size)
        if n < 0:
            return None
        return [read() for _ in range(n)]

    # -- compact encodings (flexible versions): unsigned varint N+1, 0 = null ---------------
    def compact_length(self) -> int:
        """A compact length (-1 = null), checked against the bytes that remain."""
        n = self.unsigned_varint() - 1
        if n > self.end - self.pos:
            raise ProtocolViolation(f"compact length {n} exceeds {self.end - self.pos} bytes left")
        return n

    def compact_nullable_string(self) -> str | None:
        n = self.compact_length()
        if n < 0:
            return None
        p = self._need(n)
        try:
            return str(self.buf[p : p + n], "utf-8")
        except UnicodeDecodeError as exc:
            raise ProtocolViolation(f"string is not UTF-8 at offset {p}") from exc

    def compact_string(self) -> str:
        s = self.compact_nullable_string()
        if s is None:
            raise ProtocolViolation("null where a non-nullable compact string was expected")
        return s

    def compact_nullable_bytes_view(self) -> memoryview | None:
        n = self.compact_length()
        if n < 0:
            return None
        p = self._need(n)
        return self.buf[p : p + n]

    def compact_nullable_bytes(self) -> bytes | None:
        v = self.compact_nullable_bytes_view()
        return None if v is None else bytes(v)

    def compact_bytes(self) -> bytes:
        v = self.compact_nullable_bytes_view()
        if v is None:
            raise ProtocolViolation("null where non-nullable compact bytes were expected")
        return bytes(v)

    def compact_array_count(self, min_elem_size: int = 1) -> int:
        n = self.unsigned_varint() - 1
        if n > 0 and n * min_elem_size > self.end - self.pos:
            raise ProtocolViolation(
                f"array of {n} elements cannot fit in {self.end - self.pos} remaining bytes"
            )
        return n

    def compact_array(self, read: Callable[[], T], min_elem_size: int = 1) -> list[T]:
        n = self.compact_array_count(min_elem_size)
        if n < 0:
            raise ProtocolViolation("null where a non-nullable compact array was expected")
        return [read() for _ in range(n)]

    def compact_nullable_array(self, read: Callable[[], T], min_elem_size: int = 1
                               ) -> list[T] | None:
        n = self.compact_array_count(min_elem_size)
        if n < 0:
            return None
        return [read() for _ in range(n)]

    def uuid(self) -> bytes:
        return bytes(self.raw(16))

    # -- varints: unsigned (flexible versions) and zig-zag (records) ---------------------------
    def unsigned_varint(self, max_bytes: int = 5) -> int:
        buf, p, end = self.buf, self.pos, self.end
        result = 0
        shift = 0
        for i in range(max_bytes):
            if p + i >= end:
                raise ProtocolViolation("truncated varint")
            b = buf[p + i]
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                self.pos = p + i + 1
                return result
            shift += 7
        raise ProtocolViolation("varint too long")

    def varint(self) -> int:
        u = self.unsigned_varint(5)
        return (u >> 1) ^ -(u & 1)

    def varlong(self) -> int:
        u = self.unsigned_varint(10)
        return (u >> 1) ^ -(u & 1)

    def done(self) -> None:
        """Insist the whole buffer was consumed: trailing bytes mean a version/field mismatch."""
        if self.pos != self.end:
            raise ProtocolViolation(f"{self.end - self.pos} unexpected trailing bytes")


class Writer:
    """Accumulates small fields in a bytearray; large buffers are appended by reference."""

    __slots__ = ("cur", "parts")

    def __init__(self) -> None:
        self.parts: Parts = []
        self.cur = bytearray()

    def int8(self, v: int) -> None:
        self.cur += S8.pack(v)

    def int16(self, v: int) -> None:
        self.cur += S16.pack(v)

    def int32(self, v: int) -> None:
        self.cur += S32.pack(v)

    def int64(self, v: int) -> None:
        self.cur += S64.pack(v)

    def uint32(self, v: int) -> None:
        self.cur += SU32.pack(v)

    def boolean(self, v: bool) -> None:
        self.cur.append(1 if v else 0)

    def raw(self, data: Buffer) -> None:
        if len(data) >= ZERO_COPY_THRESHOLD:
            if self.cur:
                self.parts.append(bytes(self.cur))
                self.cur = bytearray()
            self.parts.append(data if isinstance(data, bytes | memoryview) else memoryview(data))
        else:
            self.cur += data

    def nullable_string(self, v: str | None) -> None:
        if v is None:
            self.cur += b"\xff\xff"
            return
        b = v.encode("utf-8")
        if len(b) > 0x7FFF:
            raise ValueError(f"string of {len(b)} bytes exceeds the int16 length limit")
        self.cur += S16.pack(len(b))
        self.cur += b

    def string(self, v: str) -> None:
        if v is None:
            raise ValueError("None given for a non-nullable string")
        self.nullable_string(v)

    def nullable_bytes(self, v: Buffer | None) -> None:
        if v is None:
            self.cur += b"\xff\xff\xff\xff"
            return
        self.cur += S32.pack(len(v))
        self.raw(v)

    def bytes_(self, v: Buffer) -> None:
        if v is None:
            raise ValueError("None given for non-nullable bytes")
        self.nullable_bytes(v)

    def array(self, items: Sequence[Any] | None, write: Callable[[Any], None]) -> None:
        if items is None:
            raise ValueError("None given for a non-nullable array")
        self.cur += S32.pack(len(items))
        for it in items:
            write(it)

    def nullable_array(self, items: Sequence[Any] | None, write: Callable[[Any], None]) -> None:
        if items is None:
            self.cur += b"\xff\xff\xff\xff"
            return
        self.array(items, write)

    # -- compact encodings (flexible versions) -------------------------------------------------
    def compact_nullable_string(self, v: str | None) -> None:
        if v is None:
            self.cur.append(0)
            return
        b = v.encode("utf-8")
        if len(b) > 0x7FFF:
            raise ValueError(f"string of {len(b)} bytes exceeds the int16 length limit")
        self.unsigned_varint(len(b) + 1)
        self.cur += b

    def compact_string(self, v: str) -> None:
        if v is None:
            raise ValueError("None given for a non-nullable string")
        self.compact_nullable_string(v)

    def compact_nullable_bytes(self, v: Buffer | None) -> None:
        if v is None:
            self.cur.append(0)
            return
        self.unsigned_varint(len(v) + 1)
        self.raw(v)

    def compact_bytes(self, v: Buffer) -> None:
        if v is None:
            raise ValueError("None given for non-nullable bytes")
        self.compact_nullable_bytes(v)

    def compact_array(self, items: Sequence[Any] | None, write: Callable[[Any], None]) -> None:
        if items is None:
            raise ValueError("None given for a non-nullable array")
        self.unsigned_varint(len(items) + 1)
        for it in items:
            write(it)

    def compact_nullable_array(self, items: Sequence[Any] | None,
                               write: Callable[[Any], None]) -> None:
        if items is None:
            self.cur.append(0)
            return
        self.compact_array(items, write)

    def uuid(self, v: bytes) -> None:
        if len(v) != 16:
            raise ValueError(f"a uuid is 16 bytes, got {len(v)}")
        self.cur += v

    def unsigned_varint(self, v: int) -> None:
        cur = self.cur
        while v >= 0x80:
            cur.append((v & 0x7F) | 0x80)
            v >>= 7
        cur.append(v)

    def varint(self, v: int) -> None:
        self.unsigned_varint(((v << 1) ^ (v >> 31)) & 0xFFFFFFFF)

    def varlong(self, v: int) -> None:
        self.unsigned_varint(((v << 1) ^ (v >> 63)) & 0xFFFFFFFFFFFFFFFF)

    def finish(self) -> Parts:
        if self.cur:
            self.parts.append(bytes(self.cur))
            self.cur = bytearray()
        return self.parts


def uvarint_at(buf: memoryview, pos: int) -> tuple[int, int]:
    """(value, next position) of the unsigned varint at ``pos``, for hand-written decoders:
    no Reader to build, and the usual one- or two-byte lengths take one or two loop turns."""
    end = len(buf)
    result = 0
    shift = 0
    while pos < end and shift < 35:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
    raise ProtocolViolation("truncated or overlong varint")


def put_uvarint(out: bytearray, v: int) -> None:
    """Append an unsigned varint to ``out`` (hand-written encoders of flexible versions)."""
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def zigzag_varint(v: int, bits: int = 32) -> bytes:
    """Encode one zig-zag varint (``bits`` = 32 for varint, 64 for varlong)."""
    mask = (1 << bits) - 1
    u = ((v << 1) ^ (v >> (bits - 1))) & mask
    out = bytearray()
    while u >= 0x80:
        out.append((u & 0x7F) | 0x80)
        u >>= 7
    out.append(u)
    return bytes(out)


def join(parts: Sequence[Buffer]) -> bytes:
    """Concatenate an encoder's buffer list (tests and tools; the server writes the list)."""
    return b"".join(parts)
