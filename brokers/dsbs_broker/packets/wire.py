"""The gossip wire codec: a compact, versioned binary format for DSBS datagrams (sans-IO).

Layout of every datagram (big-endian)::

    header   magic u16 = 0xD5B5 | version u8 | flags u8 | cluster tag u32 | sender u32
             | sender boot u32 | packet seq u32                                   (20 bytes)
    message  type u8 | type-specific body
    updates  count u16 | count x (tag u8 | body)      -- piggybacked gossip

Version 2 added the topic-creation messages (CREATE, CREATE_RESULT, PROPOSE, VOTE: see
``gossip/creation.py``) and, in every topic record and digest entry, whether the record comes
from an explicit CreateTopics (ranked above an auto-creation) and the creating request's token. A
version-1 broker and a version-2 broker drop each other's datagrams as ``bad_version``, so a
mixed cluster shows up as two clusters instead of misreading records.

Version 3 added the deletion record (a tombstone: a topic record with ``TOPIC_DELETED`` set,
``tables/topics.py``), which a version-2 broker would otherwise take for a live topic, and to
every topic record and digest entry the name's creation epoch (how many topics of the name were
deleted before this one was created), ranked first, and to CREATE the ring of a manual
replica assignment.

Version 4 added replication: the PARTITION update (a replicated partition's leader, leader
epoch, ISR and change count, ``tables/leaders.py``), the LEADER_AND_ISR message a leader pushes
it with and its members answer, and to every digest entry a content tag (a CRC of the topic
record and its partitions' records), so anti-entropy can tell apart two records of equal rank.

Version 5 made committed offsets synchronous (``gossip/offset_replication.py``): OFFSETS_PULL,
with which a coordinator whose view of the live members changed asks a peer for one group's
offsets before it serves the group again, and OFFSETS_PULLED, the peer's word that every entry
it sent for the pull has been acknowledged. A version-4 broker would never answer a pull, so
the versions do not mix.

Version 6 made DSBS elections votes (``gossip/leadership.py``): STAND_FOR, a candidate's
proposed record for a partition in a new leader epoch, and BALLOT, a replica's answer (granted
or not, with the record it holds and the epoch it has promised); LEADER_AND_ISR answers carry
that promise too, so a leader of an older epoch learns it is fenced. A version-5 broker would
neither vote nor respect a promise.

Version 7 added transaction records (``gossip/txn_replication.py``): TXN_PART, one piece of a
transactional id's record (``TxnEntry``, encoded by ``encode_txn_entry`` and cut into pieces
that each fit a datagram, since a record names every partition of its transaction and can
outgrow one), TXN_ACK, a member's word that it holds the reassembled record (with the version it
holds after merging), and TXN_PULL / TXN_PULLED, with which a member whose view of the live
members changed fetches the records its peers hold before it serves transactions. An offset
entry's topic became a u16-length string: a transaction's pending offsets are kept under keys
longer than a topic name (``brokers/core/transactions/offsets.py``). A version-6 broker would
misread those entries and drop the rest.

``flags`` is 0, or ``FLAG_HMAC`` for authenticated gossip: the datagram then ends in a tag over
everything before it (``auth.py``), verified and stripped before ``decode`` parses anything; a
receiver states which flags it expects. A ``PAD`` entry among the updates is skipped: insecure
brokers pad SYNC requests so that a reply capped at a multiple of the request's size still fits.

Every failure to parse raises ``WireError`` (with a short ``reason`` used for drop counters),
never anything else: junk from the network must not be able to crash a broker. No object
serialisation library is involved; strings are length-prefixed UTF-8; every count is bounded by
the packet size.
"""

from __future__ import annotations

import hashlib
import struct
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import IntEnum

MAGIC = 0xD5B5
VERSION = 7
FLAG_HMAC = 0x01  # the datagram ends in an HMAC tag (auth.py)
# The packet budget (the default of GossipConfig.max_packet_bytes): below a 1500-byte Ethernet
# MTU minus IP/UDP headers, so a gossip datagram is never fragmented (a lost fragment loses the
# whole datagram).
MAX_PACKET_BYTES = 1400

_HEADER = struct.Struct(">HBBIIII")
HEADER_SIZE = _HEADER.size
_U8 = struct.Struct(">B")
_U16 = struct.Struct(">H")
_U32 = struct.Struct(">I")
_U64 = struct.Struct(">Q")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_PING = struct.Struct(">II")
_MEMBER_FIXED = struct.Struct(">IIB")
# version, creator, partitions, rf, flags, token, creation epoch
_TOPIC_FIXED = struct.Struct(">IIIHBQI")
# name hash, version, creator, flags, creation epoch, content tag
_DIGEST_ENTRY = struct.Struct(">QIIBII")
# creation token, partition, leader (-1: none), leader epoch, version
_PARTITION_FIXED = struct.Struct(">QIiII")
_CREATE_FIXED = struct.Struct(">IQBIH")  # request id, token, flags, partitions, rf
_RESULT_FIXED = struct.Struct(">IBh")  # request id, flags, Kafka error code
_VOTE_FIXED = struct.Struct(">IB")  # proposal id, verdict
_PROMISE = struct.Struct(">Ii")  # promised leader epoch (0: none), its candidate
TOPIC_EXPLICIT = 0x01  # topic record / digest / CREATE flag: an explicit CreateTopics
TOPIC_DELETED = 0x02  # topic record flag: a deletion record (tombstone) of the creation
RESULT_RETRY = 0x01  # CREATE_RESULT flag: not decided here (not the arbiter, or busy): retry
_HAS_RECORD = 0x02  # CREATE_RESULT flag: a topic record follows
_SYNC_FIXED = struct.Struct(">BQQ")
_OFFSET_FIXED = struct.Struct(">IqiqQI")
_TXN_PART_FIXED = struct.Struct(">IHH")  # batch, piece index, pieces
_TXN_ACK_FIXED = struct.Struct(">IQ")  # batch, version held

NULL16 = 0xFFFF


class WireError(ValueError):
    """A datagram that is not a valid gossip packet; ``reason`` names the kind for counters."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason


class MsgType(IntEnum):
    PING = 1  # direct probe; the target answers ACK
    ACK = 2  # answer to PING, or relayed answer to PING_REQ
    PING_REQ = 3  # "probe this member for me" (SWIM indirect probe)
    GOSSIP = 4  # nothing but piggybacked updates (fan-out push, leave notice, direct pushes)
    SYNC = 5  # anti-entropy: member chunk in updates + a topic digest over a hash range
    OFFSETS = 6  # committed offsets, to a group's successors (on commit, or for a pull)
    OFFSETS_ACK = 7  # the successor stored an OFFSETS batch
    CREATE = 8  # "create this topic": a broker to the name's arbiter (gossip/creation.py)
    CREATE_RESULT = 9  # the arbiter's answer: the record, an error code, or "retry"
    PROPOSE = 10  # the arbiter asks every live member to accept a new record before commit
    VOTE = 11  # a member's answer to PROPOSE: OK, HAVE (with its record), or REFUSE
    LEADER_AND_ISR = 12  # a partition's record from its leader (answer asked), or the answer
    OFFSETS_PULL = 13  # "send me the offsets of groups I may coordinate" (after a view change)
    OFFSETS_PULLED = 14  # answer to OFFSETS_PULL: every entry sent for it was acknowledged
    STAND_FOR = 15  # a candidate asks a replica to promise it a partition's next leader epoch
    BALLOT = 16  # the replica's answer to STAND_FOR: granted or not, its record and promise
    TXN_PART = 17  # a piece of a transactional id's record (gossip/txn_replication.py)
    TXN_ACK = 18  # the receiver holds the record those pieces made (and which version it holds)
    TXN_PULL = 19  # "send me the transaction records I lack" (after a view change)
    TXN_PULLED = 20  # answer to TXN_PULL: every record sent for it was acknowledged


class Verdict(IntEnum):
    OK = 0  # no record of that name here; promised to this proposer for a while
    HAVE = 1  # a record of that name exists here (attached): the proposal must yield to it
    REFUSE = 2  # the proposer is not this member's arbiter for the name, or it is promised


class Status(IntEnum):
    ALIVE = 0
    SUSPECT = 1
    DEAD = 2
    LEFT = 3  # left on purpose (graceful close); treated like DEAD for leadership


class UpdateTag(IntEnum):
    MEMBER = 1
    TOPIC = 2
    PAD = 3  # u16 length + that many bytes, ignored (see the module docstring)
    PARTITION = 4  # a replicated partition's leader and ISR (``PartitionRecord``)


# --- payload records -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MemberUpdate:
    """What one member says about another (or itself): identity, incarnation, status, addresses."""

    node_id: int
    incarnation: int
    status: Status
    gossip_host: str
    gossip_port: int
    kafka_host: str
    kafka_port: int


@dataclass(frozen=True, slots=True)
class TopicRecord:
    """A topic definition as gossiped. ``ring`` fixes the replica assignment at creation:
    partition p's replicas are ring[(p + r) % len(ring)] for r < replication_factor.
    ``creator`` is the arbiter that committed it; ``explicit`` says it answers a CreateTopics
    (not an auto-creation); ``token`` is the creating request's random id, so that request
    recognises its own record however the answer reaches it. ``deleted``: the record is the
    deletion of the topic that creation made (a tombstone; it keeps the topic's fields).
    ``epoch``: the name's creation epoch, one more than that of the deleted topic of the name
    the creation replaced (0 for a name's first topic)."""

    name: str
    version: int
    creator: int
    num_partitions: int
    replication_factor: int
    ring: tuple[int, ...]
    configs: tuple[tuple[str, str], ...] = ()
    explicit: bool = False
    token: int = 0
    deleted: bool = False
    epoch: int = 0


@dataclass(frozen=True, slots=True)
class PartitionRecord:
    """Leader, leader epoch and in-sync replicas of one partition of a topic with more than one
    replica, as gossiped (``tables/leaders.py`` has the rules). ``token`` is the topic's creation
    (``TopicRecord.token``) the record belongs to; ``version`` counts every change of the
    partition's record, across epochs; ``isr`` is in replica order; ``leader`` is -1 while the
    partition has none."""

    topic: str
    token: int
    partition: int
    leader: int
    leader_epoch: int
    version: int
    isr: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class OffsetEntry:
    group: str
    topic: str
    partition: int
    offset: int
    leader_epoch: int
    commit_timestamp_ms: int
    metadata: str | None
    stamp: int  # last-writer-wins clock (hybrid wall-clock ms * 1024 + counter)
    origin: int  # node that accepted the commit; breaks stamp ties deterministically


@dataclass(frozen=True, slots=True)
class TxnEntry:
    """A transactional id's record as the transaction coordinator stored it (opaque bytes) and
    its store version, ``(writes << 32) | writer``: the write count since the id's first
    record, then the broker that wrote it, so comparing versions as integers orders records
    by write count with the writer id breaking ties, and no two different records share a
    version (``tables/transactions.py``)."""

    transactional_id: str
    version: int
    record: bytes


Update = MemberUpdate | TopicRecord | PartitionRecord


@dataclass(frozen=True, slots=True)
class Ping:
    seq: int
    target: int  # node id the sender believes listens here; a mismatch is not acked


@dataclass(frozen=True, slots=True)
class Ack:
    seq: int


@dataclass(frozen=True, slots=True)
class PingReq:
    seq: int
    target: int
    host: str
    port: int


@dataclass(frozen=True, slots=True)
class Gossip:
    pass


@dataclass(frozen=True, slots=True)
class DigestEntry:
    name_hash: int
    version: int
    creator: int
    explicit: bool = False
    epoch: int = 0
    tag: int = 0  # CRC-32 of the record and its partitions' records (``TopicStore.tag``)


@dataclass(frozen=True, slots=True)
class Sync:
    reply: bool  # the receiver should answer with its own SYNC over the same range
    join: bool  # the sender is joining: answer with (a bounded part of) the full member table
    lo: int  # the digest covers every topic whose name hash is within [lo, hi]
    hi: int
    digest: tuple[DigestEntry, ...]


@dataclass(frozen=True, slots=True)
class Offsets:
    batch: int
    entries: tuple[OffsetEntry, ...]


@dataclass(frozen=True, slots=True)
class OffsetsAck:
    batch: int


@dataclass(frozen=True, slots=True)
class OffsetsPull:
    """"Send me ``group``'s offsets": ``rid`` names the pull, so its answer (OFFSETS_PULLED)
    is told from a stale one."""

    rid: int
    group: str


@dataclass(frozen=True, slots=True)
class OffsetsPulled:
    rid: int


@dataclass(frozen=True, slots=True)
class Create:
    """A creation forwarded to the name's arbiter. ``rid`` is the requester's id for it (the
    answer names it); ``token`` goes into the record, so a retried request recognises it."""

    rid: int
    token: int
    explicit: bool
    name: str
    num_partitions: int
    replication_factor: int
    configs: tuple[tuple[str, str], ...] = ()
    ring: tuple[int, ...] = ()  # a manual assignment's ring; empty: the arbiter places it


@dataclass(frozen=True, slots=True)
class CreateResult:
    """The arbiter's answer to CREATE: ``retry`` (not decided; ask again), or an error code
    (0 or TOPIC_ALREADY_EXISTS with the record of that name; INVALID_* without one)."""

    rid: int
    retry: bool
    code: int
    record: TopicRecord | None = None


@dataclass(frozen=True, slots=True)
class Propose:
    pid: int
    record: TopicRecord


@dataclass(frozen=True, slots=True)
class Vote:
    pid: int
    verdict: Verdict
    record: TopicRecord | None = None  # with HAVE: the record this member holds


@dataclass(frozen=True, slots=True)
class Promise:
    """A replica's word that it takes no record of a partition's creation older than leader
    epoch ``epoch`` and grants that epoch to ``candidate`` alone (``gossip/leadership.py``)."""

    epoch: int
    candidate: int


@dataclass(frozen=True, slots=True)
class LeaderAndIsr:
    """A partition's record: from its leader with ``reply`` (the member stores it and answers
    with the record it then holds), or that answer (``reply`` False), with the epoch the member
    has promised when that is newer than the record's (the pusher is then fenced)."""

    reply: bool
    record: PartitionRecord
    promise: Promise | None = None


@dataclass(frozen=True, slots=True)
class StandFor:
    """A candidate's proposed record (naming it leader, in a new leader epoch): "promise me
    that epoch"."""

    record: PartitionRecord


@dataclass(frozen=True, slots=True)
class Ballot:
    """A replica's answer to STAND_FOR for ``epoch``: ``granted`` (the promise is on its disk),
    with the record it holds and the promise it holds after answering."""

    granted: bool
    epoch: int
    record: PartitionRecord
    promise: Promise | None = None


@dataclass(frozen=True, slots=True)
class TxnPart:
    """Piece ``part`` of ``parts`` of one encoded ``TxnEntry`` (``encode_txn_entry``), sent as
    batch ``batch`` of its sender's run; the receiver joins the pieces, then answers TXN_ACK."""

    batch: int
    part: int
    parts: int
    data: bytes


@dataclass(frozen=True, slots=True)
class TxnAck:
    """Batch ``batch`` was reassembled and merged; ``version`` is the version the receiver
    holds for that id afterwards (above the batch's when it already held a newer record)."""

    batch: int
    version: int


@dataclass(frozen=True, slots=True)
class TxnPull:
    rid: int


@dataclass(frozen=True, slots=True)
class TxnPulled:
    rid: int


Message = (Ping | Ack | PingReq | Gossip | Sync | Offsets | OffsetsAck | Create | CreateResult
           | Propose | Vote | LeaderAndIsr | OffsetsPull | OffsetsPulled | StandFor | Ballot
           | TxnPart | TxnAck | TxnPull | TxnPulled)


@dataclass(frozen=True, slots=True)
class Header:
    cluster_tag: int
    sender: int
    boot: int
    seq: int


@dataclass(frozen=True, slots=True)
class Packet:
    header: Header
    message: Message
    updates: tuple[Update, ...]


def cluster_tag(name: str) -> int:
    return zlib.crc32(name.encode())


def name_hash(name: str) -> int:
    """64-bit hash of a topic name, the key of anti-entropy digests (stable across processes)."""
    return int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "big")


# --- encoding --------------------------------------------------------------------------------


def _str8(s: str) -> bytes:
    b = s.encode()
    if len(b) > 255:
        raise ValueError(f"string of {len(b)} bytes does not fit a u8 length")
    return _U8.pack(len(b)) + b


def _str16(s: str | None) -> bytes:
    if s is None:
        return _U16.pack(NULL16)
    b = s.encode()
    if len(b) >= NULL16:
        raise ValueError(f"string of {len(b)} bytes does not fit a u16 length")
    return _U16.pack(len(b)) + b


def _configs(configs: tuple[tuple[str, str], ...]) -> list[bytes]:
    parts = [_U16.pack(len(configs))]
    for k, v in configs:
        parts.append(_str8(k))
        parts.append(_str16(v))
    return parts


def encode_update(u: Update) -> bytes:
    """One piggyback entry, tag included; callers cache it (a broadcast is encoded once)."""
    if isinstance(u, PartitionRecord):
        return b"".join((
            _U8.pack(UpdateTag.PARTITION), _str8(u.topic),
            _PARTITION_FIXED.pack(u.token, u.partition, u.leader, u.leader_epoch, u.version),
            _U16.pack(len(u.isr)), *(_U32.pack(n) for n in u.isr),
        ))
    if isinstance(u, MemberUpdate):
        return b"".join((
            _U8.pack(UpdateTag.MEMBER),
            _MEMBER_FIXED.pack(u.node_id, u.incarnation, u.status),
            _str8(u.gossip_host), _U16.pack(u.gossip_port),
            _str8(u.kafka_host), _U16.pack(u.kafka_port),
        ))
    return b"".join((
        _U8.pack(UpdateTag.TOPIC), _str8(u.name),
        _TOPIC_FIXED.pack(u.version, u.creator, u.num_partitions, u.replication_factor,
                          (TOPIC_EXPLICIT if u.explicit else 0)
                          | (TOPIC_DELETED if u.deleted else 0), u.token, u.epoch),
        _U16.pack(len(u.ring)), *(_U32.pack(n) for n in u.ring),
        *_configs(u.configs),
    ))


# Bytes a CREATE_RESULT or VOTE adds around the record it carries (type, fixed fields).
_RECORD_MESSAGE_OVERHEAD = 1 + max(_RESULT_FIXED.size, _VOTE_FIXED.size)


def record_room(limit: int) -> int:
    """The largest encoded topic record (``encode_update``) that still fits one datagram of
    ``limit`` bytes inside any message that carries one; creation refuses larger topics."""
    return limit - HEADER_SIZE - _RECORD_MESSAGE_OVERHEAD - 2


def encode_offset_entry(e: OffsetEntry) -> bytes:
    return b"".join((
        _str16(e.group), _str16(e.topic),
        _OFFSET_FIXED.pack(e.partition, e.offset, e.leader_epoch, e.commit_timestamp_ms,
                           e.stamp, e.origin),
        _str16(e.metadata),
    ))


def encode_offsets_raw(batch: int, encoded_entries: Sequence[bytes]) -> bytes:
    """An OFFSETS message from entries already encoded (and sized) by chunk_offset_entries."""
    return b"".join((_U8.pack(MsgType.OFFSETS), _U32.pack(batch),
                     _U16.pack(len(encoded_entries)), *encoded_entries))


def encode_txn_entry(e: TxnEntry) -> bytes:
    """The bytes a transaction record travels as, cut into TXN_PART pieces."""
    return b"".join((_str16(e.transactional_id), _U64.pack(e.version),
                     _U32.pack(len(e.record)), e.record))


def decode_txn_entry(data: bytes) -> TxnEntry:
    """The inverse of ``encode_txn_entry``; raises only WireError (the pieces came from the
    network: a forged or mixed-up set must be dropped, not crash the receiver)."""
    r = _Reader(data)
    try:
        tid = r.str16()
        if tid is None:
            raise WireError("malformed", "null transactional id")
        version = r.unpack(_U64)[0]
        record = r.take(r.u32())
    except WireError:
        raise
    except Exception as e:
        raise WireError("malformed", repr(e)) from e
    if r.pos != len(data):
        raise WireError("trailing", f"{len(data) - r.pos} bytes after a transaction record")
    return TxnEntry(tid, version, record)


# Bytes of a TXN_PART message around its piece: type, fixed fields, the piece's u16 length.
TXN_PART_OVERHEAD = 1 + _TXN_PART_FIXED.size + 2


def encode_txn_part(batch: int, part: int, parts: int, data: bytes) -> bytes:
    return b"".join((_U8.pack(MsgType.TXN_PART), _TXN_PART_FIXED.pack(batch, part, parts),
                     _U16.pack(len(data)), data))


def encode_message(m: Message) -> bytes:
    if isinstance(m, Ping):
        return _U8.pack(MsgType.PING) + _PING.pack(m.seq, m.target)
    if isinstance(m, Ack):
        return _U8.pack(MsgType.ACK) + _U32.pack(m.seq)
    if isinstance(m, PingReq):
        return (_U8.pack(MsgType.PING_REQ) + _PING.pack(m.seq, m.target) + _str8(m.host)
                + _U16.pack(m.port))
    if isinstance(m, Gossip):
        return _U8.pack(MsgType.GOSSIP)
    if isinstance(m, Sync):
        flags = (1 if m.reply else 0) | (2 if m.join else 0)
        return b"".join((
            _U8.pack(MsgType.SYNC), _SYNC_FIXED.pack(flags, m.lo, m.hi),
            _U16.pack(len(m.digest)),
            *(_DIGEST_ENTRY.pack(d.name_hash, d.version, d.creator,
                                 TOPIC_EXPLICIT if d.explicit else 0, d.epoch, d.tag)
              for d in m.digest),
        ))
    if isinstance(m, Offsets):
        return b"".join((
            _U8.pack(MsgType.OFFSETS), _U32.pack(m.batch), _U16.pack(len(m.entries)),
            *(encode_offset_entry(e) for e in m.entries),
        ))
    if isinstance(m, OffsetsAck):
        return _U8.pack(MsgType.OFFSETS_ACK) + _U32.pack(m.batch)
    if isinstance(m, OffsetsPull):
        return _U8.pack(MsgType.OFFSETS_PULL) + _U32.pack(m.rid) + _str16(m.group)
    if isinstance(m, OffsetsPulled):
        return _U8.pack(MsgType.OFFSETS_PULLED) + _U32.pack(m.rid)
    if isinstance(m, Create):
        return b"".join((
            _U8.pack(MsgType.CREATE),
            _CREATE_FIXED.pack(m.rid, m.token, TOPIC_EXPLICIT if m.explicit else 0,
                               m.num_partitions, m.replication_factor),
            _str8(m.name), *_configs(m.configs),
            _U16.pack(len(m.ring)), *(_U32.pack(n) for n in m.ring),
        ))
    if isinstance(m, CreateResult):
        flags = (RESULT_RETRY if m.retry else 0) | (_HAS_RECORD if m.record else 0)
        return b"".join((_U8.pack(MsgType.CREATE_RESULT), _RESULT_FIXED.pack(m.rid, flags, m.code),
                         encode_update(m.record) if m.record else b""))
    if isinstance(m, Propose):
        return _U8.pack(MsgType.PROPOSE) + _U32.pack(m.pid) + encode_update(m.record)
    if isinstance(m, Vote):
        if (m.record is not None) != (m.verdict == Verdict.HAVE):
            raise ValueError("a vote carries a record exactly when it says HAVE")
        return b"".join((_U8.pack(MsgType.VOTE), _VOTE_FIXED.pack(m.pid, m.verdict),
                         encode_update(m.record) if m.record else b""))
    if isinstance(m, LeaderAndIsr):
        return b"".join((_U8.pack(MsgType.LEADER_AND_ISR), _U8.pack(1 if m.reply else 0),
                         encode_update(m.record), _encode_promise(m.promise)))
    if isinstance(m, StandFor):
        return _U8.pack(MsgType.STAND_FOR) + encode_update(m.record)
    if isinstance(m, Ballot):
        return b"".join((_U8.pack(MsgType.BALLOT), _U8.pack(1 if m.granted else 0),
                         _U32.pack(m.epoch), encode_update(m.record),
                         _encode_promise(m.promise)))
    if isinstance(m, TxnPart):
        if not 0 <= m.part < m.parts:
            raise ValueError(f"piece {m.part} of {m.parts}")
        return encode_txn_part(m.batch, m.part, m.parts, m.data)
    if isinstance(m, TxnAck):
        return _U8.pack(MsgType.TXN_ACK) + _TXN_ACK_FIXED.pack(m.batch, m.version)
    if isinstance(m, TxnPull):
        return _U8.pack(MsgType.TXN_PULL) + _U32.pack(m.rid)
    if isinstance(m, TxnPulled):
        return _U8.pack(MsgType.TXN_PULLED) + _U32.pack(m.rid)
    raise TypeError(f"not a gossip message: {m!r}")


def _encode_promise(p: Promise | None) -> bytes:
    if p is None:
        return _PROMISE.pack(0, -1)
    if p.epoch < 1:
        raise ValueError("a promise is for a leader epoch of 1 or more")
    return _PROMISE.pack(p.epoch, p.candidate)


def _decode_promise(r: _Reader) -> Promise | None:
    epoch, candidate = r.unpack(_PROMISE)
    if epoch == 0:
        return None
    if candidate < 0:
        raise WireError("malformed", "promise without a candidate")
    return Promise(epoch, candidate)


def _decode_partition(r: _Reader) -> PartitionRecord:
    part = _decode_update(r)
    if not isinstance(part, PartitionRecord):
        raise WireError("malformed", "expected a partition record")
    return part


def encode_header(h: Header, flags: int = 0) -> bytes:
    return _HEADER.pack(MAGIC, VERSION, flags, h.cluster_tag, h.sender, h.boot, h.seq)


def encode_padding(n: int) -> bytes:
    """A PAD entry of exactly ``n`` bytes (n >= 3) for the updates section."""
    return _U8.pack(UpdateTag.PAD) + _U16.pack(n - 3) + bytes(n - 3)


def assemble(
    header: Header,
    message: bytes,
    updates: Iterable[bytes] = (),
    *,
    limit: int = MAX_PACKET_BYTES,
    flags: int = 0,
) -> tuple[bytes, int]:
    """Header + encoded message + as many pre-encoded updates as fit within ``limit``.

    Returns (datagram, number of updates included). Updates are taken in order and packing
    stops at the first that does not fit, so callers control priority by ordering.
    """
    head = encode_header(header, flags) + message
    room = limit - len(head) - 2
    if room < 0:
        raise ValueError("message alone exceeds the packet limit")
    taken: list[bytes] = []
    for u in updates:
        if len(u) > room:
            break
        taken.append(u)
        room -= len(u)
    return head + _U16.pack(len(taken)) + b"".join(taken), len(taken)


def encode(packet: Packet, *, limit: int = MAX_PACKET_BYTES) -> bytes:
    """Encode a whole packet; raises ValueError if it does not fit ``limit`` (tests, tools)."""
    ups = [encode_update(u) for u in packet.updates]
    data, n = assemble(packet.header, encode_message(packet.message), ups, limit=limit)
    if n != len(ups):
        raise ValueError("updates do not fit the packet limit")
    return data


# --- decoding --------------------------------------------------------------------------------


class _Reader:
    __slots__ = ("buf", "pos")

    def __init__(self, buf: bytes) -> None:
        self.buf = buf
        self.pos = 0

    def take(self, n: int) -> bytes:
        end = self.pos + n
        if end > len(self.buf):
            raise WireError("truncated", f"need {n} bytes at {self.pos}")
        b = self.buf[self.pos:end]
        self.pos = end
        return b

    def unpack(self, s: struct.Struct) -> tuple:
        end = self.pos + s.size
        if end > len(self.buf):
            raise WireError("truncated", f"need {s.size} bytes at {self.pos}")
        v = s.unpack_from(self.buf, self.pos)
        self.pos = end
        return v

    def u8(self) -> int:
        return self.unpack(_U8)[0]

    def u16(self) -> int:
        return self.unpack(_U16)[0]

    def u32(self) -> int:
        return self.unpack(_U32)[0]

    def text(self, n: int) -> str:
        try:
            return self.take(n).decode()
        except UnicodeDecodeError as e:
            raise WireError("malformed", "invalid UTF-8") from e

    def str8(self) -> str:
        return self.text(self.u8())

    def str16(self) -> str | None:
        n = self.u16()
        return None if n == NULL16 else self.text(n)

    def count(self, min_item: int) -> int:
        """A u16 count, rejected early if the remaining bytes cannot hold that many items."""
        n = self.u16()
        if n * min_item > len(self.buf) - self.pos:
            raise WireError("malformed", f"count {n} exceeds the packet")
        return n


# Member updates repeat verbatim across packets (every member relays the same few), so decoded
# ones are memoised by their bytes; bounded, cleared when full.
_MEMBER_CACHE: dict[bytes, MemberUpdate] = {}
_MEMBER_CACHE_MAX = 8_192  # ~600 bytes each at most: a flood of distinct ones stays ~5 MB
_STATUSES = tuple(Status)


def _decode_member_fast(r: _Reader) -> MemberUpdate:
    buf, pos = r.buf, r.pos  # pos is just past the tag byte
    try:
        gl = buf[pos + 9]
        kl = buf[pos + 12 + gl]
    except IndexError:
        raise WireError("truncated", "member update") from None
    end = pos + 15 + gl + kl
    if end > len(buf):
        raise WireError("truncated", "member update")
    raw = buf[pos:end]
    u = _MEMBER_CACHE.get(raw)
    if u is None:
        node_id, inc, status = _MEMBER_FIXED.unpack_from(buf, pos)
        if status > Status.LEFT:
            raise WireError("malformed", f"member status {status}")
        try:
            gh = raw[10 : 10 + gl].decode()
            kh = raw[13 + gl : 13 + gl + kl].decode()
        except UnicodeDecodeError as e:
            raise WireError("malformed", "invalid UTF-8") from e
        gp = _U16.unpack_from(raw, 10 + gl)[0]
        kp = _U16.unpack_from(raw, 13 + gl + kl)[0]
        u = MemberUpdate(node_id, inc, _STATUSES[status], gh, gp, kh, kp)
        if len(_MEMBER_CACHE) >= _MEMBER_CACHE_MAX:
            _MEMBER_CACHE.clear()
        _MEMBER_CACHE[raw] = u
    r.pos = end
    return u


def decode_member_reference(r: _Reader) -> MemberUpdate:
    """The plain field-by-field member decoder; the tests check the fast path against it."""
    node_id, inc, status = r.unpack(_MEMBER_FIXED)
    if status > Status.LEFT:
        raise WireError("malformed", f"member status {status}")
    gh = r.str8()
    gp = r.u16()
    kh = r.str8()
    kp = r.u16()
    return MemberUpdate(node_id, inc, Status(status), gh, gp, kh, kp)


def _decode_update(r: _Reader) -> Update | None:
    tag = r.u8()
    if tag == UpdateTag.MEMBER:
        return _decode_member_fast(r)
    if tag == UpdateTag.TOPIC:
        name = r.str8()
        version, creator, nparts, rf, flags, token, epoch = r.unpack(_TOPIC_FIXED)
        ring = tuple(r.u32() for _ in range(r.count(4)))
        if not name or nparts < 1 or rf < 1 or not ring:
            raise WireError("malformed", "empty topic record")
        if flags & ~(TOPIC_EXPLICIT | TOPIC_DELETED):
            raise WireError("malformed", f"topic flags {flags}")
        return TopicRecord(name, version, creator, nparts, rf, ring, _decode_configs(r),
                           bool(flags & TOPIC_EXPLICIT), token, bool(flags & TOPIC_DELETED),
                           epoch)
    if tag == UpdateTag.PARTITION:
        topic = r.str8()
        token, partition, leader, epoch, version = r.unpack(_PARTITION_FIXED)
        isr = tuple(r.u32() for _ in range(r.count(4)))
        if not topic or leader < -1:
            raise WireError("malformed", "partition record")
        return PartitionRecord(topic, token, partition, leader, epoch, version, isr)
    if tag == UpdateTag.PAD:
        r.take(r.u16())
        return None
    raise WireError("malformed", f"update tag {tag}")


def _decode_configs(r: _Reader) -> tuple[tuple[str, str], ...]:
    configs = []
    for _ in range(r.count(3)):
        k = r.str8()
        v = r.str16()
        if v is None:
            raise WireError("malformed", "null topic config")
        configs.append((k, v))
    return tuple(configs)


def _decode_record(r: _Reader) -> TopicRecord:
    """A topic record carried inside a message (tag included, as encode_update wrote it)."""
    rec = _decode_update(r)
    if not isinstance(rec, TopicRecord):
        raise WireError("malformed", "expected a topic record")
    return rec


def _decode_offset_entry(r: _Reader) -> OffsetEntry:
    group = r.str16()
    if group is None:
        raise WireError("malformed", "null group")
    topic = r.str16()
    if topic is None:
        raise WireError("malformed", "null topic")
    part, off, epoch, ts, stamp, origin = r.unpack(_OFFSET_FIXED)
    return OffsetEntry(group, topic, part, off, epoch, ts, r.str16(), stamp, origin)


def _decode_message(r: _Reader) -> Message:
    t = r.u8()
    if t == MsgType.PING:
        return Ping(*r.unpack(_PING))
    if t == MsgType.ACK:
        return Ack(r.u32())
    if t == MsgType.PING_REQ:
        seq, target = r.unpack(_PING)
        return PingReq(seq, target, r.str8(), r.u16())
    if t == MsgType.GOSSIP:
        return Gossip()
    if t == MsgType.SYNC:
        flags, lo, hi = r.unpack(_SYNC_FIXED)
        if flags & ~3 or lo > hi:
            raise WireError("malformed", "sync flags or range")
        digest = []
        for _ in range(r.count(_DIGEST_ENTRY.size)):
            h, version, creator, dflags, epoch, tag = r.unpack(_DIGEST_ENTRY)
            if dflags & ~TOPIC_EXPLICIT:
                raise WireError("malformed", f"digest flags {dflags}")
            digest.append(DigestEntry(h, version, creator, bool(dflags), epoch, tag))
        return Sync(bool(flags & 1), bool(flags & 2), lo, hi, tuple(digest))
    if t == MsgType.OFFSETS:
        batch = r.u32()
        return Offsets(batch, tuple(_decode_offset_entry(r) for _ in range(r.count(8))))
    if t == MsgType.OFFSETS_ACK:
        return OffsetsAck(r.u32())
    if t == MsgType.OFFSETS_PULL:
        rid = r.u32()
        group = r.str16()
        if group is None:
            raise WireError("malformed", "null group")
        return OffsetsPull(rid, group)
    if t == MsgType.OFFSETS_PULLED:
        return OffsetsPulled(r.u32())
    if t == MsgType.CREATE:
        rid, token, flags, nparts, rf = r.unpack(_CREATE_FIXED)
        if flags & ~TOPIC_EXPLICIT:
            raise WireError("malformed", f"create flags {flags}")
        name = r.str8()
        configs = _decode_configs(r)
        return Create(rid, token, bool(flags), name, nparts, rf, configs,
                      tuple(r.u32() for _ in range(r.count(4))))
    if t == MsgType.CREATE_RESULT:
        rid, flags, code = r.unpack(_RESULT_FIXED)
        if flags & ~(RESULT_RETRY | _HAS_RECORD):
            raise WireError("malformed", f"create result flags {flags}")
        rec = _decode_record(r) if flags & _HAS_RECORD else None
        return CreateResult(rid, bool(flags & RESULT_RETRY), code, rec)
    if t == MsgType.PROPOSE:
        return Propose(r.u32(), _decode_record(r))
    if t == MsgType.VOTE:
        pid, verdict = r.unpack(_VOTE_FIXED)
        if verdict > max(Verdict):
            raise WireError("malformed", f"verdict {verdict}")
        vote_rec = _decode_record(r) if verdict == Verdict.HAVE else None
        return Vote(pid, Verdict(verdict), vote_rec)
    if t == MsgType.LEADER_AND_ISR:
        flags = r.u8()
        if flags & ~1:
            raise WireError("malformed", f"leader and isr flags {flags}")
        part = _decode_partition(r)
        return LeaderAndIsr(bool(flags), part, _decode_promise(r))
    if t == MsgType.STAND_FOR:
        return StandFor(_decode_partition(r))
    if t == MsgType.BALLOT:
        flags = r.u8()
        if flags & ~1:
            raise WireError("malformed", f"ballot flags {flags}")
        epoch = r.u32()
        part = _decode_partition(r)
        return Ballot(bool(flags), epoch, part, _decode_promise(r))
    if t == MsgType.TXN_PART:
        batch, part, parts = r.unpack(_TXN_PART_FIXED)
        if part >= parts:
            raise WireError("malformed", f"transaction piece {part} of {parts}")
        return TxnPart(batch, part, parts, r.take(r.u16()))
    if t == MsgType.TXN_ACK:
        return TxnAck(*r.unpack(_TXN_ACK_FIXED))
    if t == MsgType.TXN_PULL:
        return TxnPull(r.u32())
    if t == MsgType.TXN_PULLED:
        return TxnPulled(r.u32())
    raise WireError("malformed", f"message type {t}")


def decode_header(data: bytes, *, limit: int = MAX_PACKET_BYTES, flags: int = 0) -> Header:
    """Check size, magic, version and flags (must equal ``flags``); cheap, so junk is rejected
    before real parsing."""
    if len(data) > limit:
        raise WireError("oversized", f"{len(data)} bytes")
    if len(data) < HEADER_SIZE:
        raise WireError("truncated", f"{len(data)} bytes")
    magic, version, got, tag, sender, boot, seq = _HEADER.unpack_from(data)
    if magic != MAGIC:
        raise WireError("bad_magic")
    if version != VERSION:
        raise WireError("bad_version", str(version))
    if got != flags:
        raise WireError("bad_flags", str(got))
    return Header(tag, sender, boot, seq)


def decode(data: bytes, *, limit: int = MAX_PACKET_BYTES, flags: int = 0) -> Packet:
    """Parse one datagram (its tag already checked and stripped if ``flags`` has FLAG_HMAC);
    raises only WireError."""
    try:
        header = decode_header(data, limit=limit, flags=flags)
        r = _Reader(bytes(data))
        r.pos = HEADER_SIZE
        message = _decode_message(r)
        decoded = [_decode_update(r) for _ in range(r.count(1))]
        updates = tuple(u for u in decoded if u is not None)
        if r.pos != len(r.buf):
            raise WireError("trailing", f"{len(r.buf) - r.pos} bytes")
        return Packet(header, message, updates)
    except WireError:
        raise
    except Exception as e:  # a codec bug must still surface as a dropped datagram
        raise WireError("malformed", repr(e)) from e


def chunk_offset_entries(
    entries: Sequence[OffsetEntry], *, room: int
) -> list[list[tuple[OffsetEntry, bytes]]]:
    """Split entries into groups whose encodings fit ``room`` bytes each (one packet apiece)."""
    chunks: list[list[tuple[OffsetEntry, bytes]]] = []
    cur: list[tuple[OffsetEntry, bytes]] = []
    used = 0
    for e in entries:
        b = encode_offset_entry(e)
        if len(b) > room:
            continue  # cannot ever fit (absurd group id); never replicated, stays local
        if used + len(b) > room or len(cur) >= 0xFFFE:
            chunks.append(cur)
            cur, used = [], 0
        cur.append((e, b))
        used += len(b)
    if cur:
        chunks.append(cur)
    return chunks
