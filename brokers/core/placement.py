"""Where a topic's replicas go and who leads a partition: the rules the controllers share.

The zk twin's controller (a ZooKeeper-elected broker, Kafka 0.8's design) and the Raft twin's
(the quorum's leader, KRaft's) place replicas and elect leaders by the same rules, so that a
difference between them measures the coordination, not a different policy. DSBS places
replicas on a deterministic ring of its own (brokers/dsbs_broker/tables/replica_placement.py):
without a controller, every broker must compute the same placement alone.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass

from brokers.core.coordinator import NO_LEADER
from brokers.core.errors import InvalidPartitions, InvalidReplicationFactor


def assign_replicas(
    num_partitions: int, replication_factor: int, live_broker_ids: Iterable[int]
) -> dict[int, tuple[int, ...]]:
    """Round-robin replica assignment over live brokers sorted by id.

    Partition p's replicas are brokers[p], brokers[p+1], ... (mod n); the first is the preferred
    leader, so leaders spread evenly. Kafka starts at a random broker; we start at the lowest id
    so every twin places the benchmark's topic identically and tests can predict it.
    """
    brokers = sorted(set(live_broker_ids))
    if num_partitions < 1:
        raise InvalidPartitions(f"number of partitions must be at least 1, got {num_partitions}")
    if replication_factor < 1:
        raise InvalidReplicationFactor(
            f"replication factor must be at least 1, got {replication_factor}"
        )
    if replication_factor > len(brokers):
        raise InvalidReplicationFactor(
            f"replication factor {replication_factor} is larger than the {len(brokers)} "
            "live brokers"
        )
    n = len(brokers)
    return {
        p: tuple(brokers[(p + r) % n] for r in range(replication_factor))
        for p in range(num_partitions)
    }


@dataclass(frozen=True, slots=True)
class Leadership:
    """Who leads a partition, in which leader epoch, and which replicas are in sync."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]


def next_leadership(
    replicas: tuple[int, ...],
    live: Collection[int],
    current: Leadership | None,
    *,
    unclean: bool = False,
) -> Leadership | None:
    """What a partition's leadership should become given the live brokers; None when it is
    already right.

    * no state yet: the first live replica leads with epoch 0, every live replica in the ISR
      (NO_LEADER and an empty ISR if none is live);
    * the leader is alive and a replica: leave it alone (no needless epoch bumps), except that
      dead brokers leave the ISR at once (same epoch: the leader keeps leading);
    * otherwise: the first live replica in the ISR leads with ``leader_epoch + 1`` and the ISR
      keeps its live members. With none live, the partition stays leaderless and the ISR keeps
      naming the replicas that have every committed record, so one of them leads when it
      returns; a replica outside the ISR may miss acknowledged records, so it leads only with
      ``unclean`` (Kafka's unclean.leader.election.enable, off by default). An empty ISR (a
      state written before the controller kept ISRs) makes every live replica eligible.
    """
    if current is None:
        isr = tuple(b for b in replicas if b in live)
        return Leadership(isr[0] if isr else NO_LEADER, 0, isr)
    if current.leader != NO_LEADER and current.leader in live and current.leader in replicas:
        alive = tuple(b for b in current.isr if b in live)
        if alive == current.isr or current.leader not in alive:
            return None
        return Leadership(current.leader, current.leader_epoch, alive)
    eligible = [b for b in replicas if b in live and (b in current.isr or not current.isr)]
    if not eligible and unclean:
        eligible = [b for b in replicas if b in live]
    if not eligible:
        if current.leader == NO_LEADER:
            return None  # still leaderless: nothing to write
        return Leadership(NO_LEADER, current.leader_epoch + 1, current.isr)
    leader = eligible[0]
    isr = tuple(b for b in current.isr if b in live) if leader in current.isr else (leader,)
    return Leadership(leader, current.leader_epoch + 1, isr)
