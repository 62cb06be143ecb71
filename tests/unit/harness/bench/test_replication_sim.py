"""Whole DSBS and Raft twin brokers under fault schedules on the simulated network and clock
(harness/bench/replication_sim.py; no sockets: harness/sim stands in for them).

The product's own broker runs here (server, handlers, storage, replica manager, fetcher, gossip,
coordinator), so "no acknowledged record lost" is a statement about that code. The simulation
must also be able to fail: with a known bug put back (acks=-1 answered at the leader's append,
or a follower that keeps its log instead of cutting it to its new leader's) it reports losses or
diverged replicas, with the seed that replays them. ``make sim-replication`` runs the full
table (docs/replication.md); this samples it.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.bench.replication_sim import (
    ARCHES,
    HEADER,
    MIXES,
    Settings,
    main,
    replay_command,
    run_scenario,
)

SHORT = 15.0  # virtual seconds of faults per sampled scenario (the table runs 30)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(ARCHES), st.sampled_from(MIXES), st.integers(0, 2**31 - 1))
def test_no_record_acknowledged_with_acks_all_is_lost_duplicated_or_reordered(arch, mix, seed):
    s = Settings(arch=arch, mix=mix, fault_phase_s=SHORT)
    r = run_scenario(s, seed)
    print(f"seed {seed}: {replay_command(s, seed)}")
    assert r.converged, r.note
    assert r.acked > 0
    assert (r.lost, r.duplicated, r.reordered, r.diverged) == (0, 0, False, False), r.steps
    if arch == "raft":
        # Its metadata is linearizable: names raced by every broker created once, offsets
        # and producer ids as acknowledged, fetches seeing every earlier commit.
        assert r.meta_ops > 0 and r.meta_violations == 0, r.meta_notes


def test_the_raft_twin_under_the_nemesis_keeps_every_promise():
    for seed in (0, 1):
        r = run_scenario(Settings(arch="raft", mix="nemesis"), seed)
        assert r.converged, r.note
        assert (r.lost, r.duplicated, r.diverged) == (0, 0, False), r.steps
        assert r.meta_ops > 30 and r.meta_violations == 0, r.meta_notes


def test_a_raft_creation_answered_without_its_token_check_is_seen_twice():
    """The planted bug the metadata checks must see: a creation that reports success once the
    name exists, whoever's record made it; brokers racing a name are then all told so."""
    r = run_scenario(Settings(arch="raft", mix="kill-leader", plant="raft-unchecked-creation",
                              fault_phase_s=10.0), 0)
    assert r.double_created > 0, r.meta_notes


def test_the_lan_timers_too():
    r = run_scenario(Settings(mix="nemesis", preset="lan", fault_phase_s=10.0), 3)
    assert r.converged, r.note
    assert r.acked > 0 and (r.lost, r.duplicated, r.diverged) == (0, 0, False)


def test_a_killed_leader_is_replaced_and_production_goes_on():
    r = run_scenario(Settings(mix="kill-leader", fault_phase_s=10.0), 3)
    assert r.failovers, r.steps
    # LOCAL gossip: detection (about a second) plus the vote.
    assert all(0 < f < 5 for f in r.failovers)
    assert any("kill leader" in step for step in r.steps)


def test_acks_all_answered_at_the_append_loses_records():
    """The planted bug the simulation must see: the leader acknowledges acks=-1 before the
    ISR has the batch; a paused or cut-off leader then acknowledges what its successor never
    gets."""
    results = [run_scenario(Settings(mix="nemesis", plant="ack-early"), seed)
               for seed in (0, 2)]
    assert all(r.lost > 0 for r in results), [r.lost for r in results]


def test_a_follower_that_does_not_truncate_diverges():
    r = run_scenario(Settings(mix="nemesis", plant="no-truncation"), 0)
    assert r.diverged, r.steps


def test_the_same_seed_replays_the_same_scenario():
    a, b = (run_scenario(Settings(mix="lossy", fault_phase_s=8.0), 11) for _ in range(2))
    assert (a.acked, a.steps, a.failovers) == (b.acked, b.steps, b.failovers)


def test_the_table_and_the_replay_lines(capsys):
    assert main(["--seeds", "1", "--first-seed", "2", "--mix", "nemesis", "--preset", "local",
                 "--plant", "ack-early"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == HEADER
    assert out[1].split()[:7] == ["dsbs", "nemesis", "local", "-1", "2", "1", "1"]
    assert out[2].startswith("seed 2: lost ")
    assert "--first-seed 2 --seeds 1 --arch dsbs --mix nemesis --preset local" in out[2]
    assert "--plant ack-early" in out[2]
    assert out[3].startswith("  schedule: ")
