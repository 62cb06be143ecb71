"""IsrWriter: a partition leader shrinks or expands its ISR in ZooKeeper (Kafka 0.8's way).

The leader rewrites ``/brokers/topics/<t>/partitions/<p>/state`` itself, conditionally on the
znode version it just read, and only while that state still names it as leader in the epoch it
leads (``isr_change``, pure). A write that loses to the controller (a new leader, a dead broker
removed) is decided again on the new state; one that finds another leader or epoch is refused,
and the broker's replica manager follows the view instead. Every broker's watch on the znode
brings the new ISR to its view, so the controller elects only from what the store lists.
"""

from __future__ import annotations

from collections.abc import Sequence

from kazoo.exceptions import BadVersionError, NoNodeError

from brokers.core.coordinator import PartitionState, TopicPartition
from brokers.core.errors import CoordinatorNotAvailable, UnknownTopicOrPartition
from brokers.core.isr_changes import checked_isr
from brokers.zk_broker.cache import CachedState, MetadataCache
from brokers.zk_broker.paths import LeaderAndIsr, ZkPaths
from brokers.zk_broker.session import UNAVAILABLE, ZkSession


def isr_change(
    current: LeaderAndIsr, me: int, leader_epoch: int, isr: Sequence[int],
    replicas: Sequence[int],
) -> LeaderAndIsr:
    """The state to write when broker ``me``, leading in ``leader_epoch``, asks for ``isr``;
    raises when the stored state says it may not. The ISR is kept in replica order."""
    return LeaderAndIsr(me, leader_epoch, checked_isr(current.leader, current.leader_epoch, me,
                                                      leader_epoch, isr, replicas),
                        current.controller_epoch)


class IsrWriter:
    def __init__(self, session: ZkSession, paths: ZkPaths, cache: MetadataCache,
                 node_id: int) -> None:
        self._session = session
        self._paths = paths
        self._cache = cache
        self._node_id = node_id
        self.writes = 0  # ISR changes written (for counters and tests)

    async def change(self, topic: str, partition: int, leader_epoch: int,
                     isr: Sequence[int]) -> PartitionState:
        tp = TopicPartition(topic, partition)
        replicas = self._cache.assignments().get(topic, {}).get(partition)
        if replicas is None:
            raise UnknownTopicOrPartition(f"{topic}-{partition}")
        path = self._paths.partition_state(topic, partition)
        b = self._session.bridge
        while True:  # until the conditional write lands or the state refuses it
            try:
                data, stat = await b.call("get", path)
                target = isr_change(LeaderAndIsr.decode(data), self._node_id, leader_epoch,
                                    isr, replicas)
                written = await b.call("set", path, target.encode(), version=stat.version)
            except BadVersionError:
                continue  # the controller (or a late write of ours) got there first
            except NoNodeError:
                raise UnknownTopicOrPartition(f"{topic}-{partition} has no state") from None
            except UNAVAILABLE as exc:
                raise CoordinatorNotAvailable(f"ZooKeeper unavailable: {exc}") from exc
            self.writes += 1
            self._cache.apply_state(tp, CachedState(target, written.version, written.mzxid))
            return PartitionState(topic, partition, target.leader, target.leader_epoch,
                                  tuple(replicas), target.isr)
