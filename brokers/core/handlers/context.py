"""What every handler can reach, and the leadership checks of the data path."""

from __future__ import annotations

from dataclasses import dataclass, field

from brokers.core.config import BrokerConfig
from brokers.core.coordinator import Coordinator, PartitionState
from brokers.core.errors import (
    CoordinatorNotAvailable,
    InvalidProducerEpoch,
    KafkaError,
    LeaderNotAvailable,
    NotCoordinator,
    NotLeaderOrFollower,
    ProducerFenced,
    UnknownTopicOrPartition,
)
from brokers.core.groups import GroupCoordinator
from brokers.core.logs import LogStore, stored_batch_headers
from brokers.core.notify import AppendNotifier
from brokers.core.producer_state import ProducerStates
from brokers.core.replication.manager import ReplicaManager
from brokers.core.topic_config import ProduceRules
from brokers.core.transactions.coordinator import TransactionCoordinator

# Leader epoch shown to clients (Metadata, ListOffsets) and stamped into stored batches. Clients
# that see epochs >= 0 start validating them with OffsetForLeaderEpoch (key 23), which we do not
# serve; -1 ("unknown") keeps every client on plain offsets. The coordinator's own epochs still
# fence leadership changes inside the cluster.
CLIENT_LEADER_EPOCH = -1


@dataclass(slots=True)
class BrokerContext:
    config: BrokerConfig
    coordinator: Coordinator
    store: LogStore
    groups: GroupCoordinator
    notifier: AppendNotifier
    # Idempotent producers' recent batches per partition (built from the log on first use).
    producers: ProducerStates = field(
        default_factory=lambda: ProducerStates(stored_batch_headers))
    # Leader and follower duties of the partitions with more than one replica (None: a broker
    # that never replicates, such as the null-sink benchmark's).
    replicas: ReplicaManager | None = None
    # The transaction coordinator (None: the architecture keeps no transaction records, its
    # Coordinator is not a ``TransactionStore``; transactional requests get
    # COORDINATOR_NOT_AVAILABLE).
    txn: TransactionCoordinator | None = None
    # The produce checks of the topics whose configs ask for any (brokers/core/topic_config.py,
    # ``ProduceRules``), rebuilt from the cluster view on every change; other topics are absent.
    topic_rules: dict[str, ProduceRules] = field(default_factory=dict)

    @property
    def node_id(self) -> int:
        return self.config.node_id

    def transactions(self) -> TransactionCoordinator:
        if self.txn is None:
            raise CoordinatorNotAvailable(
                "this architecture keeps no transaction state: transactions are not served")
        return self.txn

    @property
    def per_request(self) -> bool:
        """docs/architecture.md, fairness rule 2: ask the coordination store on every
        produce/fetch - over the network (the async path) unless the coordinator's view *is*
        the store, in which case the synchronous cached check already reads it
        (``Coordinator.view_is_store``)."""
        return (self.config.metadata_check == "per_request"
                and not self.coordinator.view_is_store)

    def cached_leader_check(self, topic: str, partition: int) -> KafkaError | None:
        """None when this broker leads the partition according to the cache."""
        state = self.coordinator.cluster().partition(topic, partition)
        if state is None:
            return UnknownTopicOrPartition(f"{topic}-{partition}")
        return self._leader_error(state)

    async def fresh_leader_check(self, topic: str, partition: int) -> KafkaError | None:
        """The same question asked of the authoritative store (the per_request policy)."""
        try:
            state = await self.coordinator.partition_state(topic, partition, fresh=True)
        except KafkaError as exc:
            return exc
        if state is None:
            return UnknownTopicOrPartition(f"{topic}-{partition}")
        return self._leader_error(state)

    def not_group_coordinator(self, group_id: str) -> KafkaError | None:
        """None when this broker coordinates ``group_id``; else the error a client must see."""
        try:
            owner = self.coordinator.group_coordinator(group_id)
        except KafkaError as exc:
            return exc
        if owner.node_id != self.config.node_id:
            return NotCoordinator(f"group {group_id!r} is coordinated by broker {owner.node_id}")
        return None

    def cached_leader_state(self, topic: str, partition: int) -> tuple[KafkaError | None, int]:
        """``cached_leader_check`` and the partition's replica count (0: unknown)."""
        state = self.coordinator.cluster().partition(topic, partition)
        if state is None:
            return UnknownTopicOrPartition(f"{topic}-{partition}"), 0
        return self._leader_error(state), len(state.replicas)

    async def fresh_leader_state(self, topic: str, partition: int
                                 ) -> tuple[KafkaError | None, int]:
        """``fresh_leader_check`` and the partition's replica count as the store has it."""
        try:
            state = await self.coordinator.partition_state(topic, partition, fresh=True)
        except KafkaError as exc:
            return exc, 0
        if state is None:
            return UnknownTopicOrPartition(f"{topic}-{partition}"), 0
        return self._leader_error(state), len(state.replicas)

    def _leader_error(self, state: PartitionState) -> KafkaError | None:
        if state.leader == self.config.node_id:
            return None
        if state.leader < 0:
            return LeaderNotAvailable(f"{state.topic}-{state.partition} has no live leader")
        return NotLeaderOrFollower(f"{state.topic}-{state.partition} is led by {state.leader}")


def fenced_code(exc: KafkaError, api_version: int, first_fenced_version: int) -> int:
    """PRODUCER_FENCED came with KIP-588 (Kafka 2.7): a request older than the version that
    introduced it hears INVALID_PRODUCER_EPOCH instead, as Kafka answers it."""
    if isinstance(exc, ProducerFenced) and api_version < first_fenced_version:
        return InvalidProducerEpoch.code
    return exc.code


@dataclass(frozen=True, slots=True)
class Call:
    """What a handler may know about the request beyond its body."""

    api_version: int
    client_id: str | None
    peer: str  # "host:port" of the client, for membership records and log lines
