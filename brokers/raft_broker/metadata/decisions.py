"""What the Raft twin's controller decides: metadata records from the image it has applied.

The quorum's leader is the controller (KRaft's active controller). It reads its own
``MetadataImage``, decides, and proposes records; the quorum orders them, and every broker
applies them. Nothing here proposes or waits: each function is pure, the image in and the
records out, so the controller's rules are unit-tested without a quorum. A decision taken on
an image that has moved on by the time its record commits is harmless: its record carries
the epoch or version it was decided on, and the image rejects it (image.py); the controller
decides again on the newer image.

The rules are the zk twin controller's (brokers/core/placement.py): replicas placed round
robin over the live brokers from the lowest id, the first live replica of the ISR leading, a
dead broker leaving every ISR at once, no unclean election unless asked. Live means registered
and unfenced: the controller fences a broker whose heartbeats stopped for ``session_timeout_s``
(KRaft's broker.session.timeout.ms) and unfences it once it heartbeats again having applied
the log up to its own registration (``BrokerSessions``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from brokers.core.coordinator import (
    Assignment,
    ConfigChange,
    validate_replication_factor,
    validate_topic_name,
)
from brokers.core.errors import (
    InvalidPartitions,
    InvalidRequest,
    TopicAlreadyExists,
    UnknownTopicOrPartition,
)
from brokers.core.isr_changes import checked_isr
from brokers.core.placement import Leadership, assign_replicas, next_leadership
from brokers.raft_broker.metadata.image import MetadataImage, PartitionEntry, TopicEntry
from brokers.raft_broker.metadata.records import (
    AddPartitions,
    ChangePartition,
    CreateTopic,
    DeleteTopic,
    FenceBroker,
    PartitionInit,
    Record,
    SetTopicConfigs,
)


def _first_state(replicas: tuple[int, ...], live: set[int]) -> PartitionInit:
    first = next_leadership(replicas, live, None)
    assert first is not None  # a partition without state always gets one
    return PartitionInit(replicas, first.isr, first.leader)


def create_topic(image: MetadataImage, name: str, num_partitions: int,
                 replication_factor: int, configs: Mapping[str, str] | None = None,
                 assignment: Assignment | None = None, token: str = "") -> CreateTopic:
    """The record creating ``name``; raises what CreateTopics answers (InvalidTopic,
    TopicAlreadyExists, InvalidPartitions, InvalidReplicationFactor). ``assignment``: the
    replicas a CreateTopics named (validated by the caller), else round robin over the
    live brokers. ``token``: the proposer's mark of this creation (records.CreateTopic)."""
    validate_topic_name(name)
    if name in image.topics:
        raise TopicAlreadyExists(f"topic {name!r} already exists")
    live = image.live_brokers()
    if assignment is None:
        rf = validate_replication_factor(replication_factor, replicates=True)
        assignment = assign_replicas(num_partitions, rf, live)
    alive = set(live)
    parts = tuple(_first_state(tuple(assignment[p]), alive) for p in sorted(assignment))
    return CreateTopic(name, parts, tuple(sorted((configs or {}).items())), token)


def _topic(image: MetadataImage, name: str) -> TopicEntry:
    topic = image.topics.get(name)
    if topic is None:
        raise UnknownTopicOrPartition(f"no topic {name!r}")
    return topic


def add_partitions(image: MetadataImage, name: str, total: int) -> AddPartitions:
    """The record growing ``name`` to ``total`` partitions, the new ones placed as a new
    topic's would be, continuing the round robin."""
    topic = _topic(image, name)
    have = len(topic.partitions)
    if total <= have:
        raise InvalidPartitions(f"topic {name!r} has {have} partitions; asked for {total}")
    rf = len(topic.partitions[0].replicas)
    placed = assign_replicas(total, rf, image.live_brokers())
    alive = set(image.live_brokers())
    return AddPartitions(topic.topic_id, have,
                         tuple(_first_state(placed[p], alive) for p in range(have, total)))


def set_topic_configs(image: MetadataImage, name: str, change: ConfigChange
                      ) -> SetTopicConfigs:
    """The record replacing ``name``'s configs with ``change(current)`` (its KafkaError, a
    validation, propagates), decided on the configs' current version."""
    topic = _topic(image, name)
    new = change(dict(topic.configs))
    return SetTopicConfigs(topic.topic_id, topic.config_version, tuple(sorted(new.items())))


def delete_topic(image: MetadataImage, name: str) -> DeleteTopic:
    return DeleteTopic(_topic(image, name).topic_id)


def _leadership(p: PartitionEntry) -> Leadership:
    return Leadership(p.leader, p.leader_epoch, p.isr)


def leadership_changes(image: MetadataImage, *, unclean: bool = False
                       ) -> list[ChangePartition]:
    """Every partition whose leadership is wrong for the live brokers, set right (level
    triggered, as the zk twin's controller: whatever happened, compare what is with what
    should be). Empty when everything holds."""
    live = set(image.live_brokers())
    out = []
    for topic in image.topics.values():
        for i, p in enumerate(topic.partitions):
            target = next_leadership(p.replicas, live, _leadership(p), unclean=unclean)
            if target is None:
                continue
            out.append(ChangePartition(topic.topic_id, i, p.partition_epoch, target.leader,
                                       target.isr, target.leader_epoch != p.leader_epoch))
    return out


def isr_change(image: MetadataImage, name: str, partition: int, me: int, leader_epoch: int,
               isr: Sequence[int]) -> ChangePartition:
    """A leader's new ISR (AlterPartition in KRaft), checked as every twin checks it
    (``brokers.core.isr_changes.checked_isr``): raises NotLeaderOrFollower,
    FencedLeaderEpoch, UnknownLeaderEpoch, InvalidRequest, UnknownTopicOrPartition."""
    topic = _topic(image, name)
    if not 0 <= partition < len(topic.partitions):
        raise UnknownTopicOrPartition(f"no partition {partition} of {name!r}")
    p = topic.partitions[partition]
    new = checked_isr(p.leader, p.leader_epoch, me, leader_epoch, isr, p.replicas)
    live = set(image.live_brokers())
    joining = sorted(b for b in new if b not in p.isr and b not in live)
    if joining:
        # KRaft's INELIGIBLE_REPLICA: a broker the controller fenced has stopped heartbeating
        # (or has not caught up since it registered); it may not count for acks=all.
        raise InvalidRequest(f"brokers {joining} are fenced: they may not join the ISR")
    return ChangePartition(topic.topic_id, partition, p.partition_epoch, p.leader, new, False)


@dataclass
class _Session:
    epoch: int
    last_heartbeat: float
    applied: int
    ended: bool = False  # the broker shut down in this epoch: nothing of it counts any more


class BrokerSessions:
    """The controller's view of broker liveness: heartbeats in, fencing records out.

    A controller taking office starts every registered broker's session afresh (it has no
    earlier heartbeat of any), as KRaft's does: a broker that died just before a controller
    change is fenced a whole session after the change, not before."""

    def __init__(self, session_timeout_s: float) -> None:
        self.session_timeout_s = session_timeout_s
        self._sessions: dict[int, _Session] = {}

    def take_office(self, image: MetadataImage, now: float) -> None:
        self._sessions = {b: _Session(e.epoch, now, 0) for b, e in image.brokers.items()}

    def heartbeat(self, broker_id: int, epoch: int, applied: int, now: float) -> None:
        """Broker ``broker_id`` of registration ``epoch`` is alive, having applied the log up
        to ``applied``. A heartbeat of an earlier life (an older epoch) is ignored."""
        s = self._sessions.get(broker_id)
        if s is not None and (epoch < s.epoch or (s.ended and epoch == s.epoch)):
            return
        self._sessions[broker_id] = _Session(epoch, now, max(applied, 0))

    def end(self, broker_id: int, epoch: int) -> None:
        """Broker ``broker_id`` is shutting down in ``epoch`` (it fenced itself): its session
        ends now, and a heartbeat of that epoch arriving late does not start it again; only a
        new registration does."""
        s = self._sessions.get(broker_id)
        if s is None or s.epoch <= epoch:
            self._sessions[broker_id] = _Session(epoch, float("-inf"), 0, ended=True)

    def decide(self, image: MetadataImage, now: float) -> list[Record]:
        """FenceBroker records: fence a live broker silent for a session; unfence a fenced one
        heartbeating in its current epoch that has applied its own registration."""
        out: list[Record] = []
        for broker_id, entry in sorted(image.brokers.items()):
            s = self._sessions.get(broker_id)
            fresh = (s is not None and s.epoch == entry.epoch
                     and now - s.last_heartbeat < self.session_timeout_s)
            if not entry.fenced and not fresh:
                out.append(FenceBroker(broker_id, entry.epoch, True))
            elif entry.fenced and fresh and s is not None and s.applied >= entry.epoch:
                out.append(FenceBroker(broker_id, entry.epoch, False))
        return out
