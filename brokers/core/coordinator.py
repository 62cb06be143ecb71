"""The Coordinator seam: the only place where the two broker architectures differ.

Everything the broker core knows about the rest of the cluster comes through this Protocol:
membership and liveness, the controller, topic -> partition -> leader/epoch, topic creation, the
placement of group coordinators, the group membership/ownership registries, committed offsets,
producer-id allocation, and change notifications. Three implementations exist:

* ``brokers.core.local_coordinator.LocalCoordinator``: a single node, tables in the broker,
  offsets durable in a local file (the baseline and the null-sink benchmark).
* ``brokers.zk_broker``: tables in a real ZooKeeper, reached through kazoo.
* ``brokers.dsbs_broker``: tables embedded in every broker, spread by UDP gossip.

Conventions every implementation follows:

* ``cluster()`` is synchronous and cheap (a snapshot of a cache); request handlers call it freely.
* ``partition_state(..., fresh=True)`` consults the authoritative store (the ``per_request``
  metadata policy); with ``fresh=False`` it answers from the cache. Either way it returns None for
  a partition that does not exist.
* Coroutines raise ``KafkaError`` subclasses from ``brokers.core.errors`` for conditions a
  client must see (``TopicAlreadyExists``, ``CoordinatorNotAvailable``, ...); the handler puts
  the code on the wire.
* ``create_topic`` returns only once this broker's own ``cluster()`` view shows the topic with a
  leader for every partition, so a Metadata request right after a CreateTopics sees it. A
  topic, once created, is never replaced by a concurrent creation of the same name elsewhere:
  the later creation gets ``TopicAlreadyExists`` (an auto-creation then uses the topic).
* A topic's partition count only grows (``create_partitions``); no view a broker serves ever
  shows a topic with fewer partitions than it showed before (short of the topic's deletion).
* A deleted topic's data goes only on positive evidence of its deletion: the coordinator calls
  its ``on_topic_deleted`` listeners when the authoritative store says the topic was deleted
  (or replaced by a new topic of the same name), synchronously, before any view without it
  is served; a topic merely absent from a view (a cache not yet filled, a store out of
  reach) never deletes anything.
* Replication factors other than 1 are refused (``validate_replication_factor``) by an
  architecture whose coordinator does not also implement ``IsrChanges``
  (brokers/core/isr_changes.py): no client is told its data is replicated when it is not.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol, runtime_checkable

from brokers.core.counters import CoordinatorCounters
from brokers.core.errors import (
    InvalidReplicaAssignment,
    InvalidReplicationFactor,
    InvalidTopic,
)

NO_LEADER = -1

# Kafka's topic-name rule: 1..249 of [a-zA-Z0-9._-], and not "." or "..". It is also what makes
# a topic name safe as a directory name and as one znode path segment.
_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]{1,249}")


def validate_topic_name(name: str) -> None:
    """Raise InvalidTopic unless ``name`` is a legal Kafka topic name."""
    if name in (".", "..") or not _TOPIC_NAME.fullmatch(name):
        raise InvalidTopic(f"illegal topic name {name!r}: use 1-249 of [a-zA-Z0-9._-]")


# Shown to clients (CreateTopics error_message) whenever a replication factor is refused.
REPLICATION_NOT_IMPLEMENTED = "replication is not implemented; replication factor must be 1"


def validate_replication_factor(replication_factor: int, *, replicates: bool = False) -> int:
    """The replication factor a new topic gets: -1 (the broker default) means 1. Anything else
    but 1 raises InvalidReplicationFactor saying why, unless the architecture ``replicates``
    (its coordinator implements ``brokers.core.isr_changes.IsrChanges``); then any factor
    from 1 up is taken (whether enough brokers live is the coordinator's to say)."""
    if replication_factor in (-1, 1):
        return 1
    if replicates and replication_factor > 1:
        return replication_factor
    if replicates:
        raise InvalidReplicationFactor(
            f"replication factor must be at least 1, got {replication_factor}")
    raise InvalidReplicationFactor(
        f"replication factor {replication_factor} refused: {REPLICATION_NOT_IMPLEMENTED}")


# A manual replica assignment: partition -> its replicas, the first the preferred leader.
Assignment = Mapping[int, tuple[int, ...]]


def validate_replica_assignment(
    assignment: Mapping[int, Sequence[int]], brokers: Collection[int], *,
    replicates: bool = False,
) -> dict[int, tuple[int, ...]]:
    """A CreateTopics manual assignment, checked as Kafka 2.8's AdminZkClient checks it:
    partitions 0..n-1, each with the same number of distinct replicas, every one a broker of
    the cluster (INVALID_REPLICA_ASSIGNMENT otherwise); then the replication factor it implies
    passes ``validate_replication_factor`` (``replicates``: the architecture replicates). The
    one place both twins check an assignment."""
    if not assignment:
        raise InvalidReplicaAssignment("the replica assignment names no partitions")
    if sorted(assignment) != list(range(len(assignment))):
        raise InvalidReplicaAssignment(
            f"partitions {sorted(assignment)} are not a 0-based consecutive sequence")
    sizes = {len(r) for r in assignment.values()}
    if len(sizes) != 1:
        raise InvalidReplicaAssignment("all partitions must have the same number of replicas")
    if 0 in sizes:
        raise InvalidReplicaAssignment("a partition has no replicas")
    for p, replicas in sorted(assignment.items()):
        if len(set(replicas)) != len(replicas):
            raise InvalidReplicaAssignment(f"partition {p} names a broker twice: {replicas}")
    unknown = sorted({b for r in assignment.values() for b in r} - set(brokers))
    if unknown:
        raise InvalidReplicaAssignment(f"unknown broker(s) {unknown} in the replica assignment")
    validate_replication_factor(sizes.pop(), replicates=replicates)
    return {p: tuple(r) for p, r in sorted(assignment.items())}


class TopicPartition(NamedTuple):
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class BrokerInfo:
    node_id: int
    host: str
    port: int
    rack: str | None = None


@dataclass(frozen=True, slots=True)
class PartitionState:
    topic: str
    partition: int
    leader: int  # NO_LEADER when no live broker leads it (clients get LEADER_NOT_AVAILABLE)
    leader_epoch: int  # bumped every time the leader changes
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class TopicInfo:
    name: str
    partitions: tuple[PartitionState, ...]  # indexed by partition number
    configs: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ClusterView:
    """A consistent snapshot of what this broker believes about the cluster."""

    brokers: tuple[BrokerInfo, ...]
    controller_id: int  # NO_LEADER while no controller is known
    topics: Mapping[str, TopicInfo]
    cluster_id: str = "twinbench"

    def partition(self, topic: str, partition: int) -> PartitionState | None:
        """The state of one partition, or None when the topic or partition does not exist."""
        info = self.topics.get(topic)
        if info is None or not 0 <= partition < len(info.partitions):
            return None
        return info.partitions[partition]

    def broker(self, node_id: int) -> BrokerInfo | None:
        for b in self.brokers:
            if b.node_id == node_id:
                return b
        return None


@dataclass(frozen=True, slots=True)
class OffsetAndMetadata:
    offset: int
    metadata: str | None = ""
    leader_epoch: int = -1
    commit_timestamp_ms: int = -1


@dataclass(frozen=True, slots=True)
class MemberRecord:
    """What the membership registry stores for one consumer-group member."""

    member_id: str
    client_id: str
    client_host: str


# A topic's new configs as a function of its current ones (``Coordinator.alter_topic_configs``).
ConfigChange = Callable[[Mapping[str, str]], dict[str, str]]


@runtime_checkable
class Coordinator(Protocol):
    """What the broker core needs from its coordination architecture."""

    @property
    def node_id(self) -> int: ...

    @property
    def view_is_store(self) -> bool:
        """True when ``cluster()`` reads the authoritative store itself rather than a copy
        that can lag it (DSBS's own tables, the single node's): a ``per_request`` check is
        then answered from the view, synchronously, with the same answer
        ``partition_state(fresh=True)`` would give. False for ZooKeeper, whose view is a
        watch-fed copy."""

    async def start(self, me: BrokerInfo) -> None:
        """Join the cluster as ``me`` and fill the cache; return once ``cluster()`` is usable."""

    async def close(self) -> None:
        """Leave the cluster (deregister) and release every resource; idempotent."""

    # --- metadata ---------------------------------------------------------------------------
    def cluster(self) -> ClusterView:
        """The cached view: brokers, controller, topics. Never blocks."""

    async def partition_state(
        self, topic: str, partition: int, *, fresh: bool
    ) -> PartitionState | None:
        """Leader and epoch of one partition; ``fresh`` asks the authoritative store."""

    async def create_topic(
        self,
        name: str,
        num_partitions: int,
        replication_factor: int,
        configs: Mapping[str, str] | None = None,
        *,
        auto: bool = False,
    ) -> TopicInfo:
        """Create a topic; raises TopicAlreadyExists, InvalidPartitions, ...

        ``auto``: an auto-creation by a Metadata request rather than a CreateTopics. Callers
        treat TopicAlreadyExists as success then; DSBS ranks explicit creations above it."""

    async def create_topic_assigned(
        self, name: str, assignment: Assignment, configs: Mapping[str, str] | None = None
    ) -> TopicInfo:
        """As ``create_topic`` (an explicit creation), the partitions on the replicas
        ``assignment`` names (already checked by ``validate_replica_assignment``)."""

    async def create_partitions(self, topic: str, total: int) -> TopicInfo:
        """Grow ``topic`` to ``total`` partitions; existing partitions keep their replicas and
        data. Raises UnknownTopicOrPartition, or InvalidPartitions when ``total`` is not larger
        than the current count (also when a concurrent increase got there first). Returns once
        this broker's own view shows every new partition with a leader."""

    async def alter_topic_configs(self, topic: str, change: ConfigChange) -> TopicInfo:
        """Set ``topic``'s configs to ``change(current)``, ``current`` read from the
        authoritative store (so an incremental change applies to the latest values); a
        KafkaError from ``change`` (validation) propagates. Raises UnknownTopicOrPartition.
        Returns once this broker's own view shows the new configs; every broker's follows."""

    async def delete_topic(self, topic: str) -> None:
        """Delete ``topic`` and the offsets committed for it. Raises UnknownTopicOrPartition
        when no such topic exists (also when a deletion already removed it); a deletion
        already under way is joined. Returns once this broker's own view no longer shows the
        topic; every broker's follows, each dropping its partitions on its deletion event."""

    def on_topic_deleted(self, listener: Callable[[str], None]) -> None:
        """Call ``listener(topic)`` (synchronously, on the loop) on every deletion event: the
        topic's data held here must go. Called before any view without the topic, or with a
        new topic of that name, is served; never because a topic is missing from a view."""

    def subscribe(self, listener: Callable[[ClusterView], None]) -> None:
        """Call ``listener`` (on the event loop) with the new view after every change."""

    # --- groups -----------------------------------------------------------------------------
    def group_coordinator(self, group_id: str) -> BrokerInfo:
        """The broker coordinating ``group_id``; raises CoordinatorNotAvailable if none."""

    def coordination_epoch(self, group_id: str) -> int:
        """A number that changes whenever this broker's hold on ``group_id`` may have lapsed
        since it was last asked: the brokers that place groups changed (a broker left or came
        back, this one included). The core forgets what it keeps of the group in memory
        (members, generation) when it changes, as Kafka unloads a group whose offsets
        partition it stopped leading: a member of the old hold must rejoin, not commit under a
        generation the group's next coordinators never saw. Changing too often costs a
        rebalance, never correctness."""

    async def register_member(self, group_id: str, member: MemberRecord) -> None:
        """Record a member in the membership registry (ZK: /consumers/<g>/ids/<m>)."""

    async def unregister_member(self, group_id: str, member_id: str) -> None:
        """Remove a member from the membership registry; absent members are fine."""

    async def record_owners(
        self, group_id: str, owners: Mapping[TopicPartition, str]
    ) -> None:
        """Replace the group's partition -> owning member registry after a rebalance."""

    async def commit_offsets(
        self, group_id: str, offsets: Mapping[TopicPartition, OffsetAndMetadata]
    ) -> None:
        """Store committed offsets durably (ZK: /consumers/<g>/offsets/<t>/<p>)."""

    async def fetch_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition] | None
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        """Committed offsets of ``partitions`` (all of the group's when None); absent = missing."""

    async def delete_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition] | None
    ) -> None:
        """Remove committed offsets (every one of the group's when None), in order after the
        commits issued before; absent ones are fine. Later fetches do not return them."""

    # --- misc -------------------------------------------------------------------------------
    async def allocate_producer_id(self) -> int:
        """A producer id unique across the cluster and across restarts."""

    def counters(self) -> CoordinatorCounters:
        """A snapshot of the coordination cost so far: an instance of this architecture's
        ``CoordinatorCounters`` subclass (brokers/core/counters.py), for run logs."""
