"""Deterministic placement: rings, leaders, epochs and rendezvous coordinators."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from brokers.core.coordinator import NO_LEADER
from brokers.dsbs_broker.tables import replica_placement


def test_ring_is_a_rotation_of_sorted_live_ids_and_independent_of_input_order():
    ids = [5, 1, 3, 2, 4]
    r1 = replica_placement.assign_ring("orders", ids, 5, 1)
    r2 = replica_placement.assign_ring("orders", list(reversed(ids)), 5, 1)
    assert r1 == r2
    assert sorted(r1) == [1, 2, 3, 4, 5]
    i = r1.index(1)
    assert r1[i:] + r1[:i] == (1, 2, 3, 4, 5)


def test_one_partition_per_broker_round_robin():
    ring = replica_placement.assign_ring("t", [0, 1, 2], 3, 1)
    leaders = [replica_placement.replicas(ring, 1, p)[0] for p in range(3)]
    assert sorted(leaders) == [0, 1, 2]


def test_ring_is_truncated_for_few_partitions_on_large_clusters():
    ring = replica_placement.assign_ring("t", range(1000), 3, 2)
    assert len(ring) == 4
    assert replica_placement.replicas(ring, 2, 2) == (ring[2], ring[3])


def test_leader_is_first_live_replica_else_no_leader():
    table = {1: (3, True), 2: (1, True)}
    assert replica_placement.leader_and_epoch((1, 2), table.get)[0] == 1
    table[1] = (3, False)
    assert replica_placement.leader_and_epoch((1, 2), table.get)[0] == 2
    table[2] = (1, False)
    leader, _, live = replica_placement.leader_and_epoch((1, 2), table.get)
    assert leader == NO_LEADER and live == ()
    assert replica_placement.leader_and_epoch((9,), table.get)[0] == NO_LEADER  # unknown replica


@given(st.lists(st.tuples(st.integers(0, 2), st.booleans()), min_size=1, max_size=40))
def test_epoch_strictly_increases_whenever_the_leader_changes(events):
    # Replay a history of liveness changes; a replica comes back only with a higher
    # incarnation, as a restart or refutation guarantees.
    table = {0: (1, True), 1: (1, True), 2: (1, True)}
    reps = (0, 1, 2)
    _, epoch, _ = replica_placement.leader_and_epoch(reps, table.get)
    for node, up in events:
        inc, was_up = table[node]
        if up == was_up:
            continue
        table[node] = (inc + 1 if up else inc, up)
        _, new_epoch, _ = replica_placement.leader_and_epoch(reps, table.get)
        assert new_epoch > epoch  # every liveness change raises it, leader changes included
        epoch = new_epoch
    assert epoch <= 0x7FFFFFFF


def test_rendezvous_is_deterministic_and_moves_only_the_departed_members_groups():
    nodes = list(range(10))
    groups = [f"group-{i}" for i in range(500)]
    before = {g: replica_placement.rendezvous_order(g, nodes) for g in groups}
    shuffled = nodes[:]
    random.Random(1).shuffle(shuffled)
    assert all(replica_placement.rendezvous_order(g, shuffled) == before[g] for g in groups)
    after = {g: replica_placement.rendezvous_order(g, [n for n in nodes if n != 3]) for g in groups}
    for g in groups:
        if before[g][0] == 3:
            assert after[g][0] == before[g][1]  # the successor, which holds the replica
        else:
            assert after[g][0] == before[g][0]
    counts = [sum(1 for g in groups if before[g][0] == n) for n in nodes]
    assert min(counts) > 20  # spread over every member
