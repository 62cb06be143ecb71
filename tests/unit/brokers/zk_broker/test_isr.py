"""The zk twin's replication decisions, pure: election from the ISR, ISR changes by leaders."""

from __future__ import annotations

import pytest

from brokers.core.coordinator import NO_LEADER
from brokers.core.errors import FencedLeaderEpoch, InvalidRequest, NotLeaderOrFollower
from brokers.zk_broker.controller import next_partition_state
from brokers.zk_broker.isr import isr_change
from brokers.zk_broker.paths import LeaderAndIsr

REPLICAS = (1, 2, 3)


def test_a_new_partition_has_every_live_replica_in_sync():
    assert next_partition_state(REPLICAS, {1, 2, 3}, None, 7) == LeaderAndIsr(1, 0, (1, 2, 3), 7)
    assert next_partition_state(REPLICAS, {2, 3}, None, 7) == LeaderAndIsr(2, 0, (2, 3), 7)


def test_a_dead_leader_is_replaced_by_the_first_live_isr_member():
    current = LeaderAndIsr(1, 4, (1, 3), 7)
    assert next_partition_state(REPLICAS, {2, 3}, current, 8) == LeaderAndIsr(3, 5, (3,), 8)


def test_a_replica_outside_the_isr_never_leads_unless_unclean():
    current = LeaderAndIsr(1, 4, (1,), 7)
    leaderless = next_partition_state(REPLICAS, {2, 3}, current, 8)
    assert leaderless == LeaderAndIsr(NO_LEADER, 5, (1,), 8)
    assert next_partition_state(REPLICAS, {2, 3}, leaderless, 8) is None
    # The last ISR member returns: it leads again, clean.
    assert next_partition_state(REPLICAS, {1, 2, 3}, leaderless, 8) == LeaderAndIsr(
        1, 6, (1,), 8)
    assert next_partition_state(REPLICAS, {2, 3}, current, 8, unclean=True) == LeaderAndIsr(
        2, 5, (2,), 8)


def test_a_dead_follower_leaves_the_isr_at_once_without_an_epoch_bump():
    current = LeaderAndIsr(1, 4, (1, 2, 3), 7)
    assert next_partition_state(REPLICAS, {1, 3}, current, 8) == LeaderAndIsr(1, 4, (1, 3), 8)
    assert next_partition_state(REPLICAS, {1, 2, 3}, current, 8) is None


def test_a_state_without_an_isr_lets_any_live_replica_lead():
    # Written before the controller kept ISRs for leaderless partitions.
    current = LeaderAndIsr(NO_LEADER, 4, (), 7)
    assert next_partition_state((3,), {3}, current, 8) == LeaderAndIsr(3, 5, (3,), 8)


def test_the_leader_changes_its_isr_only_in_its_own_epoch():
    stored = LeaderAndIsr(1, 4, (1, 2, 3), 7)
    assert isr_change(stored, 1, 4, [3, 1], REPLICAS) == LeaderAndIsr(1, 4, (1, 3), 7)
    with pytest.raises(FencedLeaderEpoch):
        isr_change(stored, 1, 3, [1], REPLICAS)
    with pytest.raises(NotLeaderOrFollower):
        isr_change(stored, 2, 4, [2], REPLICAS)
    with pytest.raises(InvalidRequest):
        isr_change(stored, 1, 4, [2, 3], REPLICAS)  # without the leader
    with pytest.raises(InvalidRequest):
        isr_change(stored, 1, 4, [1, 9], REPLICAS)  # not a replica
