"""Manual replica assignments (CreateTopics): Kafka 2.8's checks, in one function, and the
ring a DSBS record carries for one (no I/O)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from brokers.core.coordinator import validate_replica_assignment
from brokers.core.errors import InvalidReplicaAssignment, InvalidReplicationFactor
from brokers.dsbs_broker.tables import replica_placement


def test_one_replica_per_partition_on_known_brokers_is_taken():
    got = validate_replica_assignment({1: [2], 0: [1], 2: [2]}, [1, 2, 3])
    assert got == {0: (1,), 1: (2,), 2: (2,)}


@pytest.mark.parametrize(("assignment", "error"), [
    ({}, InvalidReplicaAssignment),
    ({1: [1]}, InvalidReplicaAssignment),  # not 0-based
    ({0: [1], 2: [1]}, InvalidReplicaAssignment),  # a gap
    ({0: [1], 1: [1, 2]}, InvalidReplicaAssignment),  # uneven replica counts
    ({0: []}, InvalidReplicaAssignment),
    ({0: [1, 1]}, InvalidReplicaAssignment),  # a broker twice
    ({0: [9]}, InvalidReplicaAssignment),  # no such broker
    ({0: [1, 2]}, InvalidReplicationFactor),  # two replicas: no replication yet
])
def test_bad_assignments_get_kafkas_errors(assignment, error):
    with pytest.raises(error):
        validate_replica_assignment(assignment, [1, 2, 3])


def test_an_architecture_that_replicates_takes_several_replicas():
    assert validate_replica_assignment({0: [1, 2], 1: [2, 3]}, [1, 2, 3], replicates=True) == {
        0: (1, 2), 1: (2, 3)}


@given(st.lists(st.integers(0, 5), min_size=1, max_size=30))
def test_a_manual_ring_places_every_partition_where_the_assignment_says(brokers):
    assignment = {p: (b,) for p, b in enumerate(brokers)}
    ring = replica_placement.manual_ring(assignment)
    assert [replica_placement.replicas(ring, 1, p) for p in range(len(brokers))] == [
        (b,) for b in brokers]
    if len(set(brokers)) == len(brokers):
        assert ring == tuple(brokers)


def test_gossip_takes_a_ring_naming_a_broker_twice_only_with_one_replica():
    from brokers.dsbs_broker.config import GossipLimits
    from brokers.dsbs_broker.packets.wire import TopicRecord
    from brokers.dsbs_broker.tables.validation import topic_problem
    limits = GossipLimits()
    assert topic_problem(TopicRecord("t", 1, 0, 3, 1, (1, 1, 2)), limits) is None
    assert topic_problem(TopicRecord("t", 1, 0, 3, 2, (1, 1, 2)), limits) == "ring"
