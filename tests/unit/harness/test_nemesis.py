"""The nemesis's pure halves: schedules drawn from a seed, and the checker (no I/O)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.nemesis import checker
from harness.nemesis.checker import (
    Commit,
    CommittedRead,
    Delivery,
    History,
    LeaderSeen,
    check,
)
from harness.nemesis.schedule import AT_LEADER, LEADER, OPS, _Model, generate, parse


@given(st.integers(0, 2**32), st.integers(1, 5), st.floats(5, 120))
def test_a_schedule_is_the_seeds_and_every_step_can_be_applied(seed, brokers, duration):
    steps = generate(seed, brokers, duration)
    assert steps == generate(seed, brokers, duration)
    model = _Model()
    last = 0.0
    for s in steps:
        assert s.at_s >= last
        last = s.at_s
        if s.target == LEADER:  # resolved when it runs; the model does not know whom
            assert s.op in AT_LEADER and brokers > 1
            continue
        assert s.op in OPS and 0 <= s.target < brokers
        if s.op == "restart":
            assert s.target in model.killed and s.target not in model.isolated
        if s.op in ("pause", "kill", "isolate", "cut"):
            assert s.target not in model.killed
        if s.op == "pause":
            assert s.target not in model.paused
        if s.op == "resume":
            assert s.target in model.paused
        if s.op == "heal":
            assert s.target in model.isolated
        if s.op in ("cut", "uncut"):
            assert 0 <= s.other < brokers and s.other != s.target
            assert ((s.target, s.other) in model.cuts) == (s.op == "uncut")
        model.apply(s)
    # The last steps undo everything: every broker runs, every link is up.
    assert not (model.killed or model.paused or model.isolated or model.cuts)
    assert all(s.at_s <= round(duration, 1) for s in steps)


def test_schedules_compose_faults_and_aim_at_leaders():
    steps = [s for seed in range(20) for s in generate(seed, 3, 60)]
    assert {s.op for s in steps} == set(OPS)
    assert {s.op for s in steps if s.target == LEADER} == set(AT_LEADER)


@given(st.integers(0, 2**32))
def test_a_printed_schedule_parses_back(seed):
    steps = generate(seed, 3, 30)
    assert parse(", ".join(map(str, steps))) == steps


def test_a_malformed_schedule_is_refused_in_one_line():
    for bad in ("3.0s kill", "3.0s explode 1", "x kill 1", "3.0s cut 1"):
        with pytest.raises(ValueError, match="not a step"):
            parse(bad)


def test_a_bad_schedule_request_is_refused():
    with pytest.raises(ValueError):
        generate(1, 0, 10)


def clean() -> History:
    h = History(1)
    h.acked = {0: [("p0-0000000", 0), ("p0-0000001", 1), ("p0-0000002", 2)]}
    h.final = {0: [(0, "p0-0000000"), (1, "p0-0000001"), (2, "p0-0000002")]}
    h.deliveries = [Delivery(1.0, 0, 0, "p0-0000000"), Delivery(1.0, 0, 1, "p0-0000001"),
                    Delivery(3.0, 0, 2, "p0-0000002")]
    h.commits = [Commit(2.0, 0, 2)]
    h.committed_reads = [CommittedRead(1.5, 0, -1), CommittedRead(2.5, 0, 2)]
    h.leaders = [LeaderSeen(1.0, 0, 0, 0, 0), LeaderSeen(1.0, 1, 0, 1, 1)]
    return h


def test_a_clean_history_has_no_violation():
    assert checker.counts(check(clean())) == dict.fromkeys(checker.KINDS, 0)


def test_a_lost_record_is_found_and_named():
    h = clean()
    h.final = {0: [(0, "p0-0000000"), (1, "p0-0000001")]}
    found = check(h)
    assert found["lost"] == ["p0: p0-0000002 (acknowledged at offset 2)"]


def test_an_offset_written_over_is_found():
    h = clean()
    h.final = {0: [(0, "p0-0000000"), (1, "p0-0000001"), (2, "p0-0000009")]}
    found = check(h)
    assert len(found["rewritten"]) == 1 and "p0@2" in found["rewritten"][0]
    assert len(found["lost"]) == 1


def test_records_out_of_order_are_found():
    h = clean()
    h.acked = {0: [("p0-0000000", 0), ("p0-0000002", 1), ("p0-0000001", 2)]}
    h.final = {0: [(0, "p0-0000000"), (1, "p0-0000002"), (2, "p0-0000001")]}
    h.deliveries = [Delivery(1.0, 0, i, v) for v, i in h.acked[0]]
    assert checker.counts(check(h))["reordered"] == 1


def test_a_second_copy_is_a_duplicate_not_a_reorder():
    h = clean()
    # The record at offset 1 appended again after offset 2: a retry not answered from its
    # first copy.
    h.final = {0: [*h.final[0], (3, "p0-0000001")]}
    found = check(h)
    assert found["duplicated"] == ["p0: p0-0000001 again at offset 3"]
    assert checker.counts(found)["reordered"] == 0


def test_a_record_never_handed_to_the_group_is_found():
    h = clean()
    h.deliveries = h.deliveries[:2]
    assert check(h)["unconsumed"] == ["p0: p0-0000002"]


def test_consuming_below_an_acknowledged_commit_is_found_only_after_it_returned():
    h = clean()
    # A poll that began before the commit returned may hand out anything.
    h.deliveries.append(Delivery(1.9, 0, 0, "p0-0000000"))
    assert checker.counts(check(h))["consumed_below_commit"] == 0
    h.deliveries.append(Delivery(2.1, 0, 1, "p0-0000001", member=1))
    found = check(h)["consumed_below_commit"]
    assert len(found) == 1 and "member 1" in found[0] and "commit of 2" in found[0]


def test_a_member_reading_on_from_its_own_position_below_a_commit_is_a_stale_member():
    """The classic protocol fences a member's commits, not its fetches: a member the group
    rebalanced without, still reading on from where it was, is counted apart (and claimed by
    no architecture); one that starts reading a partition below the commit is not."""
    h = clean()
    h.deliveries = [Delivery(1.0, 0, 0, "p0-0000000", member=0),
                    Delivery(1.0, 0, 1, "p0-0000001", member=1),
                    Delivery(1.2, 0, 2, "p0-0000002", member=1)]
    h.commits = [Commit(2.0, 0, 3, member=1)]
    h.deliveries.append(Delivery(2.5, 0, 1, "p0-0000001", member=0))  # on from offset 0
    found = check(h)
    assert len(found["stale_member_read"]) == 1 and not found["consumed_below_commit"]
    assert "stale_member_read" not in checker.claims("zk")
    h.deliveries.append(Delivery(2.6, 0, 0, "p0-0000000", member=2))  # starts below it
    assert len(check(h)["consumed_below_commit"]) == 1


def test_a_committed_offset_read_back_below_an_acknowledged_one_is_found():
    h = clean()
    h.committed_reads.append(CommittedRead(3.0, 0, 1))
    h.committed_reads.append(CommittedRead(3.1, 0, -1))  # gone altogether
    assert checker.counts(check(h))["offsets_backwards"] == 2


def test_two_leaders_of_one_epoch_are_found():
    h = clean()
    h.leaders.append(LeaderSeen(2.0, 2, 0, 1, 2))
    h.leaders.append(LeaderSeen(2.0, 2, 0, 2, -1))  # no leader: not a claim
    assert check(h)["two_leaders_one_epoch"] == ["p0 epoch 1: [1, 2]"]


def test_dsbs_claims_no_offset_order_and_nobody_claims_liveness():
    assert "offsets_backwards" not in checker.claims("dsbs")
    assert "lost" in checker.claims("dsbs")
    assert set(checker.claims("zk")) == set(checker.KINDS) - {"unconsumed", "stale_member_read"}
