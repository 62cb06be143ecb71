"""The transactions nemesis's pure halves: schedules aimed at coordinators, and the checks of
a transactional history (harness/nemesis/txn_checker.py; no I/O)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.nemesis import txn_checker
from harness.nemesis.schedule import AT_LEADER, COORDINATOR, LEADER, generate, parse
from harness.nemesis.txn_checker import COPY_PREFIX, Txn, TxnHistory, check


def test_aimed_faults_hit_coordinators_and_leaders_when_asked():
    steps = [s for seed in range(20) for s in generate(seed, 3, 60, aims=(LEADER, COORDINATOR))]
    aimed = [s for s in steps if s.target in (LEADER, COORDINATOR)]
    assert {s.target for s in aimed} == {LEADER, COORDINATOR}
    assert {s.op for s in aimed if s.target == COORDINATOR} == set(AT_LEADER)
    assert all(s.lasts_s > 0 for s in aimed)


# Two schedules as generate() drew them before aims existed (commit dce0be8).
BEFORE_AIMS = {
    1: "3.0s kill leader for 1.9s, 4.7s cut 1->2, 8.6s kill leader for 5.4s, 9.8s kill 2, "
       "12.8s pause leader for 3.8s, 13.1s kill leader for 0.6s, 15.0s cut 0->2, 15.6s pause 0, "
       "16.3s pause 1, 16.9s pause leader for 4.7s, 24.5s uncut 0->2, 30.0s resume 0, "
       "30.0s resume 1, 30.0s uncut 1->2, 30.0s restart 2",
    270179489: "3.0s kill leader for 4.2s, 10.6s pause 1, 12.4s isolate 0, 14.2s cut 2->0, "
               "15.3s heal 0, 19.8s cut 2->1, 22.5s cut 1->2, 23.1s kill 2, "
               "23.3s pause leader for 1.4s, 25.7s uncut 1->2, 29.2s cut leader->2 for 2.1s, "
               "30.0s resume 1, 30.0s uncut 2->0, 30.0s uncut 2->1, 30.0s restart 2",
}


def test_one_aim_keeps_the_queue_workloads_schedules():
    # The seeds printed by earlier queue runs replay as they were: one aim draws nothing.
    for seed, printed in BEFORE_AIMS.items():
        assert ", ".join(map(str, generate(seed, 3, 30))) == printed
        assert generate(seed, 3, 30, aims=(LEADER,)) == parse(printed)


@given(st.integers(0, 2**32))
def test_a_schedule_aimed_at_coordinators_parses_back(seed):
    steps = generate(seed, 3, 30, aims=(LEADER, COORDINATOR))
    assert parse(", ".join(map(str, steps))) == steps


def test_an_unknown_aim_is_refused():
    with pytest.raises(ValueError, match="aims"):
        generate(1, 3, 10, aims=(7,))


def txn(name: str, outcome: str, partitions: int = 2) -> Txn:
    return Txn(name, {p: [f"{name}-p{p}-0", f"{name}-p{p}-1"] for p in range(partitions)},
               outcome)


def visible(*txns: Txn) -> dict[int, list[tuple[int, str]]]:
    out: dict[int, list[tuple[int, str]]] = {}
    for t in txns:
        for p, values in t.records.items():
            log = out.setdefault(p, [])
            log.extend((len(log), v) for v in values)
    return out


def copied(source: dict[int, list[tuple[int, str]]]) -> dict[int, list[tuple[int, str]]]:
    return {p: [(o, COPY_PREFIX + v) for o, v in log] for p, log in source.items()}


def recopied(h: TxnHistory) -> None:
    """The worker copied exactly what is visible in the source, once."""
    h.sink = copied(h.source)
    h.copied = {v for log in h.source.values() for _, v in log}


def history() -> TxnHistory:
    """Committed t1 and t3, aborted t2, t4 unknown and committed, t5 unknown and aborted;
    everything visible copied once."""
    t1, t2, t3 = txn("t1", "committed"), txn("t2", "aborted"), txn("t3", "committed")
    t4, t5 = txn("t4", "unknown"), txn("t5", "unknown")
    h = TxnHistory(txns=[t1, t2, t3, t4, t5])
    h.source = visible(t1, t3, t4)
    recopied(h)
    return h


def violations(h: TxnHistory) -> dict[str, list[str]]:
    return {k: v for k, v in check(h).items() if v}


def test_a_clean_history_has_no_violation():
    assert violations(history()) == {}


def test_a_transaction_visible_in_some_partitions_only_is_torn():
    h = history()
    h.source[1] = [(o, v) for o, v in h.source[1] if not v.startswith("t3-")]
    recopied(h)
    got = violations(h)
    assert list(got) == ["torn"] and got["torn"][0].startswith("t3 (committed): 2 of 4")


def test_an_unknown_end_may_go_either_way_but_not_half():
    h = history()
    h.source[0] = [(o, v) for o, v in h.source[0] if v != "t4-p0-1"]
    recopied(h)
    assert list(violations(h)) == ["torn"]


def test_acknowledged_ends_hold():
    h = history()
    h.source = visible(h.txns[0], h.txns[1])  # t2's abort visible, t3's commit gone
    recopied(h)
    got = violations(h)
    assert set(got) == {"commit_lost", "abort_visible"}
    assert got["commit_lost"] == ["t3: committed, none of 4 visible"]


def test_a_record_visible_twice_is_a_duplicate():
    h = history()
    h.source[0].append((99, "t1-p0-0"))
    assert set(violations(h)) == {"duplicated"}


def test_the_copy_is_exactly_once():
    h = history()
    h.sink[0].append((99, COPY_PREFIX + "t1-p0-0"))  # copied twice
    h.sink[1].append((100, COPY_PREFIX + "t2-p1-0"))  # an aborted record copied
    lost = h.sink[0].pop(1)  # an acknowledged copy gone (t1-p0-1)
    got = violations(h)
    assert set(got) == {"copied_twice", "copied_phantom", "copy_lost"}
    assert got["copy_lost"] == [f"{lost[1].removeprefix(COPY_PREFIX)}: its copy's commit "
                                "was acknowledged"]


def test_a_record_never_copied_is_liveness_not_safety():
    h = history()
    h.sink[0] = h.sink[0][:1]
    h.copied = {v.removeprefix(COPY_PREFIX) for log in h.sink.values() for _, v in log}
    got = violations(h)
    assert set(got) == {"uncopied"}
    assert "uncopied" not in txn_checker.claims("zk")


def test_a_partition_left_open_is_hung():
    h = history()
    h.hung = ["txn-in p0: stable 4, end 9"]
    assert violations(h) == {"hung": ["txn-in p0: stable 4, end 9"]}
    assert "hung" in txn_checker.claims("raft")


def test_dsbs_claims_its_data_path_and_counts_lost_decisions():
    # One failure at a time keeps a DSBS decision (docs/dsbs-metadata.md); the nemesis
    # overlaps failures, so a torn transaction there is counted, not a failed run.
    assert txn_checker.claims("dsbs") == ("duplicated",)
    assert set(txn_checker.claims("zk")) == set(txn_checker.SAFETY)


def test_offsets_left_pending_are_counted_as_liveness():
    h = history()
    h.offsets_pending = ["ctp-x p1: offset pending in a transaction (coordinator 2)"]
    assert list(violations(h)) == ["offsets_pending"]
    assert not any("offsets_pending" in txn_checker.claims(a) for a in ("zk", "raft", "dsbs"))


class FakeBroker:
    def __init__(self, node_id: int) -> None:
        self.node_id = node_id
        self.paused = False
        self.isolated = False

    @property
    def state(self) -> str:  # as BrokerProcess.state says it, with no process to exit
        return "paused" if self.paused else "isolated" if self.isolated else "running"


class FakeCluster:
    """What Nemesis.apply touches of a ProcessCluster: brokers and their faults, no process."""

    def __init__(self, n: int) -> None:
        self.brokers = [FakeBroker(i) for i in range(n)]
        self.calls: list[str] = []

    def broker(self, node_id: int) -> FakeBroker:
        return self.brokers[node_id]

    def pause_broker(self, node_id: int) -> None:
        self.calls.append(f"pause {node_id}")
        self.brokers[node_id].paused = True

    def resume_broker(self, node_id: int) -> None:
        self.calls.append(f"resume {node_id}")
        self.brokers[node_id].paused = False

    def cut_link(self, src: int, dst: int) -> None:
        self.calls.append(f"cut {src}->{dst}")


def test_an_aimed_fault_is_undone_only_when_it_did_something():
    from harness.nemesis.run import Nemesis
    from harness.nemesis.schedule import Step

    cluster = FakeCluster(3)
    nemesis = Nemesis(cluster, "t", coordinator=lambda: 2)  # type: ignore[arg-type]
    assert nemesis.apply(Step(1.0, "pause", COORDINATOR, lasts_s=2.0)) == "pause 2"
    assert nemesis.undos == [Step(3.0, "resume", 2)]
    # Already paused: nothing done, so no second undo (it would resume another step's pause).
    assert nemesis.apply(Step(1.5, "pause", COORDINATOR, lasts_s=4.0)).startswith("skipped")
    assert nemesis.undos == [Step(3.0, "resume", 2)]
    # A cut whose other end is the aimed broker itself is skipped, with no undo either.
    assert nemesis.apply(Step(2.0, "cut", COORDINATOR, 2, lasts_s=1.0)).startswith("skipped")
    assert nemesis.apply(Step(2.0, "cut", COORDINATOR, 0, lasts_s=1.0)) == "cut 2->0"
    assert nemesis.undos[-1] == Step(3.0, "uncut", 2, 0)
    assert cluster.calls == ["pause 2", "cut 2->0"]
    # Nobody known: skipped.
    lost = Nemesis(cluster, "t", coordinator=lambda: None)  # type: ignore[arg-type]
    assert lost.apply(Step(1.0, "kill", COORDINATOR, lasts_s=1.0)) == (
        "skipped: no coordinator known")
