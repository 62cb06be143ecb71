"""Fault injection, the pure parts: the workload schema, the schedule's sessions, the action
vocabulary, and the arithmetic that turns monitor samples, acknowledgements and group
histories into detection, rejoin, gaps and group recovery."""

from __future__ import annotations

import pytest

from brokers.core.errors import UserError
from harness.cluster import fault_actions as faults
from harness.driver import kinds, plan
from harness.studies.faults import FAULT_STUDY
from harness.studies.faults.session import (
    Sample,
    attribute,
    detection_time,
    group_recovery,
    leaderless_at_end,
    rejoin_time,
)
from harness.workload import WorkloadError, parse_workload
from workloads.group import assign_range, stable_intervals
from workloads.timeline import Timeline
from workloads.verify import Verifier, fill

CELLS = [{"table": "faults", "msg_sizes": [32], "batches": [20]}]


def workload(cases, **top):
    doc = {"name": "f", "cells": CELLS, "network": "netns",
           "faults": {"rate": 1000, "duration_s": 10, "cases": cases}, **top}
    return parse_workload(doc, "f.yaml")


def case(*steps, name="c"):
    return {"name": name, "schedule": list(steps)}


KILL = {"at_s": 1, "action": "kill", "broker": "leader:0"}
RESTART = {"at_s": 5, "action": "restart", "broker": "leader:0"}


def test_a_fault_workload_parses_into_steps_with_targets():
    wl = workload([case(KILL, RESTART), case({"at_s": 1, "action": "stop-zookeeper"},
                                             {"at_s": 2, "action": "start-zookeeper"},
                                             name="zk")])
    assert wl.scenarios == ("faults",)
    fp = wl.study(FAULT_STUDY)
    assert fp is not None and fp.rate == 1000
    kill_case, zk_case = fp.cases
    assert [s.action for s in kill_case.steps] == ["kill", "restart"]
    assert kill_case.steps[0].target == "leader:0" and not kill_case.services
    assert zk_case.services == {"zookeeper"} and zk_case.steps[0].target == "zookeeper"


@pytest.mark.parametrize("cases,top,needle", [
    ([case({"at_s": 1, "action": "explode", "broker": 0})], {}, "unknown fault 'explode'"),
    ([case({"at_s": 10, "action": "kill", "broker": 0})], {}, "within [0, 10)"),
    ([case({"at_s": -1, "action": "kill", "broker": 0})], {}, "at_s"),
    ([case({"at_s": 1, "action": "resume", "broker": 0})], {}, "without the fault"),
    ([case({"at_s": 1, "action": "pause", "broker": 0},
           {"at_s": 2, "action": "heal", "broker": 0})], {}, "without the fault"),
    ([case({"at_s": 1, "action": "kill", "broker": "leader:3"})], {}, "partitions 0..2"),
    ([case({"at_s": 1, "action": "kill", "broker": 5})], {}, "no broker 5"),
    ([case({"at_s": 1, "action": "kill", "broker": "boss"})], {}, "leader:P, controller"),
    ([case({"at_s": 1, "action": "kill"})], {}, "needs a broker"),
    ([case({"at_s": 1, "action": "kill-zookeeper"})], {}, "server index"),
    ([case({"at_s": 1, "action": "kill-zookeeper", "server": 1})], {}, "between 0 and 0"),
    ([case({"at_s": 1, "action": "stop-zookeeper", "broker": 1})], {}, "not on a broker"),
    ([case({"at_s": 1, "action": "partition", "broker": 0})], {"network": "loopback"},
     "needs network: netns"),
    ([case(RESTART, KILL)], {}, "time order"),
    ([case(KILL, RESTART), case(KILL, RESTART)], {}, "listed twice"),
    ([case({"at_s": 1, "action": "kill", "broker": 0})], {"scenarios": ["split"]},
     "faults sessions only"),
    ([], {}, "non-empty list"),
])
def test_bad_fault_schedules_fail_in_one_line_naming_the_key(cases, top, needle):
    with pytest.raises(WorkloadError) as err:
        workload(cases, **top)
    text = str(err.value)
    assert text.startswith("f.yaml: ") and "\n" not in text
    assert needle in text, text


def test_a_zookeeper_case_has_no_dsbs_session_and_sides_alternate():
    wl = workload([case(KILL, RESTART, name="kill"),
                   case({"at_s": 1, "action": "stop-zookeeper"},
                        {"at_s": 2, "action": "start-zookeeper"}, name="zk")], tries=2)
    sides = plan.sides(wl, None, ("zk", "dsbs"))
    sessions = [s for e in kinds.schedule(wl, sides) for s in e.sessions]
    got = [(s.try_no, s.case.name, s.side.arch) for s in sessions]
    assert got == [(1, "kill", "zk"), (1, "kill", "dsbs"), (1, "zk", "zk"),
                   (2, "kill", "dsbs"), (2, "kill", "zk"), (2, "zk", "zk")]
    assert {s.scenario for s in sessions} == {"faults"}



def test_a_voter_case_runs_only_where_there_is_a_quorum():
    voter = case({"at_s": 1, "action": "kill", "broker": "voter"},
                 {"at_s": 5, "action": "restart", "broker": "voter"}, name="voter")
    # Leadership from the cache: the one policy real Kafka applies.
    wl = workload([case(KILL, RESTART, name="kill"), voter],
                  policies={"metadata_check": "cached"})
    fp = wl.study(FAULT_STUDY)
    assert fp is not None and fp.cases[1].needs_quorum and not fp.cases[0].needs_quorum
    sides = plan.sides(wl, None, ("zk", "kafka-kraft"))
    got = {(s.case.name, s.side.arch) for e in kinds.schedule(wl, sides) for s in e.sessions}
    assert got == {("kill", "zk"), ("kill", "kafka-kraft"), ("voter", "kafka-kraft")}


class FakeCluster:
    """Records which ProcessCluster method a fault name reaches."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple]] = []

    def __getattr__(self, name):
        def call(*args):
            self.calls.append((name, args))
            # act_on_service answers with the servers it acted on.
            return "all" if args[-1:] == (None,) else str(args[-1]) if args else None
        return call


@pytest.mark.parametrize("action,kw,call,line", [
    ("kill", {"broker": 1}, ("kill_broker", (1,)), "killed=1"),
    ("pause", {"broker": 2}, ("pause_broker", (2,)), "paused=2"),
    ("resume", {"broker": 2}, ("resume_broker", (2,)), "resumed=2"),
    ("restart", {"broker": 0}, ("restart_broker", (0,)), "restarted=0"),
    ("partition", {"broker": 1}, ("isolate_broker", (1,)), "partitioned=1"),
    ("heal", {"broker": 1}, ("heal_broker", (1,)), "healed=1"),
    ("stop-zookeeper", {}, ("act_on_service", ("zookeeper", "stop-zookeeper", None)),
     "stopped_zookeeper=all"),
    ("start-zookeeper", {}, ("act_on_service", ("zookeeper", "start-zookeeper", None)),
     "started_zookeeper=all"),
    ("start-zookeeper", {"server": 2}, ("act_on_service", ("zookeeper", "start-zookeeper", 2)),
     "started_zookeeper=2"),
    ("kill-zookeeper", {"server": 1}, ("act_on_service", ("zookeeper", "kill-zookeeper", 1)),
     "killed_zookeeper=1"),
])
def test_each_fault_reaches_its_cluster_operation(action, kw, call, line):
    c = FakeCluster()
    assert faults.apply(c, action, **kw) == line
    assert c.calls == [call]


@pytest.mark.parametrize("message,needle", [
    ({"action": "kill"}, "needs --broker"),
    ({"action": "kill-zookeeper"}, "needs --server"),
    ({"action": "nap", "broker": 1}, "unknown fault"),
    ({"action": "kill", "broker": "1"}, "must be an integer"),
    ({}, "needs an action"),
])
def test_bad_fault_requests_are_refused(message, needle):
    with pytest.raises(UserError, match=needle):
        faults.handle(FakeCluster(), message)


# --- the arithmetic ---------------------------------------------------------------------------


def s(t, node, brokers=(0, 1, 2), leaders=(0, 1, 2), ok=True):
    return Sample(t, node, ok, frozenset(brokers) if ok else frozenset(),
                  tuple(leaders) if ok else ())


def test_detection_waits_for_the_last_survivor_and_ignores_the_victim():
    # Node 2 dies at t=1: survivor 0 stops listing it at 1.5, survivor 1 at 1.9.
    samples = [s(0.5, 0), s(0.5, 1), s(1.2, 0), s(1.4, 1), s(1.5, 0, (0, 1)),
               s(1.9, 1, (0, 1)), s(2.5, 2, ok=False), s(2.6, 0, (0, 1)), s(3.0, 1, (0, 1))]
    assert detection_time(samples, 2, [0, 1], 1.0) == pytest.approx(0.9)
    assert detection_time(samples, 2, [0, 1], 2.0) == pytest.approx(1.0)
    # A survivor that never stopped listing it: not detected.
    assert detection_time([s(1.5, 0, (0, 1))], 1, [0, 2], 1.0) is None


def test_rejoin_needs_every_broker_whole_at_once():
    samples = [s(5.1, 0), s(5.2, 1, leaders=(0, -1, 2)), s(5.3, 2), s(5.6, 1)]
    assert rejoin_time(samples, [0, 1, 2], 3, 5.0) == pytest.approx(0.6)
    assert rejoin_time(samples[:3], [0, 1, 2], 3, 5.0) is None
    # A broker that lists fewer partitions than the topic has is not whole.
    assert rejoin_time([s(1, 0, leaders=(0, 1))], [0], 3, 0.0) is None


def test_stable_intervals_need_every_member_on_one_generation():
    a = [(1.0, True, 1), (3.0, False, 1), (3.5, True, 2)]
    b = [(1.2, True, 1), (3.1, False, 1), (3.8, True, 2)]
    assert stable_intervals([a, b], 10.0) == [(1.2, 3.0), (3.8, 10.0)]
    # Stable, but on different generations: not a settled group.
    assert stable_intervals([[(1.0, True, 1)], [(1.0, True, 2)]], 5.0) == []


def test_group_recovery_counts_only_instability_after_the_fault():
    stable = [(0.0, 4.0), (5.5, 7.0), (7.2, 20.0)]
    recovery, unstable = group_recovery(stable, fault_at=3.0, closer_at=10.0, start=0.0,
                                        end=20.0)
    assert recovery == pytest.approx(4.2)  # the last unsettled stretch before the closer
    assert unstable == pytest.approx(1.7)
    assert group_recovery([(0.0, 20.0)], 3.0, 10.0, 0.0, 20.0) == (0.0, 0.0)


def test_timeline_buckets_and_the_longest_silence_per_partition():
    tl = Timeline(t0=100.0, bucket_s=0.5)
    for t in (100.1, 100.2, 100.7):
        tl.add("produced", 0, 20, now=t)
    for t in (100.1, 103.0, 103.1):
        tl.add("produced", 1, 20, now=t)
    tl.add("consumed", 0, 40, now=101.6)
    tl.add("commits", -1, 1, now=101.6)
    rows = tl.rows()
    assert rows[0] == (0.0, 60, 0, 0) and rows[1] == (0.5, 20, 0, 0)
    assert rows[3] == (1.5, 0, 40, 1) and rows[6] == (3.0, 40, 0, 0)
    gap = tl.longest_gap("produced", until=103.2)
    assert gap is not None and gap.partition == 1 and gap.seconds == pytest.approx(2.9)
    # A partition silent since its last ack until the end of production counts that silence.
    tail = tl.longest_gap("produced", until=106.0)
    assert tail is not None and tail.partition == 0 and tail.seconds == pytest.approx(5.3)
    # Unless that partition's producer was done by then: its end is its own, not the last
    # producer's (a producer that sent all its records early is not a stalled partition).
    ends = tl.longest_gap("produced", until={0: 100.7, 1: 106.0})
    assert ends is not None and ends.partition == 1 and ends.seconds == pytest.approx(2.9)
    assert tl.longest_gap("nothing") is None


def test_range_assignment_is_kafkas():
    assert assign_range(["b", "a", "c"], [0, 1, 2, 3]) == {"a": [0, 1], "b": [2], "c": [3]}
    assert assign_range(["a", "b"], [0]) == {"a": [0], "b": []}


def test_loss_is_attributed_per_partition_and_a_leaderless_one_hides_nothing():
    """Partition 0 ends without a leader (its broker never came back) and 10 of its
    acknowledged records were not read: unreachable, not lost. Partition 1 kept a leader and
    5 of its acknowledged records were not read: lost. Before format 9, the leaderless
    partition made the whole session's 15 unread records "unreachable" and lost = 0."""
    v = Verifier()
    acked = bytearray()
    for p in (0, 1, 2):  # 20 records per partition, in that order
        acked += fill(p, 20)
    v.expect(7, acked)
    v.add_batch(0, [7] * 10, list(range(0, 10)))
    v.add_batch(1, [7] * 15, list(range(20, 35)))
    v.add_batch(2, [7] * 20, list(range(40, 60)))
    v.add_batch(2, [7], [45])  # one duplicate, in partition 2
    samples = [Sample(t=1.0, node=0, ok=True, leaders=(0, 1, 2)),
               Sample(t=2.0, node=1, ok=True, leaders=(-1, 1, 2)),
               Sample(t=2.0, node=2, ok=False)]
    assert leaderless_at_end(samples, 3) == {0}
    rows = attribute(v.report(), leaderless_at_end(samples, 3))
    assert rows == [
        {"partition": 0, "leader_at_end": False, "acked": 20, "lost": 0, "unreachable": 10,
         "duplicates": 0},
        {"partition": 1, "leader_at_end": True, "acked": 20, "lost": 5, "unreachable": 0,
         "duplicates": 0},
        {"partition": 2, "leader_at_end": True, "acked": 20, "lost": 0, "unreachable": 0,
         "duplicates": 1},
    ]


def test_a_broker_that_did_not_cover_the_topic_leaves_every_partition_leaderless():
    samples = [Sample(t=1.0, node=0, ok=True, leaders=(0, 1)),
               Sample(t=1.0, node=1, ok=True, leaders=())]
    assert leaderless_at_end(samples, 2) == {0, 1}
    assert leaderless_at_end([Sample(t=1.0, node=0, ok=True, leaders=(0, 1))], 2) == set()
