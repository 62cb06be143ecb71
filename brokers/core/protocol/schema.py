"""Declarative message schemas and the generic (interpreted) encoder/decoder.

A message is a ``@dataclass(slots=True)`` whose fields are declared with :func:`f`, which
records the Kafka JSON spec's wire type and version ranges in the field's metadata. The
dataclass itself is then the single source of truth: field order = wire order, defaults =
spec defaults. :func:`plan` compiles (class, version, flexible) into per-field codecs once and
caches it, so the per-message cost is one dict lookup plus a loop over closures.

Flexible versions (KIP-482; ``Message.FLEXIBLE`` is the first one) change three things, all
decided here and nowhere else: strings, bytes and arrays take their compact forms (unsigned
varint length + 1, 0 = null), and every struct, the message included, ends with a tagged-field
section. A field declared with ``tag=N`` lives in that section (written only when it differs
from its default); tags we do not know are skipped on decode, as the spec requires.

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
UUID = "uuid"  # 16 raw bytes (topic ids, Metadata v10+, CreateTopics v7)

_OPEN = 1 << 15  # "N+" upper bound: any version an int16 can express
_NEVER = 1 << 16  # FLEXIBLE of a message with no flexible version
_MIN_SIZE = {INT8: 1, INT16: 2, INT32: 4, INT64: 8, BOOL: 1, STRING: 2, BYTES: 4, RECORDS: 4,
             UUID: 16}
_ZERO: dict[str, Any] = {INT8: 0, INT16: 0, INT32: 0, INT64: 0, BOOL: False, STRING: "",
                         BYTES: b"", RECORDS: b"", UUID: bytes(16)}


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
    tag: int | None = None  # set: a tagged field (flexible versions only)

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


def f(kind: Any, versions: str, *, default: Any = _MISSING, nullable: str | None = None,
      tag: int | None = None) -> Any:
    """Declare one wire field. ``default`` is the spec's default; otherwise the type's zero.
    ``tag``: the field is a tagged field with that tag (present only in flexible versions)."""
    lo, hi = _range(versions)
    nlo, nhi = _range(nullable)
    meta = {"wire": WireSpec(kind, lo, hi, nlo, nhi, tag)}
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
Fields = tuple[tuple[str, Enc, Dec, int], ...]
Tagged = tuple[tuple[int, str, Enc, Dec, Any], ...]  # (tag, name, enc, dec, default)


@dataclass(frozen=True, slots=True)
class Plan:
    """A struct's compiled codec at one version: its fields in wire order, then (flexible
    versions only, else None) its tagged fields in tag order."""

    fields: Fields
    tagged: Tagged | None

    @property
    def min_size(self) -> int:
        return sum(e[3] for e in self.fields) + (0 if self.tagged is None else 1)


_PLANS: dict[tuple[type, int, bool], Plan] = {}


def wire_fields(cls: type[Struct]) -> list[tuple[str, WireSpec]]:
    """(name, spec) for every wire field of ``cls`` in wire order (tests build strategies)."""
    # Every Struct subclass is a dataclass; the base class is not, so mypy cannot know it.
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    return [(fl.name, fl.metadata["wire"]) for fl in fields if "wire" in fl.metadata]


def plan(cls: type[Struct], version: int, flexible: bool = False) -> Plan:
    """The compiled codec of ``cls`` at ``version`` (in a flexible message version or not)."""
    key = (cls, version, flexible)
    p = _PLANS.get(key)
    if p is None:
        entries = []
        tagged = []
        # As in wire_fields: every Struct subclass is a dataclass, the base class is not.
        for fl in dataclasses.fields(cls):  # type: ignore[arg-type]
            spec = fl.metadata.get("wire")
            if spec is None or not spec.present(version):
                continue
            enc, dec, size = _codec(spec.kind, spec.nullable(version), version, flexible)
            if spec.tag is None:
                entries.append((fl.name, enc, dec, size))
            elif flexible:
                if fl.default is not dataclasses.MISSING:
                    default = fl.default
                elif fl.default_factory is not dataclasses.MISSING:
                    default = fl.default_factory()
                else:  # a tagged field is absent from most messages: it needs a default
                    raise TypeError(f"{cls.__name__}.{fl.name}: a tagged field needs a default")
                tagged.append((spec.tag, fl.name, enc, dec, default))
        tagged.sort(key=lambda t: t[0])
        p = _PLANS[key] = Plan(tuple(entries), tuple(tagged) if flexible else None)
    return p


_CLASSIC: dict[str, tuple[Enc, Dec]] = {
    INT8: (Writer.int8, Reader.int8), INT16: (Writer.int16, Reader.int16),
    INT32: (Writer.int32, Reader.int32), INT64: (Writer.int64, Reader.int64),
    BOOL: (Writer.boolean, Reader.boolean), UUID: (Writer.uuid, Reader.uuid)}
# (kind, nullable) -> codec, in classic and in compact form.
_VARIABLE: dict[tuple[str, bool], tuple[Enc, Dec]] = {
    (STRING, False): (Writer.string, Reader.string),
    (STRING, True): (Writer.nullable_string, Reader.nullable_string),
    (BYTES, False): (Writer.bytes_, Reader.bytes_),
    (BYTES, True): (Writer.nullable_bytes, Reader.nullable_bytes),
    (RECORDS, False): (Writer.nullable_bytes, Reader.nullable_bytes_view),
    (RECORDS, True): (Writer.nullable_bytes, Reader.nullable_bytes_view),
}
_COMPACT: dict[tuple[str, bool], tuple[Enc, Dec]] = {
    (STRING, False): (Writer.compact_string, Reader.compact_string),
    (STRING, True): (Writer.compact_nullable_string, Reader.compact_nullable_string),
    (BYTES, False): (Writer.compact_bytes, Reader.compact_bytes),
    (BYTES, True): (Writer.compact_nullable_bytes, Reader.compact_nullable_bytes),
    (RECORDS, False): (Writer.compact_nullable_bytes, Reader.compact_nullable_bytes_view),
    (RECORDS, True): (Writer.compact_nullable_bytes, Reader.compact_nullable_bytes_view),
}


def _codec(kind: Any, nullable: bool, version: int, flexible: bool) -> tuple[Enc, Dec, int]:
    if isinstance(kind, ArrayOf):
        return _array_codec(kind.elem, nullable, version, flexible)
    if isinstance(kind, type) and issubclass(kind, Struct):
        raise TypeError("bare struct fields are not declared by any message we speak")
    if kind in _CLASSIC:
        enc, dec = _CLASSIC[kind]
        return enc, dec, _MIN_SIZE[kind]
    if flexible:
        enc, dec = _COMPACT[kind, nullable]
        return enc, dec, 1
    enc, dec = _VARIABLE[kind, nullable]
    return enc, dec, _MIN_SIZE[kind]


def _array_codec(elem: Any, nullable: bool, version: int, flexible: bool
                 ) -> tuple[Enc, Dec, int]:
    elem_enc: Enc
    elem_dec: Dec
    if isinstance(elem, type) and issubclass(elem, Struct):
        p = plan(elem, version, flexible)
        # Smallest possible element: lets array_count reject absurd counts before allocating.
        size = max(1, p.min_size)

        def struct_enc(w: Writer, item: Any) -> None:
            encode_struct(w, item, p)

        def struct_dec(r: Reader) -> Any:
            return decode_struct(elem, p, r)

        elem_enc, elem_dec = struct_enc, struct_dec
    else:
        elem_enc, elem_dec, size = _codec(elem, False, version, flexible)

    if flexible:
        w_arr, w_null = Writer.compact_array, Writer.compact_nullable_array
        r_arr, r_null = Reader.compact_array, Reader.compact_nullable_array
    else:
        w_arr, w_null = Writer.array, Writer.nullable_array
        r_arr, r_null = Reader.array, Reader.nullable_array
    w_fn, r_fn = (w_null, r_null) if nullable else (w_arr, r_arr)

    def enc(w: Writer, items: Any) -> None:
        w_fn(w, items, lambda it: elem_enc(w, it))

    def dec(r: Reader) -> Any:
        return r_fn(r, lambda: elem_dec(r), size)
    return enc, dec, 1 if flexible else 4


def encode_struct(w: Writer, obj: Any, p: Plan) -> None:
    for name, enc, _dec, _size in p.fields:
        enc(w, getattr(obj, name))
    if p.tagged is not None:
        _encode_tagged(w, obj, p.tagged)


def decode_struct(cls: type[S], p: Plan, r: Reader) -> S:
    kw = {name: dec(r) for name, _enc, dec, _size in p.fields}
    if p.tagged is not None:
        decode_tagged(r, p.tagged, kw)
    return cls(**kw)


def _encode_tagged(w: Writer, obj: Any, tagged: Tagged) -> None:
    """The tagged-field section: count, then (tag, size, value) for each non-default field."""
    out = []
    for tag, name, enc, _dec, default in tagged:
        value = getattr(obj, name)
        if value != default:
            sub = Writer()
            enc(sub, value)
            out.append((tag, b"".join(sub.finish())))
    w.unsigned_varint(len(out))
    for tag, data in out:
        w.unsigned_varint(tag)
        w.unsigned_varint(len(data))
        w.raw(data)


def decode_tagged(r: Reader, tagged: Tagged, kw: dict[str, Any]) -> None:
    """Read a tagged-field section into ``kw`` (known tags) and skip the unknown ones."""
    count = r.unsigned_varint()
    if count > r.remaining:
        raise ProtocolViolation(f"{count} tagged fields cannot fit in {r.remaining} bytes")
    known = {t[0]: t for t in tagged}
    last = -1
    for _ in range(count):
        tag = r.unsigned_varint()
        if tag <= last:
            raise ProtocolViolation(f"tagged field {tag} out of order")
        last = tag
        size = r.unsigned_varint()
        data = r.raw(size)
        entry = known.get(tag)
        if entry is not None:  # an unknown tag is skipped: that is what tags are for
            sub = Reader(data)
            kw[entry[1]] = entry[3](sub)
            sub.done()


def skip_tagged_fields(r: Reader) -> None:
    """Skip a tagged-field section we have no fields for (headers, hand-written codecs)."""
    decode_tagged(r, (), {})


def skip_tagged_at(buf: memoryview, pos: int) -> int:
    """``skip_tagged_fields`` for hand-written decoders: the position after the section at
    ``pos``; the usual empty section (one zero byte) costs one comparison."""
    if pos < len(buf) and buf[pos] == 0:
        return pos + 1
    r = Reader(buf, pos)
    decode_tagged(r, (), {})
    return r.pos


# Anything a malformed buffer can provoke inside decoding; converted to ProtocolViolation at
# the top so no low-level exception type leaks to the server.
DECODE_ERRORS = (struct.error, IndexError, ValueError, TypeError, OverflowError, RecursionError)


class Message(Struct):
    """A top-level request or response body. Subclasses set API_KEY and VERSIONS."""

    __slots__ = ()
    API_KEY: ClassVar[int]
    VERSIONS: ClassVar[tuple[int, int]]  # versions this codec can encode/decode
    FLEXIBLE: ClassVar[int] = _NEVER  # first flexible version (the spec's "flexibleVersions")
    # From this version on, bytes after the last field are ignored instead of refused: only
    # where a real client sends them and Kafka, which never checks, accepts the request.
    TRAILING_IGNORED_FROM: ClassVar[int] = _NEVER

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
    encode_struct(w, obj, plan(type(obj), version, version >= obj.FLEXIBLE))
    return w.finish()


M = TypeVar("M", bound=Message)


def generic_decode(cls: type[M], data: Buffer, version: int) -> M:
    """The schema-driven decoder (reference implementation for the hand-written fast paths)."""
    check_decode_version(cls, version)
    r = Reader(data)
    try:
        obj = decode_struct(cls, plan(cls, version, version >= cls.FLEXIBLE), r)
    except ProtocolViolation:
        raise
    except DECODE_ERRORS as exc:
        raise ProtocolViolation(f"malformed {cls.__name__} v{version}: {exc}") from exc
    if version < cls.TRAILING_IGNORED_FROM:
        r.done()
    return obj
