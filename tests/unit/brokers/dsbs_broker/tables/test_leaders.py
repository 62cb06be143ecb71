"""The rules of replicated DSBS partitions (leaders.py, pure): elections, ISR changes, merges."""

from __future__ import annotations

import functools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from brokers.core.errors import (
    FencedLeaderEpoch,
    InvalidRequest,
    NotLeaderOrFollower,
    UnknownLeaderEpoch,
)
from brokers.dsbs_broker.packets.wire import PartitionRecord, Status
from brokers.dsbs_broker.tables import leaders, replica_placement
from brokers.dsbs_broker.tables.leaders import NO_LEADER, merge, successor, with_isr, without_down

REPLICAS = (3, 1, 2)


def rec(leader: int = 3, epoch: int = 4, version: int = 7,
        isr: tuple[int, ...] = REPLICAS) -> PartitionRecord:
    return PartitionRecord("t", 11, 0, leader, epoch, version, isr)


def view(**states: bool | None):
    """A liveness lookup: b<id>=True alive, False dead, None suspect; unnamed brokers are
    unknown."""
    as_status = {True: Status.ALIVE, False: Status.DEAD, None: Status.SUSPECT}
    table = {int(k[1:]): as_status[v] for k, v in states.items()}
    return lambda n: table.get(n)


def test_a_partition_nobody_changed_is_led_by_its_first_replica_with_every_replica_in_sync():
    assert leaders.initial("t", 11, 0, REPLICAS) == PartitionRecord("t", 11, 0, 3, 0, 0, REPLICAS)


def test_the_first_live_replica_of_the_isr_takes_over_one_epoch_up():
    live = view(b3=False, b1=True, b2=True)
    assert successor(rec(), REPLICAS, live, 1) == rec(1, 5, 8, (1, 2))
    assert successor(rec(), REPLICAS, live, 2) is None  # broker 1 comes first
    # Broker 1 out of the ISR: broker 2's turn, and the ISR keeps only the live members.
    assert successor(rec(isr=(3, 2)), REPLICAS, live, 2) == rec(2, 5, 8, (2,))


def test_nobody_takes_over_from_a_live_or_unknown_leader_or_outside_the_isr():
    assert successor(rec(), REPLICAS, view(b3=True, b1=True, b2=True), 1) is None
    assert successor(rec(), REPLICAS, view(b1=True, b2=True), 1) is None  # leader unknown
    assert successor(rec(isr=(3, 2)), REPLICAS, view(b3=False, b1=True, b2=True), 1) is None
    # An earlier ISR member whose state is unknown (a member table still filling) goes first.
    assert successor(rec(), REPLICAS, view(b3=False, b2=True), 2) is None
    assert successor(rec(), REPLICAS, view(b3=False, b1=True, b2=True), 3) is None  # itself


def test_the_leader_changes_its_isr_in_its_own_epoch_only():
    r = rec()
    assert with_isr(r, 3, 4, [2, 3], REPLICAS) == rec(isr=(3, 2), version=8)  # replica order
    assert with_isr(r, 3, 4, [1, 2, 3], REPLICAS) is r  # unchanged: nothing to write
    with pytest.raises(NotLeaderOrFollower):
        with_isr(r, 1, 4, [1, 3], REPLICAS)
    with pytest.raises(FencedLeaderEpoch):
        with_isr(r, 3, 3, [3], REPLICAS)
    with pytest.raises(UnknownLeaderEpoch):
        with_isr(r, 3, 5, [3], REPLICAS)
    with pytest.raises(InvalidRequest):
        with_isr(r, 3, 4, [1, 2], REPLICAS)  # without the leader
    with pytest.raises(InvalidRequest):
        with_isr(r, 3, 4, [3, 9], REPLICAS)  # not a replica


def test_the_leader_drops_members_declared_down_at_once():
    live = view(b3=True, b1=False, b2=True)
    assert without_down(rec(), REPLICAS, live, 3) == rec(isr=(3, 2), version=8)
    assert without_down(rec(), REPLICAS, view(b3=True, b2=True), 3) is None  # unknown: not down
    assert without_down(rec(), REPLICAS, live, 1) is None  # not the leader


def test_a_broker_that_sees_no_majority_of_the_replicas_live_neither_elects_nor_shrinks():
    alone = view(b3=False, b1=True, b2=False)
    assert successor(rec(), REPLICAS, alone, 1) is None
    assert without_down(rec(leader=1), REPLICAS, alone, 1) is None
    # A suspect is no vote: a cut-off broker suspects its peers before it declares them dead.
    assert successor(rec(), REPLICAS, view(b3=False, b1=True, b2=None), 1) is None
    # Five replicas: three alive are a majority, two are not.
    five = (3, 1, 2, 4, 5)
    assert successor(rec(isr=five), five, view(b3=False, b1=True, b2=True, b4=True), 1)
    assert not successor(rec(isr=five), five, view(b3=False, b1=True, b2=True), 1)


def test_an_election_outranks_the_old_epoch_and_the_newer_isr_wins_within_one():
    stale_shrink = rec(version=9, isr=(3, 1))
    elected = successor(rec(), REPLICAS, view(b3=False, b1=True, b2=True), 1)
    assert elected is not None
    assert merge(stale_shrink, elected) == elected == merge(elected, stale_shrink)
    # Two brokers elected themselves from different ISR versions of epoch 4: the newer wins.
    from_old = successor(rec(version=7), REPLICAS, view(b3=False, b1=True, b2=True), 1)
    from_new = successor(rec(version=8, isr=(3, 2)), REPLICAS,
                         view(b3=False, b1=True, b2=True), 2)
    assert from_old is not None and from_new is not None
    assert merge(from_old, from_new) == from_new == merge(from_new, from_old)


records = st.builds(
    PartitionRecord, st.just("t"), st.just(11), st.just(0), st.sampled_from((NO_LEADER, 1, 2, 3)),
    st.integers(0, 3), st.integers(0, 5),
    st.lists(st.sampled_from(REPLICAS), unique=True).map(tuple))


@given(st.lists(records, min_size=1, max_size=6), st.randoms())
def test_merge_is_a_join_so_any_order_of_arrival_ends_in_the_same_record(rs, rnd):
    """Commutative, associative and idempotent: brokers that receive the same records in any
    order, any grouping, any number of times, hold the same one."""
    a, b = rs[0], rs[-1]
    assert merge(a, b) == merge(b, a)
    assert merge(a, a) == a
    expected = functools.reduce(merge, rs)
    shuffled = rs + rnd.sample(rs, len(rs))  # duplicates too
    rnd.shuffle(shuffled)
    assert functools.reduce(merge, shuffled) == expected
    mid = len(rs) // 2
    if mid:
        assert merge(functools.reduce(merge, rs[:mid]),
                     functools.reduce(merge, rs[mid:])) == expected


def test_a_ring_shaped_manual_assignment_with_replicas_becomes_a_ring():
    assignment = {0: (3, 1), 1: (1, 2), 2: (2, 3)}
    ring = replica_placement.manual_ring(assignment, 2)
    assert ring == (3, 1, 2)
    assert all(replica_placement.replicas(ring, 2, p) == r for p, r in assignment.items())
    # One partition: the ring is its replicas.
    assert replica_placement.manual_ring({0: (2, 1, 3)}, 3) == (2, 1, 3)
    # Replicas no ring gives (partition 1 would have to start where partition 0 continues).
    assert replica_placement.manual_ring({0: (3, 1), 1: (2, 3)}, 2) is None
    assert replica_placement.manual_ring({0: (3, 1), 1: (3, 2)}, 2) is None
