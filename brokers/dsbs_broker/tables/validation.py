"""The rules every decoded gossip update must pass before it touches a broker's tables (sans-IO).

The codec (``packets/wire.py``) guarantees only that a datagram is well formed. These checks say
whether what it claims can be true of a twinbench cluster, so that neither a forged datagram
(insecure mode, or a key holder gone wrong) nor a bug elsewhere can make a broker hold state it
cannot serve, persist, or send on:

* node ids (members, topic creators, replicas, offset origins) are Kafka broker ids, int32 >= 0:
  Metadata encodes them as INT32, and one larger id would break every Metadata response;
* a claim that a member is suspect, dead or gone must carry an incarnation below the u32
  maximum: its subject refutes at (incarnation + 1), which must fit the wire and the state file.
  ALIVE at the maximum is accepted: it is the subject's own last refutation. Topic versions stay
  below the maximum as well (a later version is written as version + 1);
* gossip hosts are IP address literals, never names: the gossip socket sends to them on every
  probe, and a name would need a DNS lookup per packet (uvloop refuses outright). Multicast,
  broadcast and unspecified addresses are refused: a member is one host. A Kafka host may also
  be a host name, because that is what a broker advertises with ``--advertised-host`` and
  clients, not brokers, resolve it;
* topic names follow Kafka's rule; partition counts and replica rings stay within
  ``GossipLimits`` (a forged 2**32-1 partitions would be expanded into one state per partition);
* offset stamps leave room for the last-writer-wins clock to keep counting (below 2**63); an
  offset's topic is a topic name or a transaction's pending key for one
  (``txn:<producer id>:<topic>``, brokers/core/transactions/offsets.py), under which the
  group's coordinator holds a transaction's offsets until its marker;
* transaction records name a transactional id Kafka could send (1 to 32,767 bytes: its wire
  string), carry a version a broker could have written (a write count of 1 or more that
  leaves room to count on, and a writer that is a broker id) and stay within
  ``GossipLimits.max_transaction_bytes``.

Each check returns None when the input passes, else a short reason; the gossip state machine
counts drops under ``dropped_invalid_<reason>``.
"""

from __future__ import annotations

import functools
import ipaddress
import re

from brokers.core.coordinator import TopicPartition, validate_topic_name
from brokers.core.errors import InvalidTopic
from brokers.core.transactions.offsets import is_done_key, is_pending, parse_pending
from brokers.dsbs_broker.config import GossipLimits
from brokers.dsbs_broker.packets.wire import (
    MemberUpdate,
    OffsetEntry,
    PartitionRecord,
    Status,
    TopicRecord,
    TxnEntry,
)

U32_MAX = 0xFFFF_FFFF
INT32_MAX = 0x7FFF_FFFF
# Incarnations are u32 on the wire; a member refutes at (what it heard + 1), which must fit.
MAX_INCARNATION = U32_MAX
# Topic versions are u32 too; a later version is written as version + 1.
MAX_TOPIC_VERSION = U32_MAX
# The offsets' last-writer-wins clock is wall-clock ms * 1024 (~2**61 today) and advances past
# anything it has seen; half the u64 range leaves it room to keep counting.
MAX_STAMP = (1 << 63) - 1
# A transactional id is a Kafka STRING (int16 length).
MAX_TRANSACTIONAL_ID_BYTES = 0x7FFF
# A transaction record's version is (writes << 32) | writer (tables/transactions.py); the write
# count stays below 2**31 so every version is a non-negative int64 with room to count on.
MAX_TXN_WRITES = (1 << 31) - 1

_HOST_NAME = re.compile(
    r"(?=.{1,253}\Z)([A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?\.)*"
    r"[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?\.?")


@functools.lru_cache(maxsize=4096)  # members repeat the same few addresses; ipaddress is slow
def address_literal_problem(host: str) -> str | None:
    """None if ``host`` is a unicast IP address literal, else why not."""
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return "not an IP address literal"
    if ip.is_multicast or ip.is_unspecified or ip == ipaddress.IPv4Address("255.255.255.255"):
        return "not a unicast address"
    return None


def is_host(host: str) -> bool:
    """An IP literal or a syntactically valid host name (nothing is resolved)."""
    return address_literal_problem(host) is None or _HOST_NAME.fullmatch(host) is not None


def _topic_name_ok(name: str) -> bool:
    try:
        validate_topic_name(name)
    except InvalidTopic:
        return False
    return True


def member_problem(u: MemberUpdate) -> str | None:
    if u.node_id > INT32_MAX:
        return "node_id"
    if u.incarnation >= MAX_INCARNATION and u.status != Status.ALIVE:
        return "incarnation"
    if u.gossip_port == 0 or address_literal_problem(u.gossip_host) is not None:
        return "gossip_address"
    if u.kafka_port == 0 or not is_host(u.kafka_host):
        return "kafka_address"
    return None


def topic_problem(rec: TopicRecord, limits: GossipLimits) -> str | None:
    """Whether the record itself is acceptable (capacity is the caller's business)."""
    if not _topic_name_ok(rec.name):
        return "topic_name"
    if not 1 <= rec.version < MAX_TOPIC_VERSION:
        return "topic_version"
    if rec.creator > INT32_MAX:
        return "topic_creator"
    if not 1 <= rec.num_partitions <= limits.max_topic_partitions:
        return "partitions"
    ring = rec.ring
    # A manual assignment with one replica per partition may name a broker for several
    # partitions: its ring is then the assignment itself, one entry per partition.
    manual = rec.replication_factor == 1 and len(ring) <= rec.num_partitions
    if ((len(ring) > limits.max_members and not manual)
            or (len(set(ring)) != len(ring) and not manual)
            or any(r > INT32_MAX for r in ring)):
        return "ring"
    if not 1 <= rec.replication_factor <= len(ring):
        return "replication_factor"
    return None


def partition_problem(rec: PartitionRecord, limits: GossipLimits) -> str | None:
    """Whether a replicated partition's record can be true of any topic (whether it fits the
    topic held is ``TopicStore.apply_partition``'s check): Kafka's leader epochs are int32,
    versions stay below the u32 maximum (a later one is version + 1)."""
    if not _topic_name_ok(rec.topic):
        return "topic_name"
    if rec.partition >= limits.max_topic_partitions:
        return "partition"
    if rec.leader > INT32_MAX or rec.leader_epoch >= INT32_MAX:
        return "partition_leader"
    if rec.version >= MAX_TOPIC_VERSION:
        return "partition_version"
    if len(rec.isr) > limits.max_members or any(r > INT32_MAX for r in rec.isr):
        return "partition_isr"
    return None


def _offset_topic_ok(topic: str, partition: int) -> bool:
    if not is_pending(TopicPartition(topic, partition)):
        return _topic_name_ok(topic)
    if is_done_key(TopicPartition(topic, partition)):
        return True
    parsed = parse_pending(TopicPartition(topic, partition))
    return parsed is not None and parsed[0] >= 0 and _topic_name_ok(parsed[1].topic)


def offset_problem(e: OffsetEntry) -> str | None:
    if not _offset_topic_ok(e.topic, e.partition):
        return "offset_topic"
    if e.partition > INT32_MAX:
        return "offset_partition"
    if e.offset < -1:
        return "offset_value"
    if e.stamp > MAX_STAMP:
        return "offset_stamp"
    if e.origin > INT32_MAX:
        return "offset_origin"
    return None


def txn_problem(e: TxnEntry, limits: GossipLimits) -> str | None:
    if not 1 <= len(e.transactional_id.encode()) <= MAX_TRANSACTIONAL_ID_BYTES:
        return "txn_id"
    writes, writer = e.version >> 32, e.version & U32_MAX
    if not 1 <= writes < MAX_TXN_WRITES or writer > INT32_MAX:
        return "txn_version"
    if len(e.record) > limits.max_transaction_bytes:
        return "txn_size"
    return None
