"""Deterministic replica placement: partitions' replica rings, leaders and leader epochs, and the
rendezvous ranks that place a group's coordinator (its offsets' copies go to the next ranks) and a
topic name's arbiter.

Every broker runs these pure functions on its own tables and, once gossip has converged, gets
the same answers as every other broker; no broker decides for the others.

* Replica assignment is fixed when a topic is created: round robin over the members live at
  creation, sorted by id and rotated by a hash of the topic name (so many one-partition topics do
  not all land on the lowest id). The name's arbiter computes the ring over the members live in
  its view and commits it inside the topic record (``gossip/creation.py``). Without replication,
  data lives where it was first assigned, so assignment must never be recomputed from the current
  members (plain modulo over live members would move every partition's leader away from its
  data when one broker leaves).
* Partitions added later (CreatePartitions) extend the ring with live members not yet in it,
  in the same rotated order, but only when every existing partition's replicas sit inside the
  old ring without wrapping; otherwise the ring stays and new partitions wrap around it.
  Either way no existing partition changes replicas.
* With one replica per partition, the leader of a partition is its replica while it is live,
  else ``NO_LEADER``. Partitions with more replicas have gossiped leader and ISR records of
  their own (``leaders.py``); the functions below give only their replicas.
* Leader epoch (one replica per partition): ``sum over replicas r of (2 * incarnation(r) + (0 if
  r is live else 1))``. Each term strictly increases at every liveness change of its replica
  (going down keeps the incarnation and adds 1; coming back needs a higher incarnation, +2 or
  more, minus the 1), so the epoch strictly increases whenever the leader changes, and every
  broker with the same member table computes the same number. It may also rise without a leader
  change (a refuted suspicion raises an incarnation); clients then merely refresh metadata.
  Unknown replicas count as incarnation 0, down.
* Group coordinators: rendezvous (highest random weight) hashing of the group id over live
  members. When a member leaves, only the groups it coordinated move, and they move to the next
  rank, which is where their offsets were replicated.
* Topic arbiters: the same rendezvous hashing of the topic name over live members picks the one
  broker that decides the creation of that name (``gossip/creation.py``); every other broker
  forwards creations of the name to it. Members that agree on who is live agree on the arbiter.
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Callable, Iterable, Mapping

from brokers.core.coordinator import NO_LEADER

# Liveness lookup: node id -> (incarnation, live) or None if the member is unknown here.
MemberLookup = Callable[[int], "tuple[int, bool] | None"]


def assign_ring(
    name: str, live_ids: Iterable[int], num_partitions: int, replication_factor: int
) -> tuple[int, ...]:
    """The replica ring of a new topic: live ids sorted, rotated by the name's hash, truncated
    to the entries partitions can reach (keeps records small on large clusters)."""
    ids = sorted(set(live_ids))
    if not ids:
        raise ValueError("no live members to assign partitions to")
    start = zlib.crc32(name.encode()) % len(ids)
    rotated = ids[start:] + ids[:start]
    return tuple(rotated[: num_partitions + replication_factor - 1])


def grow_ring(
    name: str, ring: tuple[int, ...], old_partitions: int, new_partitions: int,
    replication_factor: int, live_ids: tuple[int, ...],
) -> tuple[int, ...]:
    """The ring of a topic grown from ``old_partitions`` to ``new_partitions``: existing
    partitions keep their replicas (``replicas`` of each is unchanged)."""
    if len(ring) < old_partitions + replication_factor - 1:
        return ring  # existing partitions wrap: appending would move some of them
    want = new_partitions + replication_factor - 1
    extra = [n for n in assign_ring(name, live_ids, len(ring) + want, replication_factor)
             if n not in ring] if live_ids else []
    return ring + tuple(extra[: max(want - len(ring), 0)])


def manual_ring(assignment: Mapping[int, tuple[int, ...]],
                replication_factor: int = 1) -> tuple[int, ...] | None:
    """The ring of a manual assignment, so that ``replicas(ring, rf, p)`` gives partition p
    its assigned replicas. One replica per partition: the assignment's shortest repeating
    prefix of distinct members (a round-robin assignment keeps the usual ring), else the whole
    assignment, which may then name a member more than once. More replicas: the shortest ring
    of distinct members that gives every partition its replicas in order, or None if none
    does (the assignment is not ring-shaped)."""
    order = [assignment[p][0] for p in range(len(assignment))]
    if replication_factor == 1:
        for k in range(1, len(order) + 1):
            head = order[:k]
            if len(set(head)) == k and all(order[p] == head[p % k] for p in range(len(order))):
                return tuple(head)
        return tuple(order)
    # Ring entry p is partition p's first replica; a ring longer than the partitions goes on
    # with the last partition's followers.
    sequence = order + list(assignment[len(order) - 1][1:])
    for k in range(replication_factor, len(sequence) + 1):
        ring = tuple(sequence[:k])
        if len(set(ring)) == k and all(replicas(ring, replication_factor, p) == tuple(r)
                                       for p, r in assignment.items()):
            return ring
    return None


def replicas(ring: tuple[int, ...], replication_factor: int, partition: int) -> tuple[int, ...]:
    n = len(ring)
    return tuple(ring[(partition + r) % n] for r in range(min(replication_factor, n)))


def leader_and_epoch(
    reps: tuple[int, ...], lookup: MemberLookup
) -> tuple[int, int, tuple[int, ...]]:
    """(leader or NO_LEADER, leader epoch, live replicas in replica order)."""
    leader = NO_LEADER
    epoch = 0
    live: list[int] = []
    for r in reps:
        info = lookup(r)
        inc, up = info if info is not None else (0, False)
        epoch += 2 * inc + (0 if up else 1)
        if up:
            live.append(r)
            if leader == NO_LEADER:
                leader = r
    return leader, min(epoch, 0x7FFFFFFF), tuple(live)


def rendezvous_score(key: str, node_id: int) -> int:
    h = hashlib.blake2b(f"{key}\x00{node_id}".encode(), digest_size=8).digest()
    return int.from_bytes(h, "big")


def rendezvous_order(key: str, node_ids: Iterable[int]) -> list[int]:
    """Node ids by decreasing weight for ``key``: [coordinator, successor, ...]."""
    return sorted(node_ids, key=lambda n: (rendezvous_score(key, n), n), reverse=True)
