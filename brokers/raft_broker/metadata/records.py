"""The metadata log's records: every change to the cluster's metadata, as the Raft twin's
quorum commits it, and their codec.

KRaft keeps the cluster's metadata as a log of records (KIP-631) that every broker replays
into the same image; this twin does the same over its own Raft core. A record says what
changed, never why; which broker decided it does not matter once it is committed. Records
that depend on state (a partition change, an offset commit fenced by a group's generation, a
topic's configs) carry the version they were decided on, and the image applies them only
where it still holds. So two proposals raced through the quorum resolve the same way on every
broker: the first committed wins and the other is rejected, by everyone, at the same index.

The codec is JSON, one array per record, ``[kind, field, ...]`` in field order: metadata is
not a data path (one record per topic, per leadership change, per offset commit), and a
readable log is worth more here than bytes. Decoding checks every field's type and range and
raises ``RecordDecodeError`` alone, whatever the input.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any, TypeAlias

# The largest value any integer field may hold (Kafka's int64 range; ids and epochs are int32
# on the wire, checked where they are served).
_MAX_INT = (1 << 63) - 1
NO_LEADER = -1


class RecordDecodeError(ValueError):
    """Bytes that are not one well-formed metadata record."""


@dataclass(frozen=True, slots=True)
class PartitionInit:
    """A new partition's first state, as the controller decided it."""

    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int


@dataclass(frozen=True, slots=True)
class CommittedOffset:
    topic: str
    partition: int
    offset: int
    metadata: str | None
    leader_epoch: int
    commit_timestamp_ms: int


@dataclass(frozen=True, slots=True)
class Owner:
    """One line of a group's ownership registry: who consumes a partition."""

    topic: str
    partition: int
    member_id: str


# --- brokers ------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class RegisterBroker:
    """A broker process joined. Its epoch is the index of this record: a restarted broker
    registers again and gets a new one, which fences what it said in its earlier life."""

    broker_id: int
    host: str
    port: int
    rack: str | None


@dataclass(frozen=True, slots=True)
class FenceBroker:
    """The controller fenced (``fenced``) or unfenced a broker of registration ``epoch``: a
    fenced broker leads nothing and is not listed in Metadata."""

    broker_id: int
    epoch: int
    fenced: bool


@dataclass(frozen=True, slots=True)
class UnregisterBroker:
    broker_id: int
    epoch: int


# --- topics and partitions ----------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class CreateTopic:
    """A topic and all its partitions, at once. Rejected when the name is taken: exactly one
    creation of a name is ever applied, whichever broker proposed it. The topic's id is the
    index of this record. ``token``: the proposer's random mark of this creation, kept with
    the topic, so a proposer that retried after losing the answer knows its own creation from
    another's when the retry is rejected for the name."""

    name: str
    partitions: tuple[PartitionInit, ...]
    configs: tuple[tuple[str, str], ...]
    token: str = ""


@dataclass(frozen=True, slots=True)
class AddPartitions:
    """Partitions ``first`` .. of topic ``topic_id``; rejected unless the topic has exactly
    ``first`` partitions (a concurrent increase got there first)."""

    topic_id: int
    first: int
    partitions: tuple[PartitionInit, ...]


@dataclass(frozen=True, slots=True)
class ChangePartition:
    """A partition's new leader and ISR, decided on its state at ``partition_epoch``: applied
    only if that is still its epoch (every change bumps it). ``new_leader_epoch`` bumps the
    leader epoch too (a leadership change, as Kafka bumps it; an ISR change keeps it)."""

    topic_id: int
    partition: int
    partition_epoch: int
    leader: int
    isr: tuple[int, ...]
    new_leader_epoch: bool


@dataclass(frozen=True, slots=True)
class SetTopicConfigs:
    """A topic's configs replaced, decided on its configs at ``version``."""

    topic_id: int
    version: int
    configs: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class DeleteTopic:
    topic_id: int


# --- groups, offsets, producer ids --------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class RegisterMember:
    group: str
    member_id: str
    client_id: str
    client_host: str


@dataclass(frozen=True, slots=True)
class UnregisterMember:
    group: str
    member_id: str


@dataclass(frozen=True, slots=True)
class RecordOwners:
    """A group's ownership registry after a rebalance; bumps the group's generation, which
    fences the commits of members of the rebalance before (``CommitOffsets.generation``)."""

    group: str
    owners: tuple[Owner, ...]


@dataclass(frozen=True, slots=True)
class CommitOffsets:
    """Committed offsets of a group, decided by a coordinator that saw the group at
    ``generation`` (-1: unfenced, a commit outside any rebalance of a member group).

    ``proposer`` and ``decided_at`` fence a coordinator that lost the group: the broker that
    decided the commit and the index its image had applied then. The image applies the commit
    only if that broker still coordinates the group and the live brokers (which place the
    group) have not changed since ``decided_at`` (-1, -1: unguarded, a record of an older
    log). Without them, a commit an isolated coordinator kept resending landed after the heal,
    behind a newer commit of the group's next coordinator, and moved the offset backwards."""

    group: str
    generation: int
    offsets: tuple[CommittedOffset, ...]
    proposer: int = -1
    decided_at: int = -1


@dataclass(frozen=True, slots=True)
class DeleteOffsets:
    """Offsets of ``partitions`` (topic, partition), or every one of the group's (None);
    ``proposer`` and ``decided_at`` fence it as they fence ``CommitOffsets``."""

    group: str
    partitions: tuple[tuple[str, int], ...] | None
    proposer: int = -1
    decided_at: int = -1


@dataclass(frozen=True, slots=True)
class AllocateProducerIds:
    """A block of ``size`` producer ids for ``broker_id``: the ids after the last block, known
    when the record is applied."""

    broker_id: int
    size: int


# --- transactions -------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class TxnState:
    """A transactional id's record (brokers/core/transactions; opaque bytes to the log),
    written if the id's stored version is still ``version`` (-1: the id must have none).

    Applied, the id's version becomes ``version + 1``: a per-id counter, not the record's
    index, because a retried proposal is answered with its first copy's outcome at the
    retry's own index, so only the counter is known to the proposer in every case. Ids are
    never deleted, so a counter cannot come back to a value a stale writer holds.
    ``proposer`` and ``decided_at`` fence a coordinator that lost the id (placed as a group
    on ``placement_key``), as they fence ``CommitOffsets``; unlike there they are always set:
    no older log holds this record."""

    transactional_id: str
    record: bytes
    version: int
    proposer: int
    decided_at: int


Record: TypeAlias = (RegisterBroker | FenceBroker | UnregisterBroker | CreateTopic
                     | AddPartitions | ChangePartition | SetTopicConfigs | DeleteTopic
                     | RegisterMember | UnregisterMember | RecordOwners | CommitOffsets
                     | DeleteOffsets | AllocateProducerIds | TxnState)

# The kind tag of each record type on the wire; never renumber (logs and snapshots outlive code).
KINDS: dict[type, int] = {
    RegisterBroker: 1, FenceBroker: 2, UnregisterBroker: 3, CreateTopic: 4, AddPartitions: 5,
    ChangePartition: 6, SetTopicConfigs: 7, DeleteTopic: 8, RegisterMember: 9,
    UnregisterMember: 10, RecordOwners: 11, CommitOffsets: 12, DeleteOffsets: 13,
    AllocateProducerIds: 14, TxnState: 15,
}
_BY_KIND = {k: t for t, k in KINDS.items()}
# Record types whose last two fields (proposer, decided_at) were added later: an entry of an
# older log without them decodes to the unguarded defaults.
_GUARDED: frozenset[type] = frozenset({CommitOffsets, DeleteOffsets})


# --- the codec ----------------------------------------------------------------------------------
def _plain(value: Any) -> Any:
    """A record's field as JSON: nested records as arrays of their fields."""
    if isinstance(value, PartitionInit | CommittedOffset | Owner):
        return [_plain(getattr(value, f.name)) for f in fields(value)]
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, bytes):
        # Latin-1 maps every byte to one code point and back: any bytes survive, and the
        # JSON a transaction record is in practice stays readable in the log.
        return value.decode("latin-1")
    return value


# An entry's first element when it is a proposer's tagged record, ``[0, token, record]``:
# the token makes a retried proposal idempotent (MetadataImage.apply keeps the outcome of each
# recent token and answers a second copy with it instead of applying the record again).
TAGGED = 0
# A token's largest length (a proposer's random hex; anything longer is refused).
MAX_TOKEN = 64


def _array(record: Record) -> list[Any]:
    return [KINDS[type(record)], *(_plain(getattr(record, f.name)) for f in fields(record))]


def encode(record: Record, token: str = "") -> bytes:
    """The record's bytes; tagged with ``token`` when one is given (see ``TAGGED``)."""
    doc = [TAGGED, token, _array(record)] if token else _array(record)
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode()


def _int(v: Any, low: int = -1) -> int:
    if type(v) is not int or not low <= v <= _MAX_INT:
        raise RecordDecodeError(f"expected an integer >= {low}, got {v!r}")
    return v


def _id(v: Any) -> int:
    return _int(v, 0)


def _str(v: Any) -> str:
    if not isinstance(v, str):
        raise RecordDecodeError(f"expected a string, got {v!r}")
    try:
        # JSON's \\ud800 escapes decode to lone surrogates that UTF-8 cannot encode: such a
        # record would be applied and then break every node's next snapshot.
        v.encode("utf-8")
    except UnicodeEncodeError:
        raise RecordDecodeError(f"a string that is not Unicode text: {v!r}") from None
    return v


def _bytes(v: Any) -> bytes:
    """Bytes written as a Latin-1 string (``_plain``); a code point above 255 is no byte."""
    try:
        return _str(v).encode("latin-1")
    except UnicodeEncodeError:
        raise RecordDecodeError(f"a string that is not Latin-1 bytes: {v!r}") from None


def _opt_str(v: Any) -> str | None:
    return None if v is None else _str(v)


def _bool(v: Any) -> bool:
    if not isinstance(v, bool):
        raise RecordDecodeError(f"expected a boolean, got {v!r}")
    return v


def _list(v: Any, n: int | None = None) -> list[Any]:
    if not isinstance(v, list) or (n is not None and len(v) != n):
        raise RecordDecodeError(f"expected a list{'' if n is None else f' of {n}'}, got {v!r}")
    return v


def _ids(v: Any) -> tuple[int, ...]:
    return tuple(_id(x) for x in _list(v))


def _partition_init(v: Any) -> PartitionInit:
    replicas, isr, leader = _list(v, 3)
    return PartitionInit(_ids(replicas), _ids(isr), _int(leader))


def _committed(v: Any) -> CommittedOffset:
    topic, partition, offset, metadata, epoch, ts = _list(v, 6)
    return CommittedOffset(_str(topic), _id(partition), _int(offset), _opt_str(metadata),
                           _int(epoch), _int(ts))


def _owner(v: Any) -> Owner:
    topic, partition, member = _list(v, 3)
    return Owner(_str(topic), _id(partition), _str(member))


def _configs(v: Any) -> tuple[tuple[str, str], ...]:
    out = []
    for pair in _list(v):
        k, val = _list(pair, 2)
        out.append((_str(k), _str(val)))
    return tuple(out)


def _partitions(v: Any) -> tuple[tuple[str, int], ...] | None:
    if v is None:
        return None
    out = []
    for pair in _list(v):
        t, p = _list(pair, 2)
        out.append((_str(t), _id(p)))
    return tuple(out)


# Per record type, the decoder of each field in order.
_FIELDS: Mapping[type, tuple[Callable[[Any], Any], ...]] = {
    RegisterBroker: (_id, _str, _id, _opt_str),
    FenceBroker: (_id, _id, _bool),
    UnregisterBroker: (_id, _id),
    CreateTopic: (_str, lambda v: tuple(_partition_init(x) for x in _list(v)), _configs, _str),
    AddPartitions: (_id, _id, lambda v: tuple(_partition_init(x) for x in _list(v))),
    ChangePartition: (_id, _id, _id, _int, _ids, _bool),
    SetTopicConfigs: (_id, _id, _configs),
    DeleteTopic: (_id,),
    RegisterMember: (_str, _str, _str, _str),
    UnregisterMember: (_str, _str),
    RecordOwners: (_str, lambda v: tuple(_owner(x) for x in _list(v))),
    CommitOffsets: (_str, _int, lambda v: tuple(_committed(x) for x in _list(v)), _int, _int),
    DeleteOffsets: (_str, _partitions, _int, _int),
    AllocateProducerIds: (_id, _id),
    TxnState: (_str, _bytes, _int, _id, _id),
}


def decode(data: bytes) -> Record:
    """The record ``data`` encodes, tagged or not; RecordDecodeError for anything else."""
    return decode_entry(data)[1]


def decode_entry(data: bytes) -> tuple[str, Record]:
    """(token, record) of a log entry's data; the token is "" for an untagged record."""
    try:
        raw = json.loads(data)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise RecordDecodeError(f"not a JSON record: {exc}") from None
    items = _list(raw)
    if items and type(items[0]) is int and items[0] == TAGGED:
        _, token, inner = _list(items, 3)
        token = _str(token)
        if not 0 < len(token) <= MAX_TOKEN:
            raise RecordDecodeError(f"a token of {len(token)} characters")
        return token, _record(_list(inner))
    return "", _record(items)


def _record(items: list[Any]) -> Record:
    if not items or type(items[0]) is not int or items[0] not in _BY_KIND:
        raise RecordDecodeError(f"unknown record kind {items[0] if items else None!r}")
    cls = _BY_KIND[items[0]]
    decoders = _FIELDS[cls]
    if cls in _GUARDED and len(items) == len(decoders) - 1:
        decoders = decoders[:-2]
    if len(items) != len(decoders) + 1:
        raise RecordDecodeError(f"{cls.__name__}: {len(items) - 1} fields, expected "
                                f"{len(decoders)}")
    try:
        record: Record = cls(*(d(v) for d, v in zip(decoders, items[1:], strict=True)))
    except RecordDecodeError as exc:
        raise RecordDecodeError(f"{cls.__name__}: {exc}") from None
    return record
