"""Metadata scenarios, the pure parts: the workload schema and its limits (a case asking for
more than the brokers or the machine allow is one line before anything starts), the schedule
(fresh clusters per size and try, architectures alternating), and what a Metadata answer says
about convergence."""

from __future__ import annotations

import pytest

import twinbench_common.runlog as fmt
from brokers.core.protocol.messages.metadata import (
    MetadataResponse,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from harness.driver import kinds, plan
from harness.studies.metadata import METADATA_STUDY
from harness.studies.metadata import SCENARIO as METADATA_SCENARIO
from harness.studies.metadata.schema import MACHINE_MAX_PARTITIONS
from harness.studies.metadata.session import complete_topics, ms_summary, per_second
from harness.workload import WorkloadError, load_workload, parse_workload

STORM = {"name": "storm", "kind": "topic-storm", "n": [1, 10], "partitions": 2}
SCALE = {"name": "scale", "kind": "partition-scale", "n": [1, 100]}


def workload(*cases, **plan_keys):
    return parse_workload({"name": "m", "metadata": {"cases": list(cases), **plan_keys}},
                          "m.yaml")


def test_a_metadata_workload_needs_no_cells_and_restarts_per_try():
    wl = workload(STORM, SCALE, idle_s=0)
    assert wl.cells == () and wl.scenarios == (METADATA_SCENARIO,) and wl.restart == "try"
    md = wl.study(METADATA_STUDY)
    assert md is not None and md.idle_s == 0 and md.max_topics == 1000
    storm, scale = md.cases
    assert storm.sizes == (1, 10) and storm.partitions == 2
    assert storm.total_partitions(10) == 20 and storm.topics(10) == 10
    assert scale.total_partitions(100) == 100 and scale.topics(100) == 1


@pytest.mark.filesystem
@pytest.mark.parametrize("name", ["metadata", "metadata-smoke"])
def test_shipped_metadata_workloads_load(name):
    wl = load_workload(name).workload
    assert wl.study(METADATA_STUDY) is not None and wl.name == name
    kinds = {c.kind for c in wl.study(METADATA_STUDY).cases}
    assert {"topic-storm", "partition-scale"} <= kinds


@pytest.mark.parametrize("doc,expected", [
    ({"metadata": {"cases": [{**SCALE, "n": [2000]}]}},
     "m.yaml: metadata.cases[0].n: 2000 partitions in one topic, but the brokers allow "
     "max_partitions_per_topic=1000 (raise metadata.max_partitions_per_topic, at most 10,000)"),
    ({"metadata": {"cases": [{**STORM, "n": [1001], "partitions": 1}]}},
     "m.yaml: metadata.cases[0].n: 1001 topics, but the brokers allow max_topics=1000 "
     "(raise metadata.max_topics, at most 10,000)"),
    ({"metadata": {"max_topics": 5000, "cases": [{**STORM, "n": [5000], "partitions": 4}]}},
     "m.yaml: metadata.cases[0].n: 5000 x 4 partitions = 20,000 partitions; this harness "
     "creates at most 10,000 in one session"),
    ({"metadata": {"max_partitions_per_topic": 20000, "cases": [SCALE]}},
     "m.yaml: metadata.max_partitions_per_topic: must be an integer between 1 and 10000, "
     "got 20000"),
    ({"metadata": {"cases": [{**STORM, "partitions": 1001}]}},
     "m.yaml: metadata.cases[0].partitions: 1001 partitions in one topic, but the brokers "
     "allow max_partitions_per_topic=1000 (raise metadata.max_partitions_per_topic, at most "
     "10,000)"),
    ({"metadata": {"cases": [{**SCALE, "partitions": 3}]}},
     "m.yaml: metadata.cases[0].partitions: only applies to kinds topic-storm, group-churn "
     "(not partition-scale)"),
    ({"metadata": {"cases": [{"name": "g", "kind": "group-churn", "n": [500]}]}},
     "m.yaml: metadata.cases[0].n: must be an integer between 1 and 200, got 500"),
    ({"metadata": {"cases": [{"name": "j", "kind": "broker-join", "n": [64]}]}},
     "m.yaml: metadata.cases[0].n: must be an integer between 1 and 63, got 64"),
    ({"metadata": {"cases": [{**SCALE, "kind": "storm"}]}},
     "m.yaml: metadata.cases[0].kind: must be one of topic-storm, partition-scale, "
     "group-churn, broker-join, got 'storm'"),
    ({"metadata": {"cases": [SCALE, SCALE]}},
     "m.yaml: metadata.cases: case 'scale' is listed twice"),
    ({"metadata": {"cases": [SCALE]}, "restart": "never"},
     "m.yaml: restart: metadata sessions each need fresh clusters (what one created would "
     "weigh on the next): restart: try, or leave it out"),
    ({"metadata": {"cases": [SCALE]}, "scenarios": ["split"]},
     "m.yaml: scenarios: a workload with metadata runs metadata sessions only "
     "(scenarios: [metadata], or leave it out)"),
    ({"metadata": {"cases": [SCALE], "idle": 3}},
     "m.yaml: metadata.idle: unknown key (did you mean 'idle_s'?); known: cases, idle_s, "
     "max_partitions_per_topic, max_topics, probe_ms, timeout_s"),
    ({"metadata": {"cases": [SCALE], "idle_s": -1}},
     "m.yaml: metadata.idle_s: must be a number of seconds in [0, 600], got -1"),
])
def test_bad_metadata_workloads_give_one_clear_line(doc, expected):
    with pytest.raises(WorkloadError) as err:
        parse_workload({"name": "m", **doc}, "m.yaml")
    assert str(err.value) == expected


def test_the_machine_cap_is_what_the_issue_asks_for():
    # 1 ... 10,000 partitions in one topic, as far as one machine allows.
    wl = workload({**SCALE, "n": [MACHINE_MAX_PARTITIONS]},
                  max_partitions_per_topic=MACHINE_MAX_PARTITIONS)
    md = wl.study(METADATA_STUDY)
    assert md is not None and md.cases[0].sizes == (10_000,)


def test_metadata_sessions_get_fresh_clusters_per_size_and_try_abba():
    wl = parse_workload({"name": "m", "tries": 2,
                         "metadata": {"cases": [STORM, {**SCALE, "n": [5]}]}})
    epochs = kinds.schedule(wl, plan.sides(wl, arches=("zk", "dsbs")))
    got = [[(s.cell.cell_id, s.try_no, s.side.arch) for s in e.sessions] for e in epochs]
    assert got == [
        [("storm-n1", 1, "zk"), ("storm-n1", 1, "dsbs")],
        [("storm-n1", 2, "dsbs"), ("storm-n1", 2, "zk")],
        [("storm-n10", 1, "zk"), ("storm-n10", 1, "dsbs")],
        [("storm-n10", 2, "dsbs"), ("storm-n10", 2, "zk")],
        [("scale-n5", 1, "zk"), ("scale-n5", 1, "dsbs")],
        [("scale-n5", 2, "dsbs"), ("scale-n5", 2, "zk")],
    ]
    s = epochs[0].sessions[0]
    assert s.scenario == METADATA_SCENARIO and s.case is not None and s.case.name == "storm"
    assert s.cell.n == 1


def _topic(name: str, leaders: list[int], error: int = 0) -> MetadataResponseTopic:
    return MetadataResponseTopic(error_code=error, name=name, partitions=[
        MetadataResponsePartition(error_code=0, partition_index=i, leader_id=leader)
        for i, leader in enumerate(leaders)])


def test_a_topic_counts_as_converged_with_every_partition_led():
    resp = MetadataResponse(brokers=[], topics=[
        _topic("whole", [0, 1, 2]),
        _topic("short", [0, 1]),          # a partition not known yet
        _topic("leaderless", [0, -1, 2]),
        _topic("unknown", [], error=3),   # UNKNOWN_TOPIC_OR_PARTITION
    ])
    assert complete_topics(resp, 3) == {"whole"}


def test_summaries_of_nothing_are_empty_not_zero():
    assert ms_summary([]) == (None, None)
    assert ms_summary([3.0, 1.0, 2.0]) == (2.0, 3.0)
    assert per_second(None, 2.0) is None and per_second(10, 0) is None
    assert per_second(10, 2.0) == 5.0


@pytest.mark.filesystem
def test_cli_refuses_a_storm_beyond_the_limits_before_starting_anything(tmp_path, capsys):
    import yaml

    from harness.cli import main

    path = tmp_path / "big.yaml"
    path.write_text(yaml.safe_dump({"name": "big", "metadata": {"max_topics": 10_000, "cases": [
        {"name": "storm", "kind": "topic-storm", "n": [10_000], "partitions": 3}]}}))
    assert main(["run", "--arch", "both", "--workload", str(path), "--out",
                 str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err == ("twinbench: error: big.yaml: metadata.cases[0].n: 10000 x 3 partitions = "
                   "30,000 partitions; this harness creates at most 10,000 in one session\n")
    assert list(tmp_path.iterdir()) == [path]  # no run directory, no process started


def test_every_kind_fills_the_documented_columns():
    from harness.studies.metadata.session import ROW_COLUMNS

    keys = ("run_id", "arch", "label", "cell_id", "case", "try")
    assert (*keys, *ROW_COLUMNS) == fmt.METADATA.names()


def test_group_settles_when_every_member_holds_its_share_at_one_generation():
    from harness.studies.metadata.session import group_settled

    class M:
        def __init__(self, gen, parts, stable=True):
            self.generation, self.assignment = gen, parts
            self.transitions = [(0.0, stable, gen)]

    assert group_settled([M(2, [0, 1]), M(2, [2, 3])], 4) == 2
    assert group_settled([M(2, [0, 1]), M(3, [2, 3])], 4) is None       # mid-rebalance
    assert group_settled([M(2, [0, 1]), M(2, [2])], 4) is None          # a partition unheld
    assert group_settled([M(2, [0, 1]), M(2, [1, 2, 3])], 4) is None    # held twice
    assert group_settled([M(2, [0, 1]), M(2, [2, 3], stable=False)], 4) is None
    assert group_settled([M(5, [0, 1, 2, 3]), M(5, [])], 4) == 5        # more members than work


def test_a_broker_that_never_answers_ends_the_wait_at_its_deadline():
    """The step's bound holds even when one probe's request hangs (a broker busy with 10,000
    partitions can take the whole request timeout to answer)."""
    import asyncio
    import time

    from harness.studies.metadata.session import watch_convergence

    class Silent:
        host, port = "127.0.0.1", 1

        def pick_version(self, api_key, lo, hi):
            return hi

        async def call(self, *args):
            await asyncio.Event().wait()  # never answered

    async def main():
        deadline = time.perf_counter() + 0.05
        with pytest.raises(TimeoutError, match="every broker listing 2 topics"):
            await watch_convergence([Silent()], ["a", "b"], 1, 0.01, deadline)

    asyncio.run(main())
