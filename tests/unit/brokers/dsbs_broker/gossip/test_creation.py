"""Topic creation by arbiter and promise round (creation.py) on the simulated network (no I/O).

The property under test: at no step of the simulation do two brokers hold different records of
one name, whatever mix of CreateTopics and auto-creations races on which brokers, with loss,
joins and deaths; only a partition in which the two sides declare each other dead can create
competing records (the documented residual race), and healing it converges on the record of
higher rank.
"""

from __future__ import annotations

import os
import random

import pytest

from brokers.core.errors import (
    InvalidPartitions,
    InvalidReplicationFactor,
    InvalidTopic,
    RequestTimedOut,
    TopicAlreadyExists,
)
from brokers.dsbs_broker.config import GossipConfig
from brokers.dsbs_broker.gossip.creation import CreateOutcome
from brokers.dsbs_broker.gossip.simnet import SimNet
from brokers.dsbs_broker.packets.wire import Status, TopicRecord
from brokers.dsbs_broker.tables.replica_placement import rendezvous_order

CFG = GossipConfig.LOCAL
EXISTS = TopicAlreadyExists.code


def converged_net(n: int, *, seed: int = 0, loss: float = 0.0) -> SimNet:
    net = SimNet(CFG, seed=seed, loss=loss)
    net.add_converged(n)
    net.run_for(0.5)
    return net


def seeded_net(n: int, *, seed: int = 0) -> SimNet:
    """Members that found each other through seeds (and rejoin through them after a split)."""
    net = SimNet(CFG, seed=seed)
    for i in range(n):
        net.add(i, seeds=tuple(range(n)))
    assert net.run_until(lambda: all_alive(net, set(range(n))), timeout_s=10) is not None
    return net


def all_alive(net: SimNet, ids: set[int]) -> bool:
    return all((m := node.members.get(i)) is not None and m.status == Status.ALIVE
               for node in net.live_nodes() for i in ids)


def create(net: SimNet, node: int, name: str, partitions: int, *, explicit: bool = True,
           rf: int = 1) -> tuple[int, int]:
    rid = net.nodes[node].creations.request(name, partitions, rf, (), explicit=explicit,
                                            now=net.now)
    return node, rid


def done(net: SimNet, reqs: list[tuple[int, int]]) -> bool:
    return all(rid in net.nodes[n].creations.completed for n, rid in reqs)


def outcomes(net: SimNet, reqs: list[tuple[int, int]]) -> list[CreateOutcome]:
    return [net.nodes[n].creations.completed.pop(rid) for n, rid in reqs]


def records(net: SimNet, name: str) -> set[TopicRecord]:
    return {r for node in net.live_nodes() if (r := node.topics.get(name)) is not None}


def run_checking(net: SimNet, names: list[str], until, timeout_s: float) -> None:
    """Step until ``until()``, checking after every step that no name has two records."""
    end = net.now + timeout_s
    while not until():
        assert net.now < end, "did not finish"
        net.step()
        for name in names:
            recs = records(net, name)
            assert len(recs) <= 1, f"{name}: competing records {recs}"


def arbiter(net: SimNet, name: str, live: list[int] | None = None) -> int:
    ids = live if live is not None else sorted(n.node_id for n in net.live_nodes())
    return rendezvous_order(name, ids)[0]


def test_a_creation_anywhere_is_committed_by_the_arbiter_and_reaches_everyone():
    net = converged_net(5)
    for origin in range(5):
        name = f"t{origin}"
        reqs = [create(net, origin, name, 3)]
        run_checking(net, [name], lambda r=reqs: done(net, r), 5)
        (out,) = outcomes(net, reqs)
        assert out.code == 0 and out.record is not None
        assert out.record.creator == arbiter(net, name) and out.record.explicit
        assert out.record.num_partitions == 3
        run_checking(net, [name], lambda n=name: sum(
            1 for x in net.live_nodes() if x.topics.get(n)) == 5, 5)
        # Creating it again, from anywhere: TOPIC_ALREADY_EXISTS with the record; an
        # auto-creation gets the record (also under TOPIC_ALREADY_EXISTS).
        again = [create(net, (origin + 1) % 5, name, 1),
                 create(net, (origin + 2) % 5, name, 1, explicit=False)]
        run_checking(net, [name], lambda r=again: done(net, r), 5)
        assert [(o.code, o.record) for o in outcomes(net, again)] == [(EXISTS, out.record)] * 2


def test_simultaneous_creations_of_one_name_never_make_two_records():
    net = converged_net(5, seed=3)
    names = [f"race{i}" for i in range(30)]
    for i, name in enumerate(names):
        # Every broker at the same instant: CreateTopics(3) on some, auto-creation(1) on others.
        reqs = [create(net, n, name, 3 if (n + i) % 2 else 1, explicit=bool((n + i) % 2))
                for n in range(5)]
        run_checking(net, [name], lambda r=reqs: done(net, r), 5)
        outs = outcomes(net, reqs)
        (rec,) = records(net, name)
        assert all(o.record == rec for o in outs)
        # The request whose token the record carries was told "created"; everyone else
        # TOPIC_ALREADY_EXISTS. So a CreateTopics that succeeded is the record that exists.
        assert sorted(o.code for o in outs) == [0] + [EXISTS] * 4
        winner = next(r for r, o in zip(reqs, outs, strict=True) if o.code == 0)
        assert rec.num_partitions == (3 if rec.explicit else 1)
        assert rec.explicit == bool((winner[0] + i) % 2)


def test_creations_complete_consistently_under_20_percent_loss():
    net = converged_net(5, seed=7, loss=0.2)
    names = [f"lossy{i}" for i in range(10)]
    reqs = [create(net, n, name, 2, explicit=n % 2 == 0) for name in names for n in range(5)]
    run_checking(net, names, lambda: done(net, reqs), 10)
    outs = outcomes(net, reqs)
    for k, name in enumerate(names):
        mine = outs[5 * k: 5 * k + 5]
        (rec,) = records(net, name)
        # Lost answers are re-asked; the token makes the creator's retry still say "created".
        assert sorted(o.code for o in mine) == [0] + [EXISTS] * 4
        assert all(o.record == rec for o in mine)
    assert net.stats.lost > 0


def test_the_arbiter_refuses_what_is_invalid_whoever_forwarded_it():
    net = converged_net(3)
    name = "x" * 10
    origin = next(n for n in range(3) if n != arbiter(net, name))  # forwarded, not local
    # More replicas than live members; a factor of 2 or 3 is fine (replication).
    reqs = [create(net, origin, name, 1, rf=4), create(net, origin, name, 0),
            create(net, origin, "bad/name", 1)]
    run_checking(net, [name], lambda: done(net, reqs), 5)
    assert [o.code for o in outcomes(net, reqs)] == [
        InvalidReplicationFactor.code, InvalidPartitions.code, InvalidTopic.code]
    assert records(net, name) == set()


def test_a_joining_arbiter_that_lacks_an_existing_record_adopts_it():
    net = converged_net(3)
    # A name whose arbiter will be the newcomer 3 once it is known.
    name = next(f"j{i}" for i in range(1000) if arbiter(net, f"j{i}", [0, 1, 2, 3]) == 3)
    reqs = [create(net, 0, name, 2)]
    run_checking(net, [name], lambda: done(net, reqs), 5)
    (existing,) = outcomes(net, reqs)
    # Member 3 appears, known to all at once, but without the topic table (as when its join
    # reply could not carry every record).
    new = net.add(3)
    for node in net.live_nodes():
        for other in net.live_nodes():
            if other is not node:
                m = other.members.members[other.node_id]
                node.members.set(m.state, net.now, m.encoded)
    assert new.topics.get(name) is None and arbiter(net, name) == 3
    reqs = [create(net, 3, name, 5), create(net, 3, name, 1, explicit=False)]
    run_checking(net, [name], lambda: done(net, reqs), 5)
    assert [(o.code, o.record) for o in outcomes(net, reqs)] == [(EXISTS, existing.record)] * 2
    assert records(net, name) == {existing.record}


def test_creations_during_a_join_wait_for_the_members_to_agree_on_the_arbiter():
    net = converged_net(4, seed=5)
    net.kill(3)
    assert net.run_until(lambda: all(n.members.get(3).status == Status.DEAD
                                     for n in net.live_nodes()), timeout_s=10) is not None
    net.add(3, seeds=(0,))  # back; it learns the others from its seed, they learn it by gossip
    net.run_until(lambda: net.nodes[3].members.live_count() == 4, timeout_s=5)
    assert any(n.members.get(3).status == Status.DEAD for n in net.live_nodes() if n.node_id != 3)
    names = [f"w{i}" for i in range(40)]
    reqs = [create(net, i % 4, name, 2, explicit=i % 3 != 0) for i, name in enumerate(names)]
    reqs += [create(net, (i + 1) % 4, name, 1, explicit=False) for i, name in enumerate(names)]
    run_checking(net, names, lambda: done(net, reqs), 10)
    outs = outcomes(net, reqs)
    assert sum(o.code == 0 for o in outs) == len(names)
    assert all(len(records(net, n)) == 1 for n in names)


def test_a_broker_that_reached_no_seed_yet_does_not_arbitrate_alone():
    net = SimNet(CFG, seed=1)
    net.add(0, seeds=(1,))
    reqs = [create(net, 0, "early", 2)]
    net.run_for(2.0)
    assert not done(net, reqs) and records(net, "early") == set()
    net.add(1, seeds=(0,))
    run_checking(net, ["early"], lambda: done(net, reqs), 5)
    (out,) = outcomes(net, reqs)
    assert out.code == 0 and out.record is not None and out.record.ring in ((0, 1), (1, 0))


def test_a_dead_arbiter_is_replaced_and_a_stale_promise_only_delays():
    net = converged_net(4, seed=11)
    name = next(f"d{i}" for i in range(1000) if arbiter(net, f"d{i}") == 3)
    origin = 0
    reqs = [create(net, origin, name, 2)]
    # Let the arbiter receive the CREATE and send its PROPOSEs, then kill it before commit:
    # the voters hold promises to a dead proposer.
    net.run_until(lambda: net.nodes[3].counters["proposals"] > 0, timeout_s=1)
    net.kill(3)
    run_checking(net, [name], lambda: done(net, reqs), 10)
    (out,) = outcomes(net, reqs)
    assert out.code == 0 and out.record is not None
    assert out.record.creator == arbiter(net, name) != 3
    assert records(net, name) == {out.record}


def test_an_unreachable_arbiter_is_replaced_once_declared_dead():
    net = converged_net(3)
    name = next(f"g{i}" for i in range(1000) if arbiter(net, f"g{i}") == 2)
    net.partition({0, 1}, {2})
    reqs = [create(net, 0, name, 1)]
    # Node 2 is unreachable but not yet dead in 0's view: the CREATE goes unanswered until it
    # is declared dead; then the next rank arbitrates and commits.
    run_checking(net, [name], lambda: done(net, reqs), CFG.create_timeout_s)
    (out,) = outcomes(net, reqs)
    assert out.code == 0 and out.record is not None and out.record.creator == arbiter(
        net, name, [0, 1])


def test_a_broker_cut_off_from_every_peer_times_out_instead_of_creating_alone():
    net = seeded_net(2)
    net.partition({0}, {1})
    reqs = [create(net, 0, "alone", 1)]
    assert net.run_until(lambda: done(net, reqs), timeout_s=CFG.create_timeout_s + 1)
    (out,) = outcomes(net, reqs)
    assert out.code == RequestTimedOut.code and records(net, "alone") == set()


@pytest.mark.parametrize("explicit_on_both_sides", [False, True])
def test_residual_race_a_partition_can_make_two_records_and_healing_picks_one(
        explicit_on_both_sides):
    """The documented residual race: with the network split and each side having declared the
    other dead, each side's arbiter commits its own record of one name. When the sides meet,
    every broker keeps the record of higher rank: an explicit CreateTopics beats an
    auto-creation; between two explicit ones the lower arbiter id wins (that side's success
    was replaced: the case docs/dsbs-metadata.md describes)."""
    net = seeded_net(4, seed=2)
    net.partition({0, 1}, {2, 3})
    assert net.run_until(lambda: all(
        net.nodes[i].members.get(j).status == Status.DEAD
        for i, j in ((0, 2), (0, 3), (1, 2), (1, 3), (2, 0), (2, 1), (3, 0), (3, 1))),
        timeout_s=10) is not None
    name = "split"
    a = [create(net, 0, name, 3)]
    b = [create(net, 2, name, 1, explicit=explicit_on_both_sides)]
    net.run_until(lambda: done(net, a + b), timeout_s=5)
    (oa,), (ob,) = outcomes(net, a), outcomes(net, b)
    assert oa.code == 0 and ob.code == 0  # both sides "succeeded": competing records
    assert oa.record != ob.record and len(records(net, name)) == 2
    net.heal()
    assert net.run_until(lambda: all_alive(net, {0, 1, 2, 3}) and len(records(net, name)) == 1,
                         timeout_s=20) is not None
    (final,) = records(net, name)
    if explicit_on_both_sides:
        assert final == min(oa.record, ob.record, key=lambda r: r.creator)
    else:
        assert final == oa.record  # the explicit CreateTopics outranks the auto-creation
    # Any creation after the heal sees the one record.
    again = [create(net, n, name, 7) for n in range(4)]
    net.run_until(lambda: done(net, again), timeout_s=5)
    assert [(o.code, o.record) for o in outcomes(net, again)] == [(EXISTS, final)] * 4


# --- random scenarios ---------------------------------------------------------------------------
# TWINBENCH_CREATION_SCENARIOS=600 runs more (docs/dsbs-metadata.md quotes such runs).
SCENARIOS = int(os.environ.get("TWINBENCH_CREATION_SCENARIOS", "12"))


def random_scenario(seed: int, *, partition_s: float) -> tuple[set[str], bool]:
    """12 simulated seconds of 2-6 members (every member a seed, as ``twinbench cluster`` runs
    them) with 0-20% loss: creations of a few names on random members, CreateTopics or
    auto-creation, random deaths and restarts (a restarted member keeps its records, as its
    topics file gives them back) and, with ``partition_s`` > 0, random partitions lasting up
    to that long. Returns the names that ever had two records at once, and whether each name
    had one record again within 30 s of the network being whole."""
    rng = random.Random(seed)
    n = rng.randint(2, 6)
    net = SimNet(CFG, seed=seed, loss=rng.choice([0.0, 0.05, 0.2]))
    seeds = tuple(range(n))
    for i in range(n):
        net.add(i, seeds=seeds)
    net.run_until(lambda: all_alive(net, set(seeds)), timeout_s=10)
    names = [f"s{seed}-{i}" for i in range(rng.randint(1, 8))]
    competing: set[str] = set()
    restarts: list[tuple[int, float]] = []
    heal_at = 0.0
    end = net.now + 12
    while net.now < end:
        r = rng.random()
        live = [x.node_id for x in net.live_nodes()]
        if r < 0.05:
            create(net, rng.choice(live), rng.choice(names), rng.randint(1, 4),
                   explicit=rng.random() < 0.5)
        elif r < 0.0515 and partition_s and not net._side and len(live) > 2:
            rng.shuffle(live)
            k = rng.randint(1, len(live) - 1)
            net.partition(set(live[:k]), set(live[k:]))
            heal_at = net.now + rng.uniform(0.1, partition_s)
        elif r < 0.052 and len(live) > 1:
            victim = rng.choice(live)
            net.kill(victim)
            restarts.append((victim, net.now + rng.uniform(0.5, 3)))
        for victim, at in list(restarts):
            if net.now >= at:
                restarts.remove((victim, at))
                net.restart(victim, seeds)
        if net._side and net.now >= heal_at:
            net.heal()
        net.step()
        competing.update(name for name in names if len(records(net, name)) > 1)
    net.heal()
    healed = net.run_until(lambda: all(len(records(net, x)) <= 1 for x in names),
                           timeout_s=30) is not None
    return competing, healed


def test_random_deaths_restarts_and_loss_never_make_two_records():
    for seed in range(SCENARIOS):
        competing, _ = random_scenario(seed, partition_s=0)
        assert not competing, f"scenario {seed}: competing records of {sorted(competing)}"


def test_partitions_shorter_than_failure_detection_never_make_two_records():
    for seed in range(SCENARIOS):
        competing, _ = random_scenario(1000 + seed, partition_s=0.5)
        assert not competing, f"scenario {1000 + seed}: competing records of {sorted(competing)}"


def test_residual_race_rate_under_long_partitions_and_healing(record_property):
    """Partitions of up to 4 s (detection takes ~1 s here): the residual race happens in some
    scenarios; every one of them ends with one record per name once the network is whole."""
    hit = 0
    for seed in range(SCENARIOS):
        competing, healed = random_scenario(2000 + seed, partition_s=4.0)
        assert healed, f"scenario {2000 + seed}: competing records remain after healing"
        hit += bool(competing)
    print(f"\n[dsbs-figures] creation residual race: {hit} of {SCENARIOS} scenarios with "
          "partitions up to 4 s had competing records; all converged after healing")
    record_property("creation_residual_race_scenarios", hit)
