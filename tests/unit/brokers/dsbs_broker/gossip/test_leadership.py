"""Leadership of replicated DSBS partitions on the simulated network (leadership.py; no I/O).

Elections from the last ISR a survivor knows, ISR changes confirmed by the remaining in-sync
replicas before the leader's view drops a member, a stale leader superseded by the newer epoch
when it hears of it, and anti-entropy bringing a member that missed every push up to date.
"""

from __future__ import annotations

import pytest

from brokers.core.errors import FencedLeaderEpoch, NotEnoughReplicas, NotLeaderOrFollower
from brokers.dsbs_broker.config import GossipConfig
from brokers.dsbs_broker.gossip.simnet import SimNet
from brokers.dsbs_broker.packets.wire import PartitionRecord, Status, TopicRecord

CFG = GossipConfig.LOCAL
TOPIC = TopicRecord("t", 1, 0, 1, 3, (0, 1, 2), (), True, 77)


def replicated_net(n: int = 3, *, seed: int = 0, seeds: bool = False) -> SimNet:
    """``n`` members holding TOPIC (one partition on 0, 1, 2; 0 leads in epoch 0)."""
    net = SimNet(CFG, seed=seed)
    if seeds:
        for i in range(n):
            net.add(i, seeds=tuple(range(n)))
        assert net.run_until(lambda: all(len(x.members.live_ids()) == n
                                         for x in net.live_nodes()), timeout_s=10) is not None
    else:
        net.add_converged(n)
    for node in net.nodes.values():
        node.add_topic(TOPIC, net.now)
    net.run_for(0.3)
    return net


def held(net: SimNet, node: int) -> PartitionRecord:
    rec = net.nodes[node].topics.partition("t", 0)
    assert rec is not None
    return rec


def agreed(net: SimNet) -> PartitionRecord | None:
    """The record every live member holds, if they all hold the same."""
    recs = {held(net, i) for i in net.nodes if i not in net.down}
    return recs.pop() if len(recs) == 1 else None


def test_a_dead_leader_is_replaced_by_the_first_live_replica_of_the_isr():
    net = replicated_net()
    assert held(net, 1) == PartitionRecord("t", 77, 0, 0, 0, 0, (0, 1, 2))
    net.kill(0)
    assert net.run_until(lambda: (r := agreed(net)) is not None and r.leader == 1,
                         timeout_s=10) is not None
    assert agreed(net) == PartitionRecord("t", 77, 0, 1, 1, 1, (1, 2))
    assert net.nodes[1].counters["leader_elections"] == 1
    assert net.nodes[2].counters["leader_elections"] == 0  # only the new leader writes
    # The old leader comes back: it takes the newer record, and leads nothing.
    net.restart(0, seeds=(1, 2))
    assert net.run_until(lambda: agreed(net) is not None, timeout_s=10) is not None
    assert held(net, 0).leader == 1 and held(net, 0).leader_epoch == 1


def test_an_isr_shrink_keeps_the_maximal_isr_in_view_until_the_remaining_replica_answers():
    net = replicated_net()
    leader = net.nodes[0]
    net.loss = 1.0  # nothing arrives for a while (failure detection takes longer)
    rid = leader.leadership.change_isr("t", 0, 0, [0, 1], net.now)
    assert held(net, 0).isr == (0, 1)  # stored and gossiped at once...
    net.run_for(0.3)
    # ...but not confirmed: the high watermark still waits for broker 2 too.
    assert leader.leadership.view_isr(held(net, 0)) == (0, 1, 2)
    assert rid not in leader.leadership.completed
    net.loss = 0.0
    assert net.run_until(lambda: rid in leader.leadership.completed, timeout_s=5) is not None
    outcome = leader.leadership.completed.pop(rid)
    assert outcome.code == 0 and outcome.record == held(net, 0)
    assert leader.leadership.view_isr(held(net, 0)) == (0, 1)
    assert held(net, 1).isr == (0, 1)  # the remaining in-sync replica holds it
    # Expanding back needs no change of view: the new member counts from the start.
    rid = leader.leadership.change_isr("t", 0, 0, [0, 1, 2], net.now)
    assert leader.leadership.view_isr(held(net, 0)) == (0, 1, 2)
    assert net.run_until(lambda: rid in leader.leadership.completed, timeout_s=5) is not None


def test_a_leader_drops_an_isr_member_declared_dead_without_waiting_for_the_lag_time():
    net = replicated_net()
    net.kill(2)
    assert net.run_until(lambda: held(net, 0).isr == (0, 1)
                         and net.nodes[0].leadership.view_isr(held(net, 0)) == (0, 1),
                         timeout_s=10) is not None
    assert held(net, 0).leader_epoch == 0  # the leader kept leading


def test_a_stale_leader_cut_off_by_a_partition_is_superseded_when_it_heals():
    net = replicated_net(seeds=True)  # the sides find each other again through seeds
    old = net.nodes[0]
    net.partition({0}, {1, 2})
    assert net.run_until(lambda: held(net, 1).leader == 1 and held(net, 2).leader == 1,
                         timeout_s=10) is not None
    # Meanwhile the cut-off leader still thinks it leads epoch 0. Its peers are dead to it, but
    # alone it is no majority of the replicas: its ISR cannot shrink to itself (so acks=all
    # cannot complete there), and it asks in vain.
    assert held(net, 0).leader == 0 and held(net, 0).leader_epoch == 0
    assert net.run_until(lambda: old.members.get(1).status == Status.DEAD,
                         timeout_s=5) is not None
    isr = old.leadership.view_isr(held(net, 0))
    assert len(isr) >= 2  # the first of its peers declared dead may have left it, not both
    with pytest.raises(NotEnoughReplicas):
        old.leadership.change_isr("t", 0, 0, [0], net.now)
    net.heal()
    # The old leader takes the newer epoch. (Healing may also flap the majority side's
    # leadership once: the cut-off side's stale "1 is dead" reaches broker 2 before 1 refutes
    # it, and 2, in the ISR, takes over; either way broker 0 leads no more.)
    assert net.run_until(lambda: (r := agreed(net)) is not None and r.leader != 0,
                         timeout_s=15) is not None
    assert agreed(net).leader_epoch >= 1


def test_an_isr_change_another_leader_supersedes_fails_with_the_reason():
    net = replicated_net()
    old = net.nodes[0]
    net.loss = 1.0
    rid = old.leadership.change_isr("t", 0, 0, [0, 1], net.now)  # unconfirmed: nothing arrives
    newer = PartitionRecord("t", 77, 0, 1, 1, 1, (1, 2))
    assert old.store_partition(newer)  # as if broker 1's election reached it
    net.step()
    outcome = old.leadership.completed.pop(rid)
    assert outcome.code == NotLeaderOrFollower.code and "broker 1 leads" in outcome.message
    with pytest.raises(NotLeaderOrFollower):
        old.leadership.change_isr("t", 0, 1, [0, 1], net.now)
    net.nodes[1].store_partition(newer)
    with pytest.raises(FencedLeaderEpoch):  # the new leader, asked with an older epoch
        net.nodes[1].leadership.change_isr("t", 0, 0, [1, 2], net.now)


def test_a_member_that_missed_every_push_catches_up_by_anti_entropy():
    net = replicated_net(seeds=True)
    net.partition({2}, {0, 1})
    # The leader drops broker 2 from the ISR once it is declared dead; broker 2, cut off,
    # hears nothing of it.
    assert net.run_until(lambda: held(net, 0).isr == (0, 1), timeout_s=10) is not None
    net.run_for(3)  # every gossip retransmission of the record is spent meanwhile
    assert held(net, 2).isr == (0, 1, 2)
    net.heal()
    assert net.run_until(lambda: held(net, 2) == held(net, 0), timeout_s=15) is not None


def test_a_broker_that_knows_no_live_peer_elects_nothing():
    net = replicated_net(seeds=True)
    net.partition({1}, {0, 2})
    net.kill(0)
    net.run_for(5)
    # Broker 1 is next in line but alone: it may be the cut-off side, so the partition stays
    # leaderless there; broker 2 (peer of nobody live either) waits for broker 1 anyway.
    assert held(net, 1).leader == 0 and net.nodes[1].counters["leader_elections"] == 0
    net.heal()
    assert net.run_until(lambda: (r := agreed(net)) is not None and r.leader == 1,
                         timeout_s=15) is not None


def test_a_restarted_member_learns_the_newer_record_when_it_joins():
    net = replicated_net(seeds=True)
    net.kill(0)
    assert net.run_until(lambda: held(net, 1).leader == 1, timeout_s=10) is not None
    node = net.restart(0, seeds=(0, 1, 2))
    assert held(net, 0).leader == 0  # what its files say: it led, in epoch 0
    assert not node.joined
    assert net.run_until(lambda: node.joined, timeout_s=10) is not None
    # By the time it has joined (a seed's SYNC answer) it holds the newer record, so it never
    # leads on its stale one once its broker serves (the coordinator waits for the join).
    assert held(net, 0) == held(net, 1)


def test_a_restarted_former_leader_serves_nothing_until_a_majority_answered():
    net = replicated_net(seeds=True)
    net.kill(0)
    assert net.run_until(lambda: held(net, 1).leader == 1, timeout_s=10) is not None
    net.partition({0}, {1, 2})
    node = net.restart(0, seeds=(0, 1, 2))
    net.run_for(3)
    # Its files say it leads epoch 0; cut off, it cannot learn otherwise, and it holds the
    # partition back (a coordinator shows no leader for what ``resuming`` names).
    assert held(net, 0).leader == 0 and ("t", 0) in node.leadership.resuming
    net.heal()
    assert net.run_until(lambda: not node.leadership.resuming, timeout_s=15) is not None
    assert held(net, 0).leader != 0


def test_a_whole_cluster_restarted_from_its_files_hands_each_leadership_on():
    net = replicated_net(seeds=True)
    net.kill(0)
    assert net.run_until(lambda: held(net, 1).leader == 1, timeout_s=10) is not None
    assert held(net, 1) == PartitionRecord("t", 77, 0, 1, 1, 1, (1, 2))
    for i in range(3):
        net.kill(i)
    nodes = [net.restart(i, seeds=(0, 1, 2)) for i in range(3)]
    assert ("t", 0) in nodes[1].leadership.resuming
    assert net.run_until(lambda: not nodes[1].leadership.resuming, timeout_s=15) is not None
    # Its log may have lost what it had not flushed: broker 1 resigns (no leader, an ISR
    # without it), and the rest of the ISR elects broker 2 in a new epoch.
    assert net.run_until(lambda: (r := agreed(net)) is not None and r.leader == 2,
                         timeout_s=15) is not None
    assert agreed(net) == PartitionRecord("t", 77, 0, 2, 2, 3, (2,))
    assert nodes[1].counters["leader_resignations"] == 1
