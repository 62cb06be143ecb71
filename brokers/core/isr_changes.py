"""The replication seam: how the core asks its coordination architecture to change an ISR.

Who leads each partition, in which leader epoch, and which replicas are in sync travels from
the twin to the core the way all metadata does: ``Coordinator.cluster()`` and
``partition_state`` return ``PartitionState(leader, leader_epoch, replicas, isr)``, and the
twin calls its subscribers after every change. The other direction is this Protocol: the
leader (``brokers/core/replication/leader.py``) proposes a new ISR when a follower falls
behind for replica.lag.time.max.ms or catches up, and the twin stores it, or refuses it when
the leader is no longer the one its store names.

Each twin stores the change its own way: ZooKeeper conditionally rewrites the partition state
znode (the zkVersion it last read; Kafka 0.8's AlterIsr-less path), DSBS gossips the new ISR
under the same leader epoch with a higher ISR version. Both must keep the one rule the high
watermark depends on: a replica leaves the stored ISR before the leader stops counting it,
and a new leader is only ever chosen from the stored ISR (unless unclean election is asked for).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol, runtime_checkable

from brokers.core.coordinator import PartitionState
from brokers.core.errors import (
    FencedLeaderEpoch,
    InvalidRequest,
    NotLeaderOrFollower,
    UnknownLeaderEpoch,
)


@runtime_checkable
class IsrChanges(Protocol):
    async def change_isr(
        self, topic: str, partition: int, leader_epoch: int, isr: Sequence[int]
    ) -> PartitionState:
        """Store ``isr`` as the partition's in-sync replicas, on behalf of this broker as its
        leader in ``leader_epoch``; return the state now stored (the leader applies its ISR).

        Raises FencedLeaderEpoch when the store holds a newer leader epoch, NotLeaderOrFollower
        when another broker leads, UnknownTopicOrPartition when the partition is gone, and
        InvalidRequest for an ISR that is not a subset of the replicas or lacks the leader.
        A change that loses a race to another writer is retried on the stored state by the
        twin only if that state still names this leader and epoch."""


def checked_isr(stored_leader: int, stored_epoch: int, me: int, leader_epoch: int,
                isr: Iterable[int], replicas: Sequence[int]) -> tuple[int, ...]:
    """The ISR broker ``me``, leading in ``leader_epoch``, may store (in replica order), given
    the leader and epoch the store holds; raises what ``change_isr`` raises: the same check on
    both twins (ZooKeeper's partition-state znode, DSBS's gossiped record)."""
    if stored_leader != me:
        raise NotLeaderOrFollower(f"the stored leader is {stored_leader}, not {me}")
    if stored_epoch > leader_epoch:
        raise FencedLeaderEpoch(f"leader epoch {leader_epoch} asked, {stored_epoch} stored")
    if stored_epoch < leader_epoch:
        raise UnknownLeaderEpoch(f"leader epoch {leader_epoch} asked, {stored_epoch} stored")
    wanted = set(isr)
    if me not in wanted or not wanted <= set(replicas):
        raise InvalidRequest(f"ISR {sorted(wanted)} must hold the leader {me} and only "
                             f"replicas {list(replicas)}")
    return tuple(r for r in replicas if r in wanted)
