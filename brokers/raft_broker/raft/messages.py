"""Raft messages and their compact binary codec.

Every message names its sender (``src``), its addressee (``dst``) and a ``term``. Six kinds:

* ``RequestVote`` / ``VoteResponse``: elections; ``pre`` marks the pre-vote round, asked at the
  candidate's term + 1 without raising it.
* ``Append`` / ``AppendResponse``: log replication and heartbeats (an Append with no entries).
  The sender of an Append is the leader. A rejection carries a hint, the follower's guess of
  the last index it may share with the leader, so the leader backs off in one step.
* ``InstallSnapshot`` / ``SnapshotResponse``: a follower behind the leader's snapshot base gets
  the application's snapshot whole.

Appends and snapshots carry ``seq``, the leader's counter when it sent them, echoed in the
answer: a ReadIndex read waits for answers to a message sent after the read arrived.

Wire format, big-endian: a kind byte, then src and dst (u32), term (u64), then the kind's fields
(u64 indexes and terms, u8 booleans that must be 0 or 1, u32-length-prefixed byte strings).
Entries in an Append carry their term and data only; their indexes follow from ``prev_index``,
so a frame cannot claim a gap. ``decode`` checks every length against what is left before it
reads or allocates, refuses trailing bytes, and raises ``RaftDecodeError`` and nothing else on
any input it cannot read.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

MAX_U32 = 0xFFFF_FFFF
MAX_U64 = 0xFFFF_FFFF_FFFF_FFFF


class RaftDecodeError(ValueError):
    """The bytes are not a Raft message this codec wrote."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One log entry. Empty ``data`` is the no-op a leader appends when elected."""

    term: int
    index: int
    data: bytes = b""


@dataclass(frozen=True, slots=True)
class RequestVote:
    src: int
    dst: int
    # The term asked for: the candidate's own, or its own + 1 for a pre-vote.
    term: int
    last_index: int
    last_term: int
    pre: bool = False


@dataclass(frozen=True, slots=True)
class VoteResponse:
    src: int
    dst: int
    # A grant echoes the term asked for; a refusal carries the voter's term.
    term: int
    granted: bool
    pre: bool = False


@dataclass(frozen=True, slots=True)
class Append:
    src: int
    dst: int
    term: int
    prev_index: int
    prev_term: int
    entries: tuple[Entry, ...]
    commit: int
    seq: int = 0


@dataclass(frozen=True, slots=True)
class AppendResponse:
    src: int
    dst: int
    term: int
    success: bool
    # Success: the index up to which the follower's log now matches the leader's. Refusal: the
    # rejected Append's prev_index.
    index: int
    # Refusal: the last index that may match (the follower's last index, less any entries of a
    # term above the rejected prev_term); the leader retries from hint + 1.
    hint: int = 0
    seq: int = 0


@dataclass(frozen=True, slots=True)
class InstallSnapshot:
    src: int
    dst: int
    term: int
    index: int
    snap_term: int
    data: bytes
    seq: int = 0


@dataclass(frozen=True, slots=True)
class SnapshotResponse:
    src: int
    dst: int
    term: int
    # The index up to which the follower's log now matches the leader's (the snapshot's, or
    # the follower's commit index if that was already past it).
    index: int
    seq: int = 0


Message = RequestVote | VoteResponse | Append | AppendResponse | InstallSnapshot | SnapshotResponse

_HEAD = struct.Struct(">BIIQ")  # kind, src, dst, term
_VOTE = struct.Struct(">QQB")  # last_index, last_term, pre
_VOTE_RESP = struct.Struct(">BB")  # granted, pre
_APPEND = struct.Struct(">QQQQI")  # prev_index, prev_term, commit, seq, entry count
_ENTRY = struct.Struct(">QI")  # term, data length
_APPEND_RESP = struct.Struct(">BQQQ")  # success, index, hint, seq
_SNAP = struct.Struct(">QQQI")  # index, snap_term, seq, data length
_SNAP_RESP = struct.Struct(">QQ")  # index, seq

_K_VOTE, _K_VOTE_RESP, _K_APPEND, _K_APPEND_RESP, _K_SNAP, _K_SNAP_RESP = range(1, 7)


def encode(msg: Message) -> bytes:
    """The frame of ``msg``. Fields out of their wire range raise ``struct.error`` or
    ``ValueError`` (a caller's bug, never input)."""
    if isinstance(msg, Append):
        parts = [_HEAD.pack(_K_APPEND, msg.src, msg.dst, msg.term),
                 _APPEND.pack(msg.prev_index, msg.prev_term, msg.commit, msg.seq,
                              len(msg.entries))]
        index = msg.prev_index
        for e in msg.entries:
            index += 1
            if e.index != index:
                raise ValueError(f"Append entry at index {e.index} where {index} follows")
            parts.append(_ENTRY.pack(e.term, len(e.data)))
            parts.append(e.data)
        return b"".join(parts)
    if isinstance(msg, AppendResponse):
        return (_HEAD.pack(_K_APPEND_RESP, msg.src, msg.dst, msg.term)
                + _APPEND_RESP.pack(msg.success, msg.index, msg.hint, msg.seq))
    if isinstance(msg, RequestVote):
        return (_HEAD.pack(_K_VOTE, msg.src, msg.dst, msg.term)
                + _VOTE.pack(msg.last_index, msg.last_term, msg.pre))
    if isinstance(msg, VoteResponse):
        return (_HEAD.pack(_K_VOTE_RESP, msg.src, msg.dst, msg.term)
                + _VOTE_RESP.pack(msg.granted, msg.pre))
    if isinstance(msg, InstallSnapshot):
        return b"".join((_HEAD.pack(_K_SNAP, msg.src, msg.dst, msg.term),
                         _SNAP.pack(msg.index, msg.snap_term, msg.seq, len(msg.data)),
                         msg.data))
    if isinstance(msg, SnapshotResponse):
        return (_HEAD.pack(_K_SNAP_RESP, msg.src, msg.dst, msg.term)
                + _SNAP_RESP.pack(msg.index, msg.seq))
    raise TypeError(f"not a Raft message: {type(msg).__name__}")


def _flag(value: int) -> bool:
    if value > 1:
        raise RaftDecodeError(f"boolean byte {value}")
    return value == 1


def _fixed(buf: memoryview, off: int, layout: struct.Struct) -> tuple[int, ...]:
    if len(buf) - off < layout.size:
        raise RaftDecodeError("truncated frame")
    return layout.unpack_from(buf, off)


def _end(buf: memoryview, off: int) -> None:
    if off != len(buf):
        raise RaftDecodeError(f"{len(buf) - off} trailing bytes")


def decode(data: bytes | bytearray | memoryview) -> Message:
    """The message in ``data``, one whole frame; ``RaftDecodeError`` on anything else."""
    buf = memoryview(data).cast("B")
    kind, src, dst, term = _fixed(buf, 0, _HEAD)
    off = _HEAD.size
    if kind == _K_APPEND:
        prev_index, prev_term, commit, seq, count = _fixed(buf, off, _APPEND)
        off += _APPEND.size
        # Each entry takes at least its fixed part: a count the frame cannot hold is refused
        # before anything is allocated for it.
        if count * _ENTRY.size > len(buf) - off:
            raise RaftDecodeError(f"{count} entries cannot fit the frame")
        if prev_index + count > MAX_U64:
            raise RaftDecodeError("entry indexes overflow")
        entries = []
        index = prev_index
        for _ in range(count):
            # Earlier entries' data may have used the room the count check assumed.
            e_term, size = _fixed(buf, off, _ENTRY)
            off += _ENTRY.size
            if size > len(buf) - off:
                raise RaftDecodeError(f"entry of {size} bytes past the frame's end")
            index += 1
            entries.append(Entry(e_term, index, bytes(buf[off:off + size])))
            off += size
        _end(buf, off)
        return Append(src, dst, term, prev_index, prev_term, tuple(entries), commit, seq)
    if kind == _K_APPEND_RESP:
        success, index, hint, seq = _fixed(buf, off, _APPEND_RESP)
        _end(buf, off + _APPEND_RESP.size)
        return AppendResponse(src, dst, term, _flag(success), index, hint, seq)
    if kind == _K_VOTE:
        last_index, last_term, pre = _fixed(buf, off, _VOTE)
        _end(buf, off + _VOTE.size)
        return RequestVote(src, dst, term, last_index, last_term, _flag(pre))
    if kind == _K_VOTE_RESP:
        granted, pre = _fixed(buf, off, _VOTE_RESP)
        _end(buf, off + _VOTE_RESP.size)
        return VoteResponse(src, dst, term, _flag(granted), _flag(pre))
    if kind == _K_SNAP:
        index, snap_term, seq, size = _fixed(buf, off, _SNAP)
        off += _SNAP.size
        if size != len(buf) - off:
            raise RaftDecodeError(f"snapshot of {size} bytes in {len(buf) - off}")
        return InstallSnapshot(src, dst, term, index, snap_term, bytes(buf[off:]), seq)
    if kind == _K_SNAP_RESP:
        index, seq = _fixed(buf, off, _SNAP_RESP)
        _end(buf, off + _SNAP_RESP.size)
        return SnapshotResponse(src, dst, term, index, seq)
    raise RaftDecodeError(f"unknown message kind {kind}")
