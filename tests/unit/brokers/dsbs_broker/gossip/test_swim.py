"""The DSBS gossip state machine on an in-memory network with a simulated clock (no I/O).

Figures (protocol periods to converge, messages per member per period, detection times, false
positives) are printed (``pytest -s``) and recorded as test properties (``--junitxml``).
"""

from __future__ import annotations

import time

import pytest

from brokers.dsbs_broker.config import GossipConfig
from brokers.dsbs_broker.gossip.simnet import SIM_KEY, SimNet
from brokers.dsbs_broker.gossip.swim import SwimNode
from brokers.dsbs_broker.packets import wire
from brokers.dsbs_broker.packets.auth import Authenticator
from brokers.dsbs_broker.packets.wire import (
    Header,
    MemberUpdate,
    Status,
    TopicRecord,
    encode_header,
)


def _all_alive(net: SimNet, ids: set[int]) -> bool:
    for node in net.live_nodes():
        for i in ids:
            m = node.members.get(i)
            if m is None or m.status != Status.ALIVE:
                return False
    return True


def _all_see(net: SimNet, node_id: int, statuses: tuple[Status, ...]) -> bool:
    for node in net.live_nodes():
        if node.node_id == node_id:
            continue
        m = node.members.get(node_id)
        if m is None or m.status not in statuses:
            return False
    return True


def _report(record_property, name: str, **figures: float) -> None:
    print(f"\n[dsbs-figures] {name}: " + ", ".join(f"{k}={v:.3g}" for k, v in figures.items()))
    for k, v in figures.items():
        record_property(f"{name}.{k}", v)


def _measure(net: SimNet, done, timeout_s: float) -> tuple[float, float]:
    """(periods to ``done``, packets per member per period during that time)."""
    p0 = net.stats.packets
    t = net.run_until(done, timeout_s=timeout_s, check_every_s=net.cfg.period_s / 10)
    assert t is not None, "did not converge"
    periods = t / net.cfg.period_s
    n = len(net.live_nodes())
    return periods, (net.stats.packets - p0) / n / max(periods, 1e-9)


@pytest.mark.parametrize("n", [5, 50])
def test_membership_converges_from_seeds(n, record_property):
    net = SimNet(GossipConfig.LAN, seed=n)
    for i in range(n):
        net.add(i, seeds=(0,))
    periods, mpp = _measure(net, lambda: _all_alive(net, set(range(n))), timeout_s=60)
    _report(record_property, f"bootstrap_n{n}", periods=periods, msgs_per_member_period=mpp)
    assert periods <= 10
    assert net.stats.max_packet <= 1400


@pytest.mark.parametrize("n", [5, 50, 1000])
def test_join_and_topic_record_converge(n, record_property):
    started = time.monotonic()
    net = SimNet(GossipConfig.LAN, seed=n)
    net.add_converged(n)
    net.run_for(3 * net.cfg.period_s)  # settle into steady state

    # A newcomer joining through one seed must become known to everyone.
    net.add(n, seeds=(0,))
    periods, mpp = _measure(net, lambda: _all_alive(net, {n}), timeout_s=60)
    _report(record_property, f"join_n{n}", periods=periods, msgs_per_member_period=mpp)

    # A topic record created on one member must reach everyone.
    rec = TopicRecord("orders", 1, 3, 8, 1, tuple(range(min(n, 8))))
    net.nodes[3].add_topic(rec, net.now)
    periods_t, mpp_t = _measure(
        net, lambda: all(nd.topics.get("orders") == rec for nd in net.live_nodes()),
        timeout_s=60)
    _report(record_property, f"topic_n{n}", periods=periods_t, msgs_per_member_period=mpp_t)

    # Quiet steady state: what gossip costs when nothing happens.
    p0, t0 = net.stats.packets, net.now
    net.run_for(5 * net.cfg.period_s)
    steady = (net.stats.packets - p0) / (n + 1) / ((net.now - t0) / net.cfg.period_s)
    _report(record_property, f"steady_n{n}", msgs_per_member_period=steady)

    assert periods <= 15 and periods_t <= 15
    assert steady < 4  # ping + ack + occasional anti-entropy
    assert net.stats.max_packet <= 1400
    # What the simulation cost, reported (junit XML), never judged: speed is a benchmark's.
    record_property("wall_s", round(time.monotonic() - started, 1))


@pytest.mark.parametrize(("preset", "n"), [("LOCAL", 3), ("LOCAL", 50), ("LAN", 3),
                                           ("LAN", 50)])
def test_failure_detection_time(preset, n, record_property):
    cfg = getattr(GossipConfig, preset)
    worst = 0.0
    for trial in range(5):
        net = SimNet(cfg, seed=100 + trial)
        net.add_converged(n)
        net.run_for(3 * cfg.period_s)
        victim = 1 + trial % (n - 1)
        net.kill(victim)
        t = net.run_until(lambda v=victim, nt=net: _all_see(nt, v, (Status.DEAD,)), timeout_s=60,
                          check_every_s=0.01)
        assert t is not None
        worst = max(worst, t)
        # Nobody else was declared dead along the way.
        assert _all_alive(net, set(range(n)) - {victim})
    _report(record_property, f"detect_{preset}_n{n}", worst_seconds=worst,
            worst_periods=worst / cfg.period_s)
    if preset == "LOCAL" and n <= 5:
        assert worst < 3.0


def test_false_positives_under_10_percent_loss(record_property):
    n = 20
    cfg = GossipConfig.LAN
    net = SimNet(cfg, seed=7, loss=0.10)
    net.add_converged(n)
    periods = 300
    net.run_for(periods * cfg.period_s)
    suspicions = sum(nd.counters["declared_suspect"] for nd in net.nodes.values())
    deaths = sum(nd.counters["declared_dead"] for nd in net.nodes.values())
    refutations = sum(nd.counters["refutations"] for nd in net.nodes.values())
    probes = n * periods
    _report(record_property, "loss10_n20_300periods", probes=probes,
            suspicion_rate=suspicions / probes, false_dead_rate=deaths / probes,
            refutations=refutations)
    assert suspicions / probes < 0.10  # the bar: under 10% suspicions per probe at 10% loss
    assert deaths / probes < 0.01
    net.run_for(30 * cfg.period_s)
    assert _all_alive(net, set(range(n)))  # any false death was refuted and healed


def test_suspicion_is_refuted_with_a_higher_incarnation():
    net = SimNet(GossipConfig.LOCAL, seed=3)
    net.add_converged(5)
    victim = net.nodes[4]
    inc = victim.incarnation
    # Node 0 hears (wrongly) that 4 is suspect at its current incarnation.
    s = victim.members.members[4].state
    lie = MemberUpdate(4, inc, Status.SUSPECT, s.gossip_host, s.gossip_port, s.kafka_host,
                       s.kafka_port)
    net.nodes[0]._apply_member(lie, net.now)
    assert net.nodes[0].members.get(4).status == Status.SUSPECT
    t = net.run_until(
        lambda: all(nd.members.get(4).status == Status.ALIVE
                    and nd.members.get(4).incarnation > inc for nd in net.nodes.values()),
        timeout_s=5)
    assert t is not None
    assert victim.incarnation > inc and victim.counters["refutations"] >= 1


@pytest.mark.parametrize("sides", [({0, 1}, {2, 3}), ({0, 1, 2}, {3, 4, 5})])
def test_a_partition_heals_once_the_network_does(sides):
    # Each side declares the other dead and stops probing it; only the SYNCs members send to
    # seeds that are not live members bring the sides back together.
    n = len(sides[0]) + len(sides[1])
    net = SimNet(GossipConfig.LOCAL, seed=4)
    for i in range(n):
        net.add(i, seeds=tuple(range(n)))
    assert net.run_until(lambda: _all_alive(net, set(range(n))), timeout_s=10) is not None
    net.partition(*sides)
    a, b = min(sides[0]), min(sides[1])
    assert net.run_until(lambda: net.nodes[a].members.get(b).status == Status.DEAD
                         and net.nodes[b].members.get(a).status == Status.DEAD,
                         timeout_s=10) is not None
    net.run_for(2 * net.cfg.sync_interval_s)
    net.heal()
    took = net.run_until(lambda: _all_alive(net, set(range(n))), timeout_s=20)
    assert took is not None and took <= 5 * net.cfg.sync_interval_s


def test_killed_member_rejoins_with_higher_incarnation():
    net = SimNet(GossipConfig.LOCAL, seed=4)
    net.add_converged(5)
    net.run_for(1)
    old_inc = net.nodes[2].incarnation
    net.kill(2)
    assert net.run_until(lambda: _all_see(net, 2, (Status.DEAD,)), timeout_s=5) is not None
    node = net.add(2, seeds=(0,))
    assert node.incarnation > old_inc
    t = net.run_until(lambda: _all_alive(net, set(range(5))), timeout_s=5)
    assert t is not None
    assert all(nd.members.get(2).incarnation == node.incarnation for nd in net.nodes.values())


def test_restart_without_persisted_incarnation_still_refutes_its_death():
    net = SimNet(GossipConfig.LOCAL, seed=5)
    net.add_converged(4)
    net.nodes[1].incarnation = 9  # the cluster remembers incarnation 9 ...
    net.nodes[1]._announce(net.now)
    net.run_for(1)
    net.kill(1)
    assert net.run_until(lambda: _all_see(net, 1, (Status.DEAD,)), timeout_s=5) is not None
    net._incarnations[1] = 0  # ... but the data dir was lost: it restarts at 1
    node = net.add(1, seeds=(0,))
    assert net.run_until(lambda: _all_alive(net, {0, 1, 2, 3}), timeout_s=5) is not None
    assert node.incarnation > 9


def test_late_joiner_gets_topics_by_anti_entropy_after_gossip_stops():
    net = SimNet(GossipConfig.LOCAL, seed=6)
    net.add_converged(4)
    for i in range(60):  # more records than one digest holds
        net.nodes[i % 4].add_topic(TopicRecord(f"t{i}", 1, i % 4, 1, 1, (i % 4,)), net.now)
    net.run_for(5)  # long past every retransmit limit
    assert all(nd.queued() == 0 for nd in net.nodes.values())
    late = net.add(10, seeds=(1,))
    t = net.run_until(lambda: len(late.topics) == 60, timeout_s=30)
    assert t is not None


@pytest.mark.parametrize(("a", "b", "winner"), [
    # Competing records exist only after the residual race (docs/dsbs-metadata.md); every
    # member settles on the one of higher rank: version, then explicit, then lower creator.
    (TopicRecord("x", 1, 4, 2, 1, (4, 5)), TopicRecord("x", 1, 2, 2, 1, (2, 3)), "b"),
    (TopicRecord("x", 1, 4, 2, 1, (4, 5), explicit=True),
     TopicRecord("x", 1, 2, 1, 1, (2,)), "a"),
    (TopicRecord("x", 1, 4, 2, 1, (4, 5), explicit=True),
     TopicRecord("x", 1, 2, 3, 1, (2, 3, 4), explicit=True), "b"),
    (TopicRecord("x", 2, 4, 2, 1, (4, 5)), TopicRecord("x", 1, 2, 3, 1, (2,), explicit=True),
     "a"),
])
def test_competing_topic_records_settle_on_the_higher_rank_everywhere(a, b, winner):
    net = SimNet(GossipConfig.LOCAL, seed=8)
    net.add_converged(6)
    net.nodes[4].add_topic(a, net.now)
    net.nodes[1].add_topic(b, net.now)
    want = a if winner == "a" else b
    assert net.run_until(lambda: all(nd.topics.get("x") == want for nd in net.nodes.values()),
                         timeout_s=10) is not None


@pytest.mark.parametrize("key", [SIM_KEY, None], ids=["keyed", "insecure"])
def test_junk_foreign_self_and_replayed_datagrams_are_counted_and_dropped(key):
    net = SimNet(GossipConfig.LOCAL, seed=9, key=key)
    net.add_converged(3)
    node = net.nodes[0]
    before = len(node.members)
    node.receive(b"\x00" * 10, ("1.2.3.4", 5), net.now)
    node.receive(b"hello world, not gossip at all", ("1.2.3.4", 5), net.now)
    node.receive(b"\xd5\xb5" + b"\x00" * 2000, ("1.2.3.4", 5), net.now)
    flags = wire.FLAG_HMAC if key else 0
    foreign = encode_header(Header(12345, 1, 1, 1), flags) + b"\x04\x00\x00"
    node.receive(Authenticator(key).sign(foreign) if key else foreign, ("1.2.3.4", 5), net.now)
    # Replay: capture a real packet from node 1 to node 0 and deliver it twice.
    net.nodes[1].send_packet(node.addr, b"\x04")
    (_, pkt), = net.nodes[1].take_outbox()
    node.receive(pkt, net.nodes[1].addr, net.now)
    node.receive(pkt, net.nodes[1].addr, net.now)
    own = node.send_packet(node.addr, b"\x04")
    (_, mine), = node.take_outbox()
    node.receive(mine, node.addr, net.now)
    c = node.counters
    assert c["dropped_truncated"] == 1
    assert c["dropped_bad_magic"] == 1
    assert c["dropped_oversized"] == 1
    assert c["dropped_foreign_cluster"] == 1
    assert c["dropped_replayed"] == 1
    assert c["dropped_self"] == 1
    assert own is True and len(node.members) == before
    net.run_for(1)
    assert _all_alive(net, {0, 1, 2})


def test_offsets_reach_the_groups_successors_despite_loss():
    from brokers.core.coordinator import OffsetAndMetadata, TopicPartition

    net = SimNet(GossipConfig.LOCAL, seed=10, loss=0.3, offset_replicas=2)
    net.add_converged(5)
    net.run_for(1)
    group = "g1"
    order = net.nodes[0].live_order(group)
    coord = net.nodes[order[0]]
    entries = coord.offsets.commit(group, {TopicPartition("t", 0): OffsetAndMetadata(42)}, 1000)
    coord.offsets.mark_dirty([(e.group, e.topic, e.partition) for e in entries],
                             coord.replica_peers(group))
    succ = [net.nodes[i] for i in order[1:3]]
    t = net.run_until(lambda: all(s.offsets.fetch(group, None) for s in succ), timeout_s=10)
    assert t is not None
    assert succ[0].offsets.fetch(group, None)[TopicPartition("t", 0)].offset == 42
    # Nobody outside the top ranks holds a copy (replication is targeted, not broadcast).
    others = [net.nodes[i] for i in order[3:]]
    assert not any(o.offsets.fetch(group, None) for o in others)


def test_next_deadline_is_never_in_the_past_after_tick():
    node = SwimNode(GossipConfig.LOCAL, node_id=1, gossip_addr=("a", 1), kafka_addr=("a", 2),
                    incarnation=1, now=0.0, seeds=(("b", 1),))
    now = 0.0
    for _ in range(200):
        node.tick(now)
        d = node.next_deadline()
        assert d > now
        now = d
    assert node.take_outbox()  # kept trying to join through the seed


def test_retransmit_limit_grows_with_log_n_and_the_queue_drains():
    cfg = GossipConfig.LAN
    assert cfg.retransmit_limit(5) < cfg.retransmit_limit(50) < cfg.retransmit_limit(1000)
    net = SimNet(GossipConfig.LOCAL, seed=11)
    net.add_converged(5)
    net.nodes[0].add_topic(TopicRecord("q", 1, 0, 1, 1, (0,)), net.now)
    net.run_for(3)
    assert all(nd.queued() == 0 for nd in net.nodes.values())


# The bound grows with n: every newcomer's first ack comes from the one seed. 300 members take
# ~8 periods and ~5 s of CPU; 1,000 take ~100 s of CPU, so they run from `make test-scale`
# (the suite's 300 s net is too tight for them when the machine is shared).
@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize(("n", "max_periods"),
                         [(300, 20), pytest.param(1000, 60, marks=pytest.mark.scale)])
def test_membership_bootstrap_from_one_seed(n, max_periods, record_property):
    """Hundreds of members joining at once through one seed."""
    net = SimNet(GossipConfig.LAN, seed=1, step_s=0.1)
    for i in range(n):
        net.add(i, seeds=(0,))
    periods, mpp = _measure(net, lambda: _all_alive(net, set(range(n))), timeout_s=200)
    _report(record_property, f"bootstrap_n{n}", periods=periods, msgs_per_member_period=mpp)
    assert periods <= max_periods
