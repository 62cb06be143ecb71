"""The control channel's messages: what a broker asks of the quorum's leader, and the answers.

KRaft's brokers reach the active controller with requests of their own (BrokerRegistration,
BrokerHeartbeat, AlterPartition, forwarded CreateTopics) and replay what it commits. This twin
keeps one generic request instead of one per kind of change: a broker decides a metadata
record on the image it has applied (brokers/raft_broker/metadata/decisions.py) and asks the
leader to ``PROPOSE`` it. That is safe because records carry the version they were decided on
and the image rejects the stale ones where they commit. ``READ`` is a linearizable read
barrier (ReadIndex at the leader), and ``HEARTBEAT`` a broker's liveness and progress.

A message is ``kind u8 | request id u64 | body``. Answers are JSON: metadata requests are few,
and a readable answer is worth more here than bytes. Decoding raises ``ControlDecodeError``
alone, whatever the input (any authenticated peer's bug must not stop a broker).
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from typing import Any

PROPOSE = 1
READ = 2
HEARTBEAT = 3
ANSWER = 0x81
KINDS = frozenset({PROPOSE, READ, HEARTBEAT, ANSWER})

_HEAD = struct.Struct(">BQ")
_HEARTBEAT = struct.Struct(">QQ")

# Answer statuses.
OK = "ok"
NOT_LEADER = "not_leader"  # ask ``leader`` instead (None: no leader known)
LOST = "lost"  # the proposal's index went to another entry, or the read lost its leader
BAD = "bad"  # the request could not be read


class ControlDecodeError(ValueError):
    """Bytes that are not one well-formed control message."""


@dataclass(frozen=True, slots=True)
class Answer:
    status: str
    leader: int | None = None
    # PROPOSE: the index the record committed at and what applying it did. READ: the index
    # every read after the barrier must have applied.
    index: int = 0
    applied: bool = False
    reason: str = ""
    topic_id: int | None = None
    first_producer_id: int | None = None


def encode(kind: int, request_id: int, body: bytes = b"") -> bytes:
    return _HEAD.pack(kind, request_id) + body


def decode(data: bytes) -> tuple[int, int, bytes]:
    """(kind, request id, body)."""
    if len(data) < _HEAD.size:
        raise ControlDecodeError(f"a control message of {len(data)} bytes")
    kind, rid = _HEAD.unpack_from(data)
    if kind not in KINDS:
        raise ControlDecodeError(f"unknown control message kind {kind}")
    return kind, rid, data[_HEAD.size:]


def heartbeat_body(epoch: int, applied: int) -> bytes:
    return _HEARTBEAT.pack(epoch, applied)


def read_heartbeat(body: bytes) -> tuple[int, int]:
    """(registration epoch, applied index)."""
    if len(body) != _HEARTBEAT.size:
        raise ControlDecodeError(f"a heartbeat of {len(body)} bytes")
    epoch, applied = _HEARTBEAT.unpack(body)
    return epoch, applied


def answer_body(a: Answer) -> bytes:
    return json.dumps([a.status, a.leader, a.index, a.applied, a.reason, a.topic_id,
                       a.first_producer_id], separators=(",", ":")).encode()


def _opt_int(v: Any) -> int | None:
    if v is None:
        return None
    if type(v) is not int or v < -1:
        raise ControlDecodeError(f"expected an integer or null, got {v!r}")
    return v


def read_answer(body: bytes) -> Answer:
    try:
        raw = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise ControlDecodeError(f"not a JSON answer: {exc}") from None
    if not isinstance(raw, list) or len(raw) != 7:
        raise ControlDecodeError(f"an answer of the wrong shape: {raw!r}")
    status, leader, index, applied, reason, topic_id, pid = raw
    if status not in (OK, NOT_LEADER, LOST, BAD) or not isinstance(reason, str):
        raise ControlDecodeError(f"an answer of status {status!r}")
    if type(index) is not int or index < 0 or not isinstance(applied, bool):
        raise ControlDecodeError("an answer's index or applied flag is malformed")
    return Answer(status, _opt_int(leader), index, applied, reason, _opt_int(topic_id),
                  _opt_int(pid))
