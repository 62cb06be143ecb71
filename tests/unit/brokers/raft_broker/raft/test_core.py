"""The Raft node in focused scenarios, driven by hand: single nodes and message by message for
the rules (votes, reads, garbage), the simulated cluster (sim.py, its safety checker on) for
elections, partitions, learners and snapshots."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brokers.core.errors import UserError
from brokers.raft_broker.raft import (
    Append,
    AppendResponse,
    Entry,
    HardState,
    InstallSnapshot,
    Message,
    NotLeader,
    RaftConfig,
    RaftDecodeError,
    RaftNode,
    ReadState,
    RequestVote,
    Role,
    Snapshot,
    SnapshotResponse,
    VoteResponse,
    decode,
)
from brokers.raft_broker.raft.sim import SimCluster, SimNode, SimOptions
from tests.unit.brokers.raft_broker.raft.strategies import messages

CFG = RaftConfig(election_ticks=10, heartbeat_ticks=1)
VOTERS = (1, 2, 3)


def cluster(seed: int = 1, voters: int = 3, learners: int = 0, *, pre_vote: bool = True,
            snapshot_threshold: int = 0) -> SimCluster:
    """A simulated cluster without client workload or network faults."""
    config = RaftConfig(election_ticks=10, heartbeat_ticks=1, pre_vote=pre_vote,
                        snapshot_threshold=snapshot_threshold)
    opts = SimOptions(voters=voters, learners=learners, config=config, propose_rate=0,
                      read_rate=0)
    sim = SimCluster(seed, opts, [])
    sim.proposing = False
    return sim


def run_until(sim: SimCluster, cond: Callable[[], bool], steps: int = 300) -> None:
    for _ in range(steps):
        sim.step()
        if cond():
            return
    raise AssertionError(f"not reached in {steps} steps")


def settled(sim: SimCluster) -> SimNode:
    """Run until one leader leads every node with everything applied; return it."""
    run_until(sim, sim.converged)
    ld = sim.leader()
    assert ld is not None
    return ld


def node(sn: SimNode | None) -> RaftNode:
    assert sn is not None
    return sn.raft


def applied_data(sn: SimNode | None) -> list[bytes]:
    assert sn is not None
    return [e.data for e in sn.history if e.data]


def leader_by_hand(pre_vote: bool = False) -> RaftNode:
    """Node 1 of three, elected leader of term 1 by node 2's vote, its no-op committed."""
    n = RaftNode(1, VOTERS, config=RaftConfig(election_ticks=10, heartbeat_ticks=1,
                                               pre_vote=pre_vote), rng=random.Random(1))
    while n.role is Role.FOLLOWER:
        n.tick()
    n.advance(n.ready())
    n.step(VoteResponse(2, 1, 1, True))
    assert n.role is Role.LEADER
    n.advance(n.ready())
    n.step(AppendResponse(2, 1, 1, True, 1, 1, 0))
    assert n.commit_index == 1
    n.advance(n.ready())
    return n


# -- elections ---------------------------------------------------------------------------------


def test_a_single_node_elects_itself_and_commits() -> None:
    n = RaftNode(1, (1,), config=CFG)
    for _ in range(2 * CFG.election_ticks):
        n.tick()
    assert (n.role, n.term, n.leader_id) == (Role.LEADER, 1, 1)
    rd = n.ready()
    assert rd.hard_state == HardState(1, 1, 1)
    assert rd.entries == rd.committed == (Entry(1, 1, b""),)  # the leader's no-op
    assert rd.messages == ()
    n.advance(rd)
    assert n.propose(b"x") == 2
    rd = n.ready()
    assert rd.entries == rd.committed == (Entry(1, 2, b"x"),)
    n.advance(rd)
    assert n.applied == 2
    n.read_index(5)
    assert n.ready().reads == (ReadState(5, 2),)


@pytest.mark.parametrize("seed", range(5))
def test_three_nodes_elect_exactly_one_leader(seed: int) -> None:
    sim = cluster(seed)
    ld = settled(sim)
    nodes = [node(sn) for sn in sim.nodes.values()]
    assert [n.role for n in nodes].count(Role.LEADER) == 1
    assert {n.term for n in nodes} == {ld.raft.term}
    assert {n.leader_id for n in nodes} == {ld.raft.id}
    assert {n.commit_index for n in nodes} == {1}


def test_followers_refuse_a_second_vote_in_a_term_and_a_stale_log() -> None:
    n = RaftNode(2, VOTERS, config=CFG, hard_state=HardState(1, None, 2),
                 entries=(Entry(1, 1), Entry(1, 2)))
    # A log ending at term 1 index 1 is behind ours (term 1 index 2).
    n.step(RequestVote(3, 2, 2, 1, 1))
    assert n.ready().messages == (VoteResponse(2, 3, 2, False),)
    n.step(RequestVote(1, 2, 2, 2, 1))
    assert n.ready().messages == (VoteResponse(2, 1, 2, True),)
    # Node 3 catches up but node 2 has voted in term 2.
    n.step(RequestVote(3, 2, 2, 5, 1))
    assert n.ready().messages == (VoteResponse(2, 3, 2, False),)


def test_a_vote_given_survives_a_restart() -> None:
    n = RaftNode(2, VOTERS, config=CFG)
    n.step(RequestVote(1, 2, 5, 0, 0))
    rd = n.ready()
    assert rd.messages == (VoteResponse(2, 1, 5, True),)
    # The vote is in the hard state the caller persists before sending the grant.
    assert rd.hard_state == HardState(5, 1, 0)
    restarted = RaftNode(2, VOTERS, config=CFG, hard_state=rd.hard_state)
    restarted.step(RequestVote(3, 2, 5, 0, 0))
    assert restarted.ready().messages == (VoteResponse(2, 3, 5, False),)
    restarted.step(RequestVote(1, 2, 5, 0, 0))  # the same candidate asking again
    assert restarted.ready().messages == (VoteResponse(2, 1, 5, True),)


@pytest.mark.parametrize("seed", range(3))
def test_a_follower_with_a_stale_log_cannot_win(seed: int) -> None:
    sim = cluster(seed)
    ld = settled(sim)
    stale, other = (i for i in VOTERS if i != ld.raft.id)
    sim.partition(stale)
    for k in range(5):
        ld.raft.propose(b"k%d" % k)
    run_until(sim, lambda: node(sim.nodes[other]).commit_index == ld.raft.log.last_index)
    sim.crash(ld.raft.id)
    sim.heal()
    run_until(sim, lambda: sim.leader() is not None)
    assert node(sim.leader()).id == other
    run_until(sim, lambda: len(applied_data(sim.nodes[stale])) == 5)
    assert applied_data(sim.nodes[stale]) == [b"k%d" % k for k in range(5)]
    assert node(sim.nodes[stale]).counters["elected"] == 0


def test_a_leader_commits_an_earlier_terms_entry_only_with_one_of_its_own() -> None:
    # Raft's Figure 8: entry 2 (term 2) on a majority is not committed by a leader of term 3
    # until an entry of term 3 is, since a node holding a later-term entry could still win.
    n = RaftNode(1, VOTERS, config=RaftConfig(pre_vote=False), rng=random.Random(1),
                 hard_state=HardState(2, None, 1), entries=(Entry(1, 1), Entry(2, 2)))
    while n.role is Role.FOLLOWER:
        n.tick()
    n.step(VoteResponse(2, 1, 3, True))
    assert (n.role, n.log.last_index, n.log.last_term) == (Role.LEADER, 3, 3)
    n.step(AppendResponse(2, 1, 3, True, 2, 2, 0))
    assert n.commit_index == 1
    n.step(AppendResponse(2, 1, 3, True, 3, 3, 0))
    assert n.commit_index == 3


def test_a_follower_refuses_an_append_whose_previous_entry_differs() -> None:
    # Entries 2 and 3 came from a deposed leader of term 3; the leader of term 4 has entries
    # of term 2 there.
    n = RaftNode(2, VOTERS, config=CFG, hard_state=HardState(3, None, 1),
                 entries=(Entry(1, 1), Entry(3, 2), Entry(3, 3)))
    n.step(Append(1, 2, 4, 3, 2, (Entry(4, 4, b"x"),), 4, 6))
    # Our entries of term 3 cannot match a log whose entry 3 has term 2: retry after 1.
    assert n.ready().messages == (AppendResponse(2, 1, 4, False, 3, 1, 6),)
    assert n.log.last_index == 3
    n.step(Append(1, 2, 4, 1, 1, (Entry(2, 2), Entry(2, 3), Entry(4, 4)), 4, 7))
    rd = n.ready()
    assert rd.messages == (AppendResponse(2, 1, 4, True, 4, 4, 7),)
    assert rd.entries == (Entry(2, 2), Entry(2, 3), Entry(4, 4))  # 2 and 3 replaced
    assert n.commit_index == 4


# -- partitions: check-quorum and pre-vote -----------------------------------------------------


def test_a_partitioned_leader_cannot_commit_and_steps_down() -> None:
    sim = cluster(3)
    old = settled(sim)
    term = old.raft.term
    sim.partition(old.raft.id)
    index = old.raft.propose(b"lost")
    for _ in range(CFG.election_ticks):
        sim.step()
        assert old.raft.commit_index < index
    run_until(sim, lambda: old.raft.role is Role.FOLLOWER, steps=2 * CFG.election_ticks)
    assert old.raft.counters["stepped_down_no_quorum"] == 1
    assert old.raft.term == term  # stepping down alone raises no term
    with pytest.raises(NotLeader):
        old.raft.propose(b"late")
    # The majority elects a leader of its own and commits without the old one.
    run_until(sim, lambda: any(sn.raft.role is Role.LEADER for sn in sim.running()
                               if sn is not old))
    new = node(sim.leader())
    assert new.term > term
    new.propose(b"kept")
    sim.heal()
    run_until(sim, sim.converged)
    for sn in sim.running():
        assert applied_data(sn) == [b"kept"]


def test_pre_vote_keeps_a_rejoining_node_from_disrupting_the_leader() -> None:
    sim = cluster(4)
    ld = settled(sim)
    term = ld.raft.term
    cut_off = next(i for i in VOTERS if i != ld.raft.id)
    sim.partition(cut_off)
    for _ in range(10 * CFG.election_ticks):
        sim.step()
    lone = node(sim.nodes[cut_off])
    assert lone.counters["pre_campaigns"] >= 3
    assert lone.counters["campaigns"] == 0
    assert lone.term == term  # pre-votes never raised it
    sim.heal()
    run_until(sim, sim.converged)
    assert (node(sim.leader()).id, node(sim.leader()).term) == (ld.raft.id, term)


def test_without_pre_vote_a_rejoining_node_forces_a_new_term() -> None:
    sim = cluster(4, pre_vote=False)
    ld = settled(sim)
    term = ld.raft.term
    cut_off = next(i for i in VOTERS if i != ld.raft.id)
    sim.partition(cut_off)
    for _ in range(10 * CFG.election_ticks):
        sim.step()
    assert node(sim.nodes[cut_off]).term > term + 2
    sim.heal()
    run_until(sim, sim.converged)
    assert node(sim.leader()).term > term  # the contrast: the leader was deposed


def test_a_vote_request_inside_the_leader_lease_is_ignored() -> None:
    n = RaftNode(2, VOTERS, config=CFG)
    n.step(Append(1, 2, 1, 0, 0, (Entry(1, 1),), 1))
    n.ready()
    # Node 3 asks for term 2 while node 2 has just heard from leader 1: no answer, no new term.
    for pre in (True, False):
        n.step(RequestVote(3, 2, 2, 1, 1, pre))
        assert n.ready().messages == ()
    assert (n.term, n.counters["vote_ignored_in_lease"]) == (1, 2)
    # Once a whole election timeout passes without the leader, the request is answered.
    for _ in range(CFG.election_ticks):
        n.tick()
    n.ready()
    n.step(RequestVote(3, 2, 2, 1, 1, True))
    assert n.ready().messages == (VoteResponse(2, 3, 2, True, True),)
    assert n.term == 1  # a pre-vote changes no term


# -- reads -------------------------------------------------------------------------------------


def test_read_index_waits_for_a_heartbeat_round_acknowledged_by_a_majority() -> None:
    n = leader_by_hand()
    n.read_index(7)
    rd = n.ready()
    assert rd.reads == ()
    beats = [m for m in rd.messages if isinstance(m, Append)]
    assert {m.dst for m in beats} == {2, 3}
    seq = beats[0].seq
    assert seq > 0
    # An answer to a message sent before the read does not confirm it.
    n.step(AppendResponse(2, 1, 1, True, 1, 1, seq - 1))
    assert n.ready().reads == ()
    n.step(AppendResponse(3, 1, 1, True, 1, 1, seq))
    assert n.ready().reads == (ReadState(7, 1),)


def test_read_index_waits_for_the_leaders_first_commit() -> None:
    n = RaftNode(1, VOTERS, config=RaftConfig(pre_vote=False), rng=random.Random(1))
    while n.role is Role.FOLLOWER:
        n.tick()
    n.step(VoteResponse(3, 1, 1, True))
    n.advance(n.ready())
    n.read_index(1)  # the no-op is not committed: the commit index may be stale
    n.step(AppendResponse(2, 1, 1, True, 0, 0, 0))
    assert n.commit_index == 0
    assert n.ready().reads == ()
    n.step(AppendResponse(2, 1, 1, True, 1, 1, 0))  # the no-op commits, the read starts
    rd = n.ready()
    assert rd.reads == ()
    seq = max(m.seq for m in rd.messages if isinstance(m, Append))
    n.step(AppendResponse(3, 1, 1, True, 1, 1, seq))
    assert n.ready().reads == (ReadState(1, 1),)


def test_reads_fail_when_the_leader_steps_down_and_followers_refuse_them() -> None:
    n = leader_by_hand()
    n.read_index(9)
    n.step(AppendResponse(2, 1, 4, False, 0, 0, 0))  # a higher term: a new leader exists
    assert n.role is Role.FOLLOWER
    assert n.ready().failed_reads == (9,)
    with pytest.raises(NotLeader) as info:
        n.read_index(10)
    assert info.value.leader_hint is None
    n.step(Append(3, 1, 4, 1, 1, (), 1))
    with pytest.raises(NotLeader) as info:
        n.propose(b"x")
    assert info.value.leader_hint == 3


# -- learners ----------------------------------------------------------------------------------


def test_learners_apply_the_log_but_never_vote_or_count() -> None:
    sim = cluster(5, voters=3, learners=1)
    ld = settled(sim)
    learner = 4
    for k in range(3):
        ld.raft.propose(b"m%d" % k)
    run_until(sim, sim.converged)
    assert applied_data(sim.nodes[learner]) == [b"m0", b"m1", b"m2"]
    # Cut off for long, a learner never campaigns.
    sim.partition(learner)
    for _ in range(5 * CFG.election_ticks):
        sim.step()
    lone = node(sim.nodes[learner])
    assert (lone.role, lone.counters["pre_campaigns"], lone.counters["campaigns"]) == (
        Role.FOLLOWER, 0, 0)
    sim.heal()
    run_until(sim, sim.converged)
    # With both other voters down, the leader and the learner are no majority.
    leader = node(sim.leader())
    for v in VOTERS:
        if v != leader.id:
            sim.crash(v)
    index = leader.propose(b"alone")
    for _ in range(CFG.election_ticks - 1):
        sim.step()
    assert node(sim.nodes[learner]).log.last_index == index  # the learner holds it ...
    assert leader.commit_index < index  # ... and it does not commit
    # A voter drops vote traffic from a learner.
    leader.step(RequestVote(learner, leader.id, leader.term + 1, index, leader.term))
    assert leader.counters["dropped_vote_not_voter"] == 1


# -- snapshots ---------------------------------------------------------------------------------


def test_install_snapshot_brings_a_far_behind_follower_up() -> None:
    sim = cluster(6, snapshot_threshold=10)
    ld = settled(sim)
    behind = next(i for i in VOTERS if i != ld.raft.id)
    sim.crash(behind)
    for k in range(40):
        ld.raft.propose(b"s%d" % k)
        sim.step()
    run_until(sim, lambda: ld.raft.log.snapshot_index > sim.disks[behind].base
              + len(sim.disks[behind].entries))
    sim.restart(behind)
    run_until(sim, sim.converged)
    follower = sim.nodes[behind]
    assert node(follower).counters["snapshots_installed"] >= 1
    assert sim.report.snapshots_installed >= 1
    assert applied_data(follower) == [b"s%d" % k for k in range(40)]
    assert node(follower).log.snapshot_index > 0


def test_a_follower_installs_a_snapshot_past_its_log() -> None:
    n = RaftNode(2, VOTERS, config=CFG, hard_state=HardState(1, None, 1),
                 entries=(Entry(1, 1), Entry(1, 2)))
    n.step(InstallSnapshot(1, 2, 2, 10, 2, b"state@10", 3))
    rd = n.ready()
    assert rd.snapshot == Snapshot(10, 2, b"state@10")
    assert rd.messages == (SnapshotResponse(2, 1, 2, 10, 3),)
    assert rd.hard_state == HardState(2, None, 10)
    assert rd.committed == ()  # the snapshot is the state through 10
    assert (n.log.snapshot_index, n.log.last_index, n.commit_index) == (10, 10, 10)
    n.advance(rd)
    assert n.applied == 10
    n.step(Append(1, 2, 2, 10, 2, (Entry(2, 11, b"next"),), 11))
    rd = n.ready()
    assert rd.entries == rd.committed == (Entry(2, 11, b"next"),)


def test_a_snapshot_already_covered_by_the_commit_index_is_acknowledged_without_install() -> None:
    n = RaftNode(2, VOTERS, config=CFG, hard_state=HardState(1, None, 2),
                 entries=(Entry(1, 1), Entry(1, 2)))
    n.step(InstallSnapshot(1, 2, 1, 1, 1, b"old", 4))
    rd = n.ready()
    assert rd.snapshot is None
    assert rd.messages == (SnapshotResponse(2, 1, 1, 2, 4),)


def test_compact_needs_an_applied_index() -> None:
    n = RaftNode(1, (1,), config=RaftConfig(snapshot_threshold=2))
    while n.role is not Role.LEADER:
        n.tick()
    n.propose(b"a")
    with pytest.raises(ValueError, match="applied"):
        n.compact(2, b"state")
    n.advance(n.ready())
    assert n.should_compact
    n.compact(2, b"state")
    assert n.snapshot == Snapshot(2, 1, b"state")
    assert n.log.snapshot_index == 2
    assert not n.should_compact


# -- hostile input -----------------------------------------------------------------------------


def test_unknown_sources_and_other_addressees_are_ignored_and_counted() -> None:
    n = RaftNode(2, VOTERS, config=CFG)
    n.step(Append(99, 2, 7, 0, 0, (Entry(7, 1, b"x"),), 1))
    n.step(Append(1, 3, 7, 0, 0, (Entry(7, 1, b"x"),), 1))
    n.step(Append(2, 2, 7, 0, 0, (), 0))  # from itself
    assert (n.term, n.log.last_index) == (0, 0)
    assert n.counters["dropped_unknown_src"] == 2
    assert n.counters["dropped_wrong_dst"] == 1
    assert not n.has_ready()


def test_an_inconsistent_append_is_dropped() -> None:
    n = RaftNode(2, VOTERS, config=CFG)
    n.step(Append(1, 2, 1, 0, 0, (Entry(5, 1, b"from the future"),), 1))
    assert n.log.last_index == 0
    assert n.counters["dropped_implausible_append"] == 1


def test_garbage_bytes_never_reach_the_node() -> None:
    with pytest.raises(RaftDecodeError):
        decode(b"\x03garbage")


def _fed(n: RaftNode, msgs: list[Message]) -> None:
    for m in msgs:
        n.step(m)
        n.tick()
        n.advance(n.ready())


MEMBER_TRAFFIC = st.lists(messages(ids=st.sampled_from((1, 2, 3, 4, 99)),
                                   numbers=st.integers(0, 6)), max_size=30)


@settings(max_examples=150, deadline=None)
@given(MEMBER_TRAFFIC)
def test_a_follower_survives_any_traffic(msgs: list[Message]) -> None:
    n = RaftNode(2, VOTERS, learners=(4,), config=CFG,
                 hard_state=HardState(2, None, 2), entries=(Entry(1, 1), Entry(2, 2)))
    _fed(n, msgs)
    assert n.commit_index <= n.log.last_index


@settings(max_examples=150, deadline=None)
@given(MEMBER_TRAFFIC)
def test_a_leader_survives_any_traffic(msgs: list[Message]) -> None:
    n = leader_by_hand()
    n.propose(b"p")
    _fed(n, msgs)
    assert n.commit_index <= n.log.last_index


def test_config_knobs_are_validated_by_name() -> None:
    with pytest.raises(UserError, match="heartbeat_ticks"):
        RaftConfig(election_ticks=5, heartbeat_ticks=5)
    with pytest.raises(UserError, match="election_ticks"):
        RaftConfig(election_ticks=1)
    with pytest.raises(UserError, match="max_append_entries"):
        RaftConfig(max_append_entries=0)
    with pytest.raises(UserError, match="max_inflight"):
        RaftConfig(max_inflight=0)
    with pytest.raises(UserError, match="snapshot_threshold"):
        RaftConfig(snapshot_threshold=-1)


def test_membership_is_validated() -> None:
    with pytest.raises(ValueError, match="neither"):
        RaftNode(9, VOTERS)
    with pytest.raises(ValueError, match="distinct"):
        RaftNode(1, VOTERS, learners=(3,))
    with pytest.raises(ValueError, match="at least one voter"):
        RaftNode(1, ())
    with pytest.raises(ValueError, match="past the last entry"):
        RaftNode(1, VOTERS, hard_state=HardState(1, None, 3))
