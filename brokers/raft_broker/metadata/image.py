"""The metadata image: what the committed metadata log says, applied record by record.

Every broker of the Raft twin, voter or not, applies the same committed records in the same
order to its own ``MetadataImage``, so every image at index i is the same image (the
state-machine safety Raft gives). ``apply`` is therefore deterministic and total: it never
raises, it never reads a clock or a random source, and a record that no longer holds (a
partition changed since the decision, a name already taken, a commit of an older generation)
is rejected the same way everywhere, its ``Outcome`` saying why. The broker that proposed a
record learns its fate from the outcome at the record's index.

What the image holds is what the Coordinator seam serves (brokers/core/coordinator.py):
brokers with their registration epoch and fencing, topics with their ids, partitions (replicas,
ISR, leader, leader epoch, partition epoch), configs, the groups' member and owner registries
with a generation, committed offsets, the next producer id, and the transactions' records
with their versions (the core's ``TransactionStore``, brokers/core/transactions). ``view()``
is the ``ClusterView`` the core reads; ``snapshot()``/``restore()`` the state Raft's log
compaction keeps in place of the records.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from brokers.core.coordinator import (
    BrokerInfo,
    ClusterView,
    MemberRecord,
    OffsetAndMetadata,
    PartitionState,
    TopicInfo,
    TopicPartition,
    validate_topic_name,
)
from brokers.core.errors import KafkaError
from brokers.core.transactions.coordinator import NO_VERSION, placement_key
from brokers.raft_broker.metadata.records import (
    NO_LEADER,
    AddPartitions,
    AllocateProducerIds,
    ChangePartition,
    CommitOffsets,
    CreateTopic,
    DeleteOffsets,
    DeleteTopic,
    FenceBroker,
    PartitionInit,
    Record,
    RecordDecodeError,
    RecordOwners,
    RegisterBroker,
    RegisterMember,
    SetTopicConfigs,
    TxnState,
    UnregisterBroker,
    UnregisterMember,
    decode_entry,
)

# The snapshot format; a snapshot of another version is refused, never guessed at.
# 2: the recent proposal tokens and their outcomes.
# 3: the index at which the live brokers last changed (version 2 restores it as the snapshot's
#    own index: offset writes decided before it are then refused, never wrongly applied).
# 4: the transactions' records (versions 2 and 3 restore none: no log before 4 wrote any).
SNAPSHOT_VERSION = 4
# How many proposals' tokens the image remembers with their outcome: a retry arriving after
# this many other tagged proposals were applied is applied again. A proposer retries for at
# most its request timeout (15 s), far fewer proposals than this at any rate measured here.
RECENT_TOKENS = 4096


@dataclass(frozen=True, slots=True)
class Outcome:
    """What applying one record did: ``applied``, or why not (``reason``). ``topic_id`` is the
    topic a CreateTopic made, ``first_producer_id`` the block an AllocateProducerIds gave,
    ``deleted`` the name of the topic a DeleteTopic removed (its data must go)."""

    applied: bool
    reason: str = ""
    topic_id: int | None = None
    first_producer_id: int | None = None
    deleted: str | None = None


@dataclass(slots=True)
class BrokerEntry:
    info: BrokerInfo
    epoch: int
    fenced: bool = True


@dataclass(slots=True)
class PartitionEntry:
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int = 0
    partition_epoch: int = 0


@dataclass(slots=True)
class TopicEntry:
    topic_id: int
    name: str
    partitions: list[PartitionEntry]
    configs: dict[str, str]
    config_version: int = 0
    token: str = ""  # its CreateTopic's


@dataclass(slots=True)
class GroupEntry:
    members: dict[str, MemberRecord] = field(default_factory=dict)
    owners: dict[TopicPartition, str] = field(default_factory=dict)
    # Bumped by every RecordOwners: commits decided at an older generation are fenced.
    generation: int = 0
    offsets: dict[TopicPartition, OffsetAndMetadata] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TxnEntry:
    """A transactional id's record as the core wrote it, and its version (records.TxnState):
    replaced whole by every write, never changed in place."""

    record: bytes
    version: int


def _partition(init: PartitionInit) -> PartitionEntry:
    return PartitionEntry(init.replicas, init.isr, init.leader)


def _valid_init(init: PartitionInit) -> bool:
    """A partition's first state is coherent: replicas distinct, ISR among them, the leader in
    the ISR (or none)."""
    replicas = set(init.replicas)
    return (bool(init.replicas) and len(replicas) == len(init.replicas)
            and set(init.isr) <= replicas
            and (init.leader == NO_LEADER or init.leader in init.isr))


class MetadataImage:
    def __init__(self) -> None:
        self.brokers: dict[int, BrokerEntry] = {}
        self.topics: dict[str, TopicEntry] = {}
        self.by_id: dict[int, str] = {}
        self.groups: dict[str, GroupEntry] = {}
        self.next_producer_id = 0
        self.transactions: dict[str, TxnEntry] = {}
        # The index of the last entry applied (0: none; Raft indexes start at 1).
        self.applied_index = 0
        # token -> outcome of the recent tagged proposals, oldest first (RECENT_TOKENS).
        self.recent: dict[str, Outcome] = {}
        # The index of the last record that changed the live (unfenced) brokers: the set that
        # places every group's coordinator (``group_coordinator``).
        self.live_changed_at = 0

    # --- applying ---------------------------------------------------------------------------
    def apply_entry(self, index: int, data: bytes) -> tuple[Record | None, Outcome]:
        """Apply the log entry committed at ``index``: a record (tagged or not), or a leader's
        empty entry. Deterministic on every broker, undecodable bytes included."""
        if not data:
            # A new leader's empty entry: nothing changes, but the image is now as of
            # ``index`` (a read barrier at that index waits for exactly this).
            self.applied_index = max(self.applied_index, index)
            return None, Outcome(True)
        try:
            token, record = decode_entry(data)
        except RecordDecodeError as exc:
            self.applied_index = max(self.applied_index, index)
            return None, Outcome(False, f"undecodable record: {exc}")
        return record, self.apply(index, record, token)

    def apply(self, index: int, record: Record, token: str = "") -> Outcome:
        """Apply the record committed at ``index`` (the next one: indexes only grow). A record
        tagged with a token seen recently is a proposer's retry: it is answered with the first
        copy's outcome and not applied again."""
        if index <= self.applied_index:
            return Outcome(False, f"index {index} already applied")
        self.applied_index = index
        if token:
            first = self.recent.get(token)
            if first is not None:
                return first
        outcome = _HANDLERS[type(record)](self, index, record)
        if token:
            # Without ``deleted``: the event happened once, with the first copy.
            self.recent[token] = replace(outcome, deleted=None)
            if len(self.recent) > RECENT_TOKENS:
                del self.recent[next(iter(self.recent))]
        return outcome

    def _register_broker(self, index: int, r: RegisterBroker) -> Outcome:
        # Fenced until the controller sees it caught up (KRaft unfences a broker once it has
        # replayed the log to its registration); its new epoch fences its earlier life.
        self.brokers[r.broker_id] = BrokerEntry(BrokerInfo(r.broker_id, r.host, r.port, r.rack),
                                                epoch=index)
        return Outcome(True)

    def _fence_broker(self, index: int, r: FenceBroker) -> Outcome:
        entry = self.brokers.get(r.broker_id)
        if entry is None or entry.epoch != r.epoch:
            return Outcome(False, f"broker {r.broker_id} is not registered at epoch {r.epoch}")
        if entry.fenced != r.fenced:
            self.live_changed_at = index
        entry.fenced = r.fenced
        return Outcome(True)

    def _unregister_broker(self, index: int, r: UnregisterBroker) -> Outcome:
        entry = self.brokers.get(r.broker_id)
        if entry is None or entry.epoch != r.epoch:
            return Outcome(False, f"broker {r.broker_id} is not registered at epoch {r.epoch}")
        if not entry.fenced:
            self.live_changed_at = index
        del self.brokers[r.broker_id]
        return Outcome(True)

    def _create_topic(self, index: int, r: CreateTopic) -> Outcome:
        if r.name in self.topics:
            return Outcome(False, f"topic {r.name!r} already exists")
        try:
            validate_topic_name(r.name)  # a name no broker would decide never enters the image
        except KafkaError as exc:
            return Outcome(False, str(exc))
        if not r.partitions or not all(_valid_init(p) for p in r.partitions):
            return Outcome(False, "incoherent partition states")
        self.topics[r.name] = TopicEntry(index, r.name, [_partition(p) for p in r.partitions],
                                         dict(r.configs), token=r.token)
        self.by_id[index] = r.name
        return Outcome(True, topic_id=index)

    def _topic(self, topic_id: int) -> TopicEntry | None:
        name = self.by_id.get(topic_id)
        return None if name is None else self.topics[name]

    def _add_partitions(self, index: int, r: AddPartitions) -> Outcome:
        topic = self._topic(r.topic_id)
        if topic is None:
            return Outcome(False, f"no topic of id {r.topic_id}")
        if len(topic.partitions) != r.first:
            return Outcome(False, f"topic {topic.name!r} has {len(topic.partitions)} "
                                  f"partitions, not {r.first}")
        if not r.partitions or not all(_valid_init(p) for p in r.partitions):
            return Outcome(False, "incoherent partition states")
        topic.partitions.extend(_partition(p) for p in r.partitions)
        return Outcome(True, topic_id=r.topic_id)

    def _change_partition(self, index: int, r: ChangePartition) -> Outcome:
        topic = self._topic(r.topic_id)
        if topic is None or not 0 <= r.partition < len(topic.partitions):
            return Outcome(False, f"no partition {r.partition} of topic id {r.topic_id}")
        p = topic.partitions[r.partition]
        if p.partition_epoch != r.partition_epoch:
            return Outcome(False, f"partition epoch {p.partition_epoch}, not {r.partition_epoch}")
        if not set(r.isr) <= set(p.replicas) or (r.leader != NO_LEADER and r.leader not in r.isr):
            return Outcome(False, "the leader must be in the ISR, the ISR among the replicas")
        joining = set(r.isr) - set(p.isr)
        if any(b not in self.brokers or self.brokers[b].fenced for b in joining):
            # KRaft's INELIGIBLE_REPLICA: a fenced broker may leave an ISR, never join one.
            return Outcome(False, f"brokers {sorted(joining)} may not join the ISR: fenced or "
                                  "unregistered")
        p.leader = r.leader
        p.isr = tuple(b for b in p.replicas if b in set(r.isr))
        p.partition_epoch += 1
        if r.new_leader_epoch:
            p.leader_epoch += 1
        return Outcome(True, topic_id=r.topic_id)

    def _set_topic_configs(self, index: int, r: SetTopicConfigs) -> Outcome:
        topic = self._topic(r.topic_id)
        if topic is None:
            return Outcome(False, f"no topic of id {r.topic_id}")
        if topic.config_version != r.version:
            return Outcome(False, f"configs at version {topic.config_version}, not {r.version}")
        topic.configs = dict(r.configs)
        topic.config_version += 1
        return Outcome(True, topic_id=r.topic_id)

    def _delete_topic(self, index: int, r: DeleteTopic) -> Outcome:
        name = self.by_id.pop(r.topic_id, None)
        if name is None:
            return Outcome(False, f"no topic of id {r.topic_id}")
        del self.topics[name]
        # Its committed offsets go with it, as the seam's delete_topic says.
        for group in self.groups.values():
            for tp in [tp for tp in group.offsets if tp.topic == name]:
                del group.offsets[tp]
        return Outcome(True, topic_id=r.topic_id, deleted=name)

    def _group(self, name: str) -> GroupEntry:
        return self.groups.setdefault(name, GroupEntry())

    def _register_member(self, index: int, r: RegisterMember) -> Outcome:
        self._group(r.group).members[r.member_id] = MemberRecord(r.member_id, r.client_id,
                                                                 r.client_host)
        return Outcome(True)

    def _unregister_member(self, index: int, r: UnregisterMember) -> Outcome:
        group = self.groups.get(r.group)
        if group is not None:
            group.members.pop(r.member_id, None)
        return Outcome(True)

    def _record_owners(self, index: int, r: RecordOwners) -> Outcome:
        group = self._group(r.group)
        group.owners = {TopicPartition(o.topic, o.partition): o.member_id for o in r.owners}
        group.generation += 1
        return Outcome(True)

    def _lost_group(self, group: str, proposer: int, decided_at: int, what: str = "") -> str:
        """Why ``proposer`` may not write ``group``'s offsets any more ("" if it may): it no
        longer coordinates the group, or it may have lost it and won it back since it decided
        (the live brokers changed), so another coordinator may have written meanwhile. The
        second test refuses some writes that were safe; their client hears NOT_COORDINATOR and
        retries, as a Kafka client does when the offsets partition moves. ``what``: how the
        reason names the key (a transactional id is placed on a key of its own)."""
        if proposer < 0:
            return ""
        coordinator = self.group_coordinator(group)
        if coordinator != proposer:
            return (f"broker {proposer} no longer coordinates {what or f'group {group!r}'} "
                    f"(broker {coordinator} does)")
        if self.live_changed_at > decided_at:
            return (f"the live brokers changed at index {self.live_changed_at}, after broker "
                    f"{proposer} decided at {decided_at}")
        return ""

    def group_coordinator(self, group: str) -> int | None:
        """The broker coordinating ``group``: one of the live brokers, picked by the group's
        crc32 (not hash(): str hashes are salted per process, and every broker must agree)."""
        live = self.live_brokers()
        return live[zlib.crc32(group.encode("utf-8")) % len(live)] if live else None

    def _commit_offsets(self, index: int, r: CommitOffsets) -> Outcome:
        lost = self._lost_group(r.group, r.proposer, r.decided_at)
        if lost:
            return Outcome(False, lost)
        group = self._group(r.group)
        if r.generation >= 0 and r.generation != group.generation:
            return Outcome(False, f"group {r.group!r} is at generation {group.generation}, "
                                  f"the commit was decided at {r.generation}")
        for c in r.offsets:
            group.offsets[TopicPartition(c.topic, c.partition)] = OffsetAndMetadata(
                c.offset, c.metadata, c.leader_epoch, c.commit_timestamp_ms)
        return Outcome(True)

    def _delete_offsets(self, index: int, r: DeleteOffsets) -> Outcome:
        lost = self._lost_group(r.group, r.proposer, r.decided_at)
        if lost:
            return Outcome(False, lost)
        group = self.groups.get(r.group)
        if group is not None:
            if r.partitions is None:
                group.offsets.clear()
            else:
                for t, p in r.partitions:
                    group.offsets.pop(TopicPartition(t, p), None)
        return Outcome(True)

    def _allocate_producer_ids(self, index: int, r: AllocateProducerIds) -> Outcome:
        first = self.next_producer_id
        self.next_producer_id += r.size
        return Outcome(True, first_producer_id=first)

    def _txn_state(self, index: int, r: TxnState) -> Outcome:
        # Fenced as offsets are, then compared: both in the state machine, so every replica
        # refuses the same write at the same index and no two coordinators both succeed from
        # one version.
        tid = r.transactional_id
        lost = self._lost_group(placement_key(tid), r.proposer, r.decided_at,
                                f"transactional id {tid!r}")
        if lost:
            return Outcome(False, lost)
        entry = self.transactions.get(tid)
        stored = NO_VERSION if entry is None else entry.version
        if stored != r.version:
            return Outcome(False, f"transactional id {tid!r} is at version {stored}, the write "
                                  f"was decided at {r.version}")
        self.transactions[tid] = TxnEntry(r.record, r.version + 1)
        return Outcome(True)

    # --- reading ----------------------------------------------------------------------------
    def live_brokers(self) -> list[int]:
        """Registered, unfenced brokers, by id."""
        return sorted(b for b, e in self.brokers.items() if not e.fenced)

    def view(self, controller_id: int, cluster_id: str = "twinbench") -> ClusterView:
        """The ``ClusterView`` of this image: unfenced brokers only (a fenced one is not
        served to clients, as KRaft leaves it out of Metadata)."""
        brokers = tuple(self.brokers[b].info for b in self.live_brokers())
        topics = {name: TopicInfo(name, tuple(
            PartitionState(name, i, p.leader, p.leader_epoch, p.replicas, p.isr)
            for i, p in enumerate(t.partitions)), dict(t.configs))
            for name, t in self.topics.items()}
        return ClusterView(brokers, controller_id, topics, cluster_id)

    # --- snapshots --------------------------------------------------------------------------
    def snapshot(self) -> bytes:
        """The whole image, as Raft's snapshot data (what compaction keeps of the records)."""
        doc: dict[str, Any] = {
            "version": SNAPSHOT_VERSION,
            "applied_index": self.applied_index,
            "next_producer_id": self.next_producer_id,
            "brokers": [[e.info.node_id, e.info.host, e.info.port, e.info.rack, e.epoch,
                         e.fenced] for _, e in sorted(self.brokers.items())],
            "topics": [[t.topic_id, t.name, sorted(t.configs.items()), t.config_version,
                        [[list(p.replicas), list(p.isr), p.leader, p.leader_epoch,
                          p.partition_epoch] for p in t.partitions], t.token]
                       for _, t in sorted(self.topics.items())],
            "groups": [[name, g.generation,
                        [[m.member_id, m.client_id, m.client_host]
                         for _, m in sorted(g.members.items())],
                        [[tp.topic, tp.partition, o] for tp, o in sorted(g.owners.items())],
                        [[tp.topic, tp.partition, o.offset, o.metadata, o.leader_epoch,
                          o.commit_timestamp_ms] for tp, o in sorted(g.offsets.items())]]
                       for name, g in sorted(self.groups.items())],
            "recent": [[token, o.applied, o.reason, o.topic_id, o.first_producer_id]
                       for token, o in self.recent.items()],
            "live_changed_at": self.live_changed_at,
            # Latin-1: any bytes as a JSON string, one code point each (records._plain).
            "transactions": [[tid, e.record.decode("latin-1"), e.version]
                             for tid, e in sorted(self.transactions.items())],
        }
        return json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode()

    @classmethod
    def restore(cls, data: bytes) -> MetadataImage:
        """The image a ``snapshot()`` holds; ValueError for anything else."""
        try:
            doc = json.loads(data)
            version = doc.get("version")
            if version not in (2, 3, SNAPSHOT_VERSION):
                raise ValueError(f"snapshot version {version!r}, expected {SNAPSHOT_VERSION}")
            image = cls()
            image.applied_index = int(doc["applied_index"])
            image.live_changed_at = int(doc["live_changed_at"] if version >= 3
                                        else image.applied_index)
            image.next_producer_id = int(doc["next_producer_id"])
            for node_id, host, port, rack, epoch, fenced in doc["brokers"]:
                image.brokers[node_id] = BrokerEntry(BrokerInfo(node_id, host, port, rack),
                                                     epoch, bool(fenced))
            for topic_id, name, configs, config_version, parts, token in doc["topics"]:
                image.topics[name] = TopicEntry(
                    topic_id, name,
                    [PartitionEntry(tuple(r), tuple(i), leader, le, pe)
                     for r, i, leader, le, pe in parts],
                    {k: v for k, v in configs}, config_version, str(token))
                image.by_id[topic_id] = name
            for name, generation, members, owners, offsets in doc["groups"]:
                image.groups[name] = GroupEntry(
                    {m: MemberRecord(m, c, h) for m, c, h in members},
                    {TopicPartition(t, p): o for t, p, o in owners}, generation,
                    {TopicPartition(t, p): OffsetAndMetadata(off, md, le, ts)
                     for t, p, off, md, le, ts in offsets})
            for token, applied, reason, topic_id, first_pid in doc["recent"]:
                image.recent[str(token)] = Outcome(bool(applied), str(reason), topic_id,
                                                   first_pid)
            for tid, record, txn_version in doc["transactions"] if version >= 4 else ():
                if not isinstance(record, str):  # str() would turn anything into bytes
                    raise ValueError(f"transaction record {record!r}")
                image.transactions[str(tid)] = TxnEntry(record.encode("latin-1"),
                                                        int(txn_version))
            return image
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ValueError(f"not a metadata snapshot: {exc}") from None


_HANDLERS: Mapping[type, Any] = {
    RegisterBroker: MetadataImage._register_broker,
    FenceBroker: MetadataImage._fence_broker,
    UnregisterBroker: MetadataImage._unregister_broker,
    CreateTopic: MetadataImage._create_topic,
    AddPartitions: MetadataImage._add_partitions,
    ChangePartition: MetadataImage._change_partition,
    SetTopicConfigs: MetadataImage._set_topic_configs,
    DeleteTopic: MetadataImage._delete_topic,
    RegisterMember: MetadataImage._register_member,
    UnregisterMember: MetadataImage._unregister_member,
    RecordOwners: MetadataImage._record_owners,
    CommitOffsets: MetadataImage._commit_offsets,
    DeleteOffsets: MetadataImage._delete_offsets,
    AllocateProducerIds: MetadataImage._allocate_producer_ids,
    TxnState: MetadataImage._txn_state,
}
