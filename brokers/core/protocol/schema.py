"""Declarative message schemas and the generic (interpreted) encoder/decoder.

A message is a ``@dataclass(slots=True)`` whose fields are declared with :func:`f`, which
records the Kafka JSON spec's wire type and version ranges in the field's metadata. The
dataclass itself is then the single source of truth: field order = wire order, defaults =
spec defaults. :func:`plan` compiles (class, version) into a tuple of per-field codecs once
and caches it, so the per-message cost is one dict lookup plus a loop over closures.

Hot messages (Produce/Fetch) additionally get hand-written codecs in their modules; the
generic path stays the reference they are tested against.
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Self, TypeVar

from brokers.core.errors import ProtocolViolation
from brokers.core.protocol.primitives import Buffer, Parts, Reader, Writer

# Wire kinds (the spec's type names). "records" is nullable int32-length bytes that decode
# to a zero-copy memoryview; "bytes" decodes to an owned ``bytes`` (small, e.g. group metadata).
INT8 = "int8"
INT16 = "int16"
INT32 = "int32"
INT64 = "int64"
BOOL = "bool"
STRING = "string"
BYTES = "bytes"
RECORDS = "records"

_OPEN = 1 << 15  # "N+" upper bound: any version an int16 can express
_MIN_SIZE = {INT8: 1, INT16: 2, INT32: 4, INT64: 8, BOOL: 1, STRING: 2, BYTES: 4, RECORDS: 4}
_ZERO: dict[str, Any] = {INT8: 0, INT16: 0, INT32: 0, INT64: 0, BOOL: False, STRING: "",
                         BYTES: b"", RECORDS: b""}


@dataclass(frozen=True, slots=True)
class ArrayOf:
    """``[]T`` in the spec: T is a primitive kind or a Struct subclass."""

    elem: Any


@dataclass(frozen=True, slots=True)
class WireSpec:
    kind: Any
    lo: int
    hi: int
    null_lo: int
    null_hi: int

    def present(self, version: int) -> bool:
        return self.lo <= version <= self.hi

    def nullable(self, version: int) -> bool:
        return self.null_lo <= version <= self.null_hi


def _range(text: str | None) -> tuple[int, int]:
    """Parse the spec's version syntax: "3+", "0-2", "1"; None -> an empty range."""
    if text is None:
        return (1, 0)
    if text.endswith("+"):
        return (int(text[:-1]), _OPEN)
    if "-" in text:
        lo, hi = text.split("-")
        return (int(lo), int(hi))
    return (int(text), int(text))


_MISSING: Any = object()


def f(kind: Any, versions: str, *, default: Any = _MISSING, nullable: str | None = None) -> Any:
    """Declare one wire field. ``default`` is the spec's default; otherwise the type's zero."""
    lo, hi = _range(versions)
    nlo, nhi = _range(nullable)
    meta = {"wire": WireSpec(kind, lo, hi, nlo, nhi)}
    if isinstance(kind, ArrayOf):
        if default is None:
            return dataclasses.field(default=None, metadata=meta)
        return dataclasses.field(default_factory=list, metadata=meta)
    if default is _MISSING:
        default = _ZERO[kind]
    return dataclasses.field(default=default, metadata=meta)


class Struct:
    """Base of every wire struct (dataclass with :func:`f` fields)."""

    __slots__ = ()


S = TypeVar("S", bound=Struct)
Enc = Callable[[Writer, Any], None]
Dec = Callable[[Reader], Any]
Plan = tuple[tuple[str, Enc, Dec, int], ...]

_PLANS: dict[tuple[type, int], Plan] = {}


def wire_fields(cls: type[Struct]) -> list[tuple[str, WireSpec]]:
    """(name, spec) for every wire field of ``cls`` in wire order (tests build strategies)."""
    # Every Struct subclass is a dataclass; the base class is not, so mypy cannot know it.
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    return [(fl.name, fl.metadata["wire"]) for fl in fields if "wire" in fl.metadata]


def plan(cls: type[Struct], version: int) -> Plan:
    """The compiled codec of ``cls`` at ``version``: (name, encode, decode, min_size) per field."""
    key = (cls, version)
    p = _PLANS.get(key)
    if p is None:
        entries = []
        for name, spec in wire_fields(cls):
            if spec.present(version):
                enc, dec, size = _codec(spec.kind, spec.nullable(version), version)
                entries.append((name, enc, dec, size))
        p = _PLANS[key] = tuple(entries)
    return p


def _codec(kind: Any, nullable: bool, version: int) -> tuple[Enc, Dec, int]:
    if isinstance(kind, ArrayOf):
        return _array_codec(kind.elem, nullable, version)
    if isinstance(kind, type) and issubclass(kind, Struct):
        raise TypeError("bare struct fields are not used by any non-flexible version we speak")
    if kind == STRING:
        if nullable:
            return Writer.nullable_string, Reader.nullable_string, 2
        return Writer.string, Reader.string, 2
    if kind == BYTES:
        if nullable:
            return Writer.nullable_bytes, Reader.nullable_bytes, 4
        return Writer.bytes_, Reader.bytes_, 4
    if kind == RECORDS:
        return Writer.nullable_bytes, Reader.nullable_bytes_view, 4
    simple = {INT8: (Writer.int8, Reader.int8), INT16: (Writer.int16, Reader.int16),
              INT32: (Writer.int32, Reader.int32), INT64: (Writer.int64, Reader.int64),
              BOOL: (Writer.boolean, Reader.boolean)}
    enc, dec = simple[kind]
    return enc, dec, _MIN_SIZE[kind]


def _array_codec(elem: Any, nullable: bool, version: int) -> tuple[Enc, Dec, int]:
    elem_enc: Enc
    elem_dec: Dec
    if isinstance(elem, type) and issubclass(elem, Struct):
        p = plan(elem, version)
        # Smallest possible element: lets array_count reject absurd counts before allocating.
        size = max(1, sum(e[3] for e in p))

        def struct_enc(w: Writer, item: Any) -> None:
            encode_struct(w, item, p)

        def struct_dec(r: Reader) -> Any:
            return decode_struct(elem, p, r)

        elem_enc, elem_dec = struct_enc, struct_dec
    else:
        elem_enc, elem_dec, size = _codec(elem, False, version)

    if nullable:
        def enc(w: Writer, items: Any) -> None:
            w.nullable_array(items, lambda it: elem_enc(w, it))

        def dec(r: Reader) -> Any:
            return r.nullable_array(lambda: elem_dec(r), size)
    else:
        def enc(w: Writer, items: Any) -> None:
            w.array(items, lambda it: elem_enc(w, it))

        def dec(r: Reader) -> Any:
            return r.array(lambda: elem_dec(r), size)
    return enc, dec, 4


def encode_struct(w: Writer, obj: Any, p: Plan) -> None:
    for name, enc, _dec, _size in p:
        enc(w, getattr(obj, name))


def decode_struct(cls: type[S], p: Plan, r: Reader) -> S:
    return cls(**{name: dec(r) for name, _enc, dec, _size in p})


# Anything a malformed buffer can provoke inside decoding; converted to ProtocolViolation at
# the top so no low-level exception type leaks to the server.
DECODE_ERRORS = (struct.error, IndexError, ValueError, TypeError, OverflowError, RecursionError)


class Message(Struct):
    """A top-level request or response body. Subclasses set API_KEY and VERSIONS."""

    __slots__ = ()
    API_KEY: ClassVar[int]
    VERSIONS: ClassVar[tuple[int, int]]  # versions this codec can encode/decode

    def encode(self, version: int) -> Parts:
        return generic_encode(self, version)

    @classmethod
    def decode(cls, data: Buffer, version: int) -> Self:
        return generic_decode(cls, data, version)


def check_encode_version(obj: Message, version: int) -> None:
    lo, hi = obj.VERSIONS
    if not lo <= version <= hi:
        raise ValueError(f"{type(obj).__name__} v{version} is outside codec range {lo}-{hi}")


def check_decode_version(cls: type[Message], version: int) -> None:
    lo, hi = cls.VERSIONS
    if not lo <= version <= hi:
        raise ProtocolViolation(f"{cls.__name__} v{version} is outside codec range {lo}-{hi}")


def generic_encode(obj: Message, version: int) -> Parts:
    """The schema-driven encoder (reference implementation for the hand-written fast paths)."""
    check_encode_version(obj, version)
    w = Writer()
    encode_struct(w, obj, plan(type(obj), version))
    return w.finish()


M = TypeVar("M", bound=Message)


def generic_decode(cls: type[M], data: Buffer, version: int) -> M:
    """The schema-driven decoder (reference implementation for the hand-written fast paths)."""
    check_decode_version(cls, version)
    r = Reader(data)
    try:
        obj = decode_struct(cls, plan(cls, version), r)
    except ProtocolViolation:
        raise
    except DECODE_ERRORS as exc:
        raise ProtocolViolation(f"malformed {cls.__name__} v{version}: {exc}") from exc
    r.done()
    return obj
