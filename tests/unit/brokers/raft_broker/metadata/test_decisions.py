"""The Raft twin's controller rules: records decided from an image, applied back to it."""

from __future__ import annotations

import pytest

from brokers.core.coordinator import NO_LEADER
from brokers.core.errors import (
    FencedLeaderEpoch,
    InvalidPartitions,
    InvalidReplicationFactor,
    InvalidRequest,
    InvalidTopic,
    NotLeaderOrFollower,
    TopicAlreadyExists,
    UnknownTopicOrPartition,
)
from brokers.raft_broker.metadata import decisions as d
from brokers.raft_broker.metadata import records as r
from brokers.raft_broker.metadata.image import MetadataImage


class Log:
    """An image and the index of its next record, as one broker applies a quorum's log."""

    def __init__(self) -> None:
        self.image = MetadataImage()
        self.index = 0

    def apply(self, *records: r.Record) -> list[bool]:
        out = []
        for rec in records:
            self.index += 1
            out.append(self.image.apply(self.index, rec).applied)
        return out


def cluster(n: int = 3) -> Log:
    log = Log()
    for b in range(n):
        log.apply(r.RegisterBroker(b, f"h{b}", 9092, None))
    for b in range(n):
        log.apply(r.FenceBroker(b, b + 1, False))
    return log


def test_a_topic_is_placed_round_robin_over_the_live_brokers() -> None:
    log = cluster()
    rec = d.create_topic(log.image, "t", 3, 2, {"retention.ms": "1000"})
    assert [p.replicas for p in rec.partitions] == [(0, 1), (1, 2), (2, 0)]
    assert [p.leader for p in rec.partitions] == [0, 1, 2]
    assert log.apply(rec) == [True]
    assert log.image.view(0).topics["t"].configs == {"retention.ms": "1000"}
    with pytest.raises(TopicAlreadyExists):
        d.create_topic(log.image, "t", 1, 1)
    with pytest.raises(InvalidTopic):
        d.create_topic(log.image, "a/b", 1, 1)
    with pytest.raises(InvalidReplicationFactor):
        d.create_topic(log.image, "u", 1, 4)
    manual = d.create_topic(log.image, "m", 0, 0, assignment={0: (2, 1), 1: (1, 0)})
    assert [(p.replicas, p.leader) for p in manual.partitions] == [((2, 1), 2), ((1, 0), 1)]


def test_two_creations_decided_on_the_same_image_resolve_to_one() -> None:
    log = cluster()
    first, second = (d.create_topic(log.image, "t", 1, 1) for _ in range(2))
    assert log.apply(first, second) == [True, False]


def test_a_fenced_broker_loses_its_leaderships_and_gets_them_back_cleanly() -> None:
    log = cluster()
    log.apply(d.create_topic(log.image, "t", 3, 3))
    assert d.leadership_changes(log.image) == []
    log.apply(r.FenceBroker(0, 1, True))
    changes = d.leadership_changes(log.image)
    assert len(changes) == 3 and log.apply(*changes) == [True] * 3
    view = log.image.view(1)
    p0 = view.partition("t", 0)
    assert p0 is not None and (p0.leader, p0.leader_epoch, p0.isr) == (1, 1, (1, 2))
    p1 = view.partition("t", 1)
    assert p1 is not None and (p1.leader, p1.leader_epoch, p1.isr) == (1, 0, (1, 2))
    assert d.leadership_changes(log.image) == []  # settled
    # Every ISR member fenced: leaderless, the ISR still naming who has every record.
    log.apply(r.FenceBroker(1, 2, True), r.FenceBroker(2, 3, True))
    log.apply(*d.leadership_changes(log.image))
    p0 = log.image.view(1).partition("t", 0)
    assert p0 is not None and p0.leader == NO_LEADER
    # Broker 0, back, was out of the ISR: it leads nothing without unclean election.
    log.apply(r.FenceBroker(0, 1, False))
    assert d.leadership_changes(log.image) == []
    assert len(d.leadership_changes(log.image, unclean=True)) == 3


def test_a_decision_on_a_stale_image_is_rejected_where_it_commits() -> None:
    log = cluster()
    log.apply(d.create_topic(log.image, "t", 1, 3))
    log.apply(r.FenceBroker(0, 1, True))
    stale = d.leadership_changes(log.image)
    shrink = d.isr_change(log.image, "t", 0, 0, 0, (0, 1))  # broker 0 leads still, here
    assert log.apply(*stale, shrink) == [True, False]


def test_a_leaders_isr_change_is_checked_as_every_twin_checks_it() -> None:
    log = cluster()
    log.apply(d.create_topic(log.image, "t", 1, 3))
    change = d.isr_change(log.image, "t", 0, 0, 0, (2, 0))
    assert change.isr == (0, 2) and not change.new_leader_epoch
    assert log.apply(change) == [True]
    with pytest.raises(NotLeaderOrFollower):
        d.isr_change(log.image, "t", 0, 1, 0, (0, 1))
    log.apply(r.FenceBroker(0, 1, True))
    log.apply(*d.leadership_changes(log.image))  # broker 2 leads, epoch 1: ISR (2,)
    with pytest.raises(NotLeaderOrFollower):
        d.isr_change(log.image, "t", 0, 0, 0, (0,))
    with pytest.raises(FencedLeaderEpoch):
        d.isr_change(log.image, "t", 0, 2, 0, (2,))
    with pytest.raises(UnknownTopicOrPartition):
        d.isr_change(log.image, "t", 5, 2, 1, (2,))
    # Broker 0 is fenced: it may not join the ISR back (KRaft's INELIGIBLE_REPLICA) until
    # the controller unfences it.
    with pytest.raises(InvalidRequest, match="fenced"):
        d.isr_change(log.image, "t", 0, 2, 1, (2, 0))
    log.apply(r.FenceBroker(0, 1, False))
    assert log.apply(d.isr_change(log.image, "t", 0, 2, 1, (2, 0))) == [True]


def test_partitions_grow_and_configs_change_from_what_was_read() -> None:
    log = cluster()
    log.apply(d.create_topic(log.image, "t", 2, 1))
    grow = d.add_partitions(log.image, "t", 4)
    assert (grow.first, [p.replicas for p in grow.partitions]) == (2, [(2,), (0,)])
    assert log.apply(grow, grow) == [True, False]
    with pytest.raises(InvalidPartitions):
        d.add_partitions(log.image, "t", 4)
    a = d.set_topic_configs(log.image, "t", lambda c: {**c, "x": "1"})
    b = d.set_topic_configs(log.image, "t", lambda c: {**c, "y": "2"})
    assert log.apply(a, b) == [True, False]  # b was decided on the configs a replaced
    assert log.apply(d.set_topic_configs(log.image, "t", lambda c: {**c, "y": "2"})) == [True]
    assert log.image.topics["t"].configs == {"x": "1", "y": "2"}
    log.apply(d.delete_topic(log.image, "t"))
    with pytest.raises(UnknownTopicOrPartition):
        d.delete_topic(log.image, "t")


def test_sessions_fence_the_silent_and_unfence_the_caught_up() -> None:
    log = Log()
    log.apply(r.RegisterBroker(0, "h", 9092, None), r.RegisterBroker(1, "h", 9092, None))
    sessions = d.BrokerSessions(session_timeout_s=9.0)
    sessions.take_office(log.image, now=0.0)
    # Registered, heartbeating, but not yet past its own registration: still fenced.
    sessions.heartbeat(0, 1, applied=0, now=1.0)
    assert sessions.decide(log.image, 1.0) == []
    sessions.heartbeat(0, 1, applied=2, now=2.0)
    sessions.heartbeat(1, 2, applied=2, now=2.0)
    assert log.apply(*sessions.decide(log.image, 2.0)) == [True, True]
    assert log.image.live_brokers() == [0, 1]
    # Broker 1 falls silent for a session; broker 0 keeps heartbeating.
    sessions.heartbeat(0, 1, applied=4, now=10.0)
    fence = sessions.decide(log.image, 11.5)
    assert fence == [r.FenceBroker(1, 2, True)]
    log.apply(*fence)
    # Restarted, it registers anew: a heartbeat of its old life changes nothing.
    log.apply(r.RegisterBroker(1, "h", 9093, None))
    sessions.heartbeat(1, 2, applied=9, now=12.0)
    sessions.heartbeat(0, 1, applied=9, now=12.0)
    assert sessions.decide(log.image, 12.0) == []
    sessions.heartbeat(1, 6, applied=6, now=12.5)
    assert sessions.decide(log.image, 12.5) == [r.FenceBroker(1, 6, False)]


def test_a_broker_shutting_down_stays_fenced_whatever_heartbeats_arrive_late() -> None:
    log = cluster(2)
    sessions = d.BrokerSessions(session_timeout_s=9.0)
    sessions.take_office(log.image, now=0.0)
    sessions.heartbeat(0, 1, applied=4, now=1.0)
    log.apply(r.FenceBroker(0, 1, True))  # its controlled shutdown
    sessions.end(0, 1)
    sessions.heartbeat(0, 1, applied=5, now=1.1)  # sent before it stopped, read after
    assert r.FenceBroker(0, 1, False) not in sessions.decide(log.image, 1.2)
    # Restarted, it registers anew and is unfenced in its new epoch.
    log.apply(r.RegisterBroker(0, "h0", 9093, None))
    sessions.heartbeat(0, log.index, applied=log.index, now=2.0)
    assert r.FenceBroker(0, log.index, False) in sessions.decide(log.image, 2.0)


def test_a_new_controller_gives_every_broker_a_whole_session() -> None:
    log = cluster(2)
    sessions = d.BrokerSessions(session_timeout_s=9.0)
    sessions.take_office(log.image, now=100.0)
    assert sessions.decide(log.image, 108.0) == []
    assert sessions.decide(log.image, 109.5) == [r.FenceBroker(0, 1, True),
                                                 r.FenceBroker(1, 2, True)]
