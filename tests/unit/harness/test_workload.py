"""Workload files: the shipped ones load, bad ones fail with one clear line, and the plan
(sides, cells, sessions, partition assignment) follows from them as documented."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from harness.driver import kinds, plan
from harness.studies.latency import LATENCY_STUDY
from harness.workload import (
    WORKLOAD_DIR,
    WorkloadError,
    load_workload,
    parse_size,
    parse_workload,
)

# Every workload shipped in workloads/: a file a make target names must load.
SHIPPED = tuple(sorted(p.stem for p in WORKLOAD_DIR.glob("*.yaml")))
MINIMAL = {"name": "t", "cells": [{"table": "size_grid", "msg_sizes": [32], "batches": [20]}]}


def with_(**changes: object) -> dict[str, object]:
    return {**MINIMAL, **changes}


@pytest.mark.filesystem
@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_workloads_load(name):
    loaded = load_workload(name)
    assert loaded.workload.name == name
    assert loaded.text == (WORKLOAD_DIR / f"{name}.yaml").read_text()


@pytest.mark.filesystem
def test_paper_is_the_papers_experiment():
    wl = load_workload("paper").workload
    cells = [c.cell_id for c in plan.cells(wl)]
    assert cells == [
        "size_grid-8B-b20", "size_grid-16B-b20", "size_grid-32B-b20", "size_grid-64B-b20",
        "size_grid-128B-b20", "batch_sweep-32B-b1", "batch_sweep-32B-b20", "batch_sweep-32B-b50",
    ]
    assert (wl.messages, wl.tries, wl.scenarios) == (30_000, 4, ("split", "streaming"))
    assert (wl.brokers, wl.partitions, wl.producers, wl.consumers) == (3, 3, 3, 3)
    assert wl.offset_commit == ("every_fetch",) and wl.metadata_check == ("per_request",)


@pytest.mark.filesystem
def test_paper_kb_spans_1_to_128_kib():
    wl = load_workload("paper-kb").workload
    sizes = [c.msg_size for c in plan.cells(wl)]
    assert sizes[0] == 1024 and sizes[-1] == 128 * 1024
    assert wl.restart == "try"


def test_defaults_are_the_papers():
    wl = parse_workload(MINIMAL)
    assert (wl.producers, wl.consumers, wl.messages, wl.tries) == (3, 3, 30_000, 4)
    assert wl.partitions == wl.brokers == 3
    assert wl.producer_mode == "sync" and wl.window == 1


def test_min_insync_replicas_goes_to_every_broker_and_fits_the_replication_factor():
    from harness.driver.runner import broker_settings

    assert parse_workload(MINIMAL).min_insync_replicas is None
    assert broker_settings(parse_workload(MINIMAL)) == ()
    wl = parse_workload(with_(replication_factor=3, acks=-1, min_insync_replicas=2))
    assert broker_settings(wl) == ("--min-insync-replicas", "2")
    with pytest.raises(WorkloadError, match="min_insync_replicas"):
        parse_workload(with_(replication_factor=2, min_insync_replicas=3))
    rf3 = load_workload("faults-rf3").workload
    assert (rf3.replication_factor, rf3.acks, rf3.min_insync_replicas) == (3, -1, 2)


def test_open_loop_keys_parse_with_their_defaults():
    closed = parse_workload(MINIMAL)
    assert (closed.rate, closed.arrivals, closed.duration_s, closed.warmup_s) == (
        (), "uniform", None, 0.0)
    wl = parse_workload(with_(rate=[500, 2000.5], arrivals="poisson", scenarios=["streaming"],
                              duration_s=4, warmup_s=1))
    assert (wl.rate, wl.arrivals, wl.duration_s, wl.warmup_s) == (
        (500.0, 2000.5), "poisson", 4.0, 1.0)


SEARCH = {"scenarios": ["streaming"], "duration_s": 3, "rate_search": {"start": 1000}}


def test_rate_search_keys_parse_with_their_defaults():
    wl = parse_workload(with_(**SEARCH, rate_fractions=[0.25, 1]))
    latency = wl.study(LATENCY_STUDY)
    assert latency is not None and wl.rate == ()
    search = latency.search
    assert (search.start, search.factor, search.precision,
            search.max_backlog_s) == (1000.0, 2.0, 0.1, 1.0)
    assert search.ceiling is None  # the load client's own, measured (ceiling.py)
    assert latency.fractions == (0.25, 1.0)
    cells = plan.cells(wl)
    assert [c.cell_id for c in cells] == ["size_grid-32B-b20-f25", "size_grid-32B-b20-f100"]
    (epoch,) = kinds.schedule(wl, plan.sides(wl, arches=("zk", "dsbs")))
    assert [s.arch for s in epoch.searches] == ["zk", "dsbs"]
    assert epoch.arches == ("zk", "dsbs") and len(epoch.sessions) == 2 * 2 * wl.tries
    # A search alone (no fractions) still gets its epoch, with no sessions.
    (alone,) = kinds.schedule(parse_workload(with_(**SEARCH)), plan.sides(wl))
    assert alone.sessions == () and alone.arches == ("zk",)


def test_partitions_default_to_one_per_broker():
    assert parse_workload(with_(brokers=5, consumers=2)).partitions == 5


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        (with_(tires=4), "t.yaml: tires: unknown key (did you mean 'tries'?)"),
        (with_(tries=0), "t.yaml: tries: must be an integer between 1 and 1000, got 0"),
        (with_(tries="4"), "t.yaml: tries: must be an integer between 1 and 1000, got '4'"),
        (with_(tries=True), "t.yaml: tries: must be an integer between 1 and 1000, got True"),
        (with_(scenarios=["split", "stream"]), "scenarios: must be one of split, streaming"),
        (with_(producer_mode="async"), "producer_mode: must be one of sync, pipelined"),
        (with_(window=4), "window: only applies to producer_mode: pipelined"),
        (with_(consumers=4), "consumers: 4 consumers but 3 partitions"),
        (with_(policies={"offset_commit": "sometimes"}), "policies.offset_commit: must be"),
        (with_(policies={"offset_commit": "interval_ms:0"}), "interval_ms:N (N > 0)"),
        (with_(policies={"metadata_check": "always"}), "policies.metadata_check: must be one"),
        (with_(policies={"metadta_check": "cached"}),
         "policies.metadta_check: unknown key (did you mean 'metadata_check'?)"),
        (with_(flush="sometimes"), "flush: flush policy 'sometimes' is not one of"),
        (with_(restart="always"), "restart: must be one of never, cell, try"),
        (with_(zk_nodes=2), "zk_nodes: is now an option of zookeeper: write options: "
                            "{zookeeper: {nodes: 2}}"),
        (with_(options={"zookeeper": {"nodes": 2}}),
         "options.zookeeper.nodes: choose 1 or 3, got 2"),
        (with_(warmup_sessions=-1), "warmup_sessions: must be an integer between 0 and 100"),
        (with_(warmup_sessions=1.5), "warmup_sessions: must be an integer between 0 and 100"),
        (with_(messages=2), "messages: 2 messages cannot feed 3 producers"),
        (with_(name="Paper Grid"), "name: must match"),
        (with_(labels=["A", "A"]), "labels: lists 'A' twice"),
        ({"cells": MINIMAL["cells"]}, "t.yaml: name: is missing"),
        ({"name": "t"}, "t.yaml: cells: is missing"),
        (with_(cells=[]), "cells: must be a non-empty list"),
        (with_(cells=[{"table": "x", "msg_sizes": [4], "batches": [1]}]),
         "cells[0].msg_sizes: 4 is not a size between 8 B and 1 MiB"),
        (with_(cells=[{"table": "x", "msg_sizes": ["1 GB"], "batches": [1]}]),
         "cells[0].msg_sizes: '1 GB' is not a size"),
        (with_(cells=[{"table": "x", "msg_sizes": [8], "batches": [0]}]),
         "cells[0].batches: must be an integer between 1 and 10000, got 0"),
        (with_(cells=[{"table": "x", "msg_sizes": [8]}]), "cells[0].batches: is missing"),
        (with_(cells=[{"table": "x", "msg_sizes": [8], "batches": [1], "size": 3}]),
         "cells[0].size: unknown key"),
        (with_(cells=[{"table": "x", "msg_sizes": [8], "batches": [1]},
                      {"table": "x", "msg_sizes": [8], "batches": [1]}]),
         "cells[1]: cell x-8B-b1 is listed twice"),
        ([1, 2], "t.yaml: must be a YAML mapping"),
        (with_(rate=0), "t.yaml: rate: must be a positive number, got 0"),
        (with_(rate=[1000, -5]), "t.yaml: rate: must be a positive number, got -5"),
        (with_(rate=[1000, 1000]), "t.yaml: rate: lists 1000 twice"),
        (with_(arrivals="poisson"), "t.yaml: arrivals: only applies to open-loop load"),
        (with_(rate=10, arrivals="bursty"), "t.yaml: arrivals: must be one of uniform, poisson"),
        (with_(rate=10, scenarios=["streaming"], messages=100, duration_s=5),
         "t.yaml: duration_s: give messages or duration_s, not both"),
        (with_(rate=10, duration_s=5), "t.yaml: duration_s: time-bounded sessions are "
                                       "streaming only"),
        (with_(rate=10, scenarios=["streaming"], duration_s=0),
         "t.yaml: duration_s: must be a positive number, got 0"),
        (with_(rate=10, scenarios=["streaming"], duration_s=5, warmup_s=5),
         "t.yaml: warmup_s: must be shorter than duration_s (5), got 5"),
        (with_(rate=10, scenarios=["streaming"], duration_s=5, warmup_s=-1),
         "t.yaml: warmup_s: must be a number >= 0, got -1"),
        (with_(warmup_s=1), "t.yaml: warmup_s: only applies to time-bounded sessions"),
        (with_(**SEARCH, rate=10), "t.yaml: rate: give rate or rate_search, not both"),
        (with_(**{k: v for k, v in SEARCH.items() if k != "duration_s"}),
         "t.yaml: rate_search: each step is a time-bounded session: give duration_s"),
        (with_(**SEARCH, restart="cell"), "t.yaml: rate_search: searches run on one cluster"),
        (with_(**{**SEARCH, "rate_search": {"factor": 2}}),
         "t.yaml: rate_search: must be a mapping with at least start"),
        (with_(**{**SEARCH, "rate_search": {"start": 10, "step": 2}}),
         "t.yaml: rate_search.step: unknown key"),
        (with_(**{**SEARCH, "rate_search": {"start": 10, "factor": 1}}),
         "t.yaml: rate_search: search factor must be > 1"),
        (with_(**{**SEARCH, "rate_search": {"start": 10, "ceiling": 5}}),
         "t.yaml: rate_search: search ceiling must be >= its start"),
        (with_(**{**SEARCH, "rate_search": {"start": -1}}),
         "t.yaml: rate_search.start: must be a positive number, got -1"),
        (with_(**SEARCH, rate_fractions=[0.5, 3]), "t.yaml: rate_fractions: must be distinct"),
        (with_(**SEARCH, rate_fractions=[0.5, 0]),
         "t.yaml: rate_fractions: must be a positive number, got 0"),
        (with_(rate_fractions=[0.5]), "t.yaml: rate_fractions: fractions of what?"),
        (with_(client="jmeter"), "t.yaml: client: must be one of twinbench, kafka-perf"),
        (with_(client=["kafka-perf", "kafka-perf"]), "t.yaml: client: lists 'kafka-perf' twice"),
    ],
)
def test_bad_workloads_give_one_clear_line(doc, expected):
    with pytest.raises(WorkloadError) as info:
        parse_workload(doc, "t.yaml")
    message = str(info.value)
    assert expected in message
    assert "\n" not in message
    assert message.startswith("t.yaml: ")


@pytest.mark.filesystem
def test_bad_yaml_names_the_line(tmp_path: Path):
    path = tmp_path / "broken.yaml"
    path.write_text("name: x\ncells: [\n  - oops: : :\n")
    with pytest.raises(WorkloadError, match=r"^broken\.yaml: line \d+: not valid YAML") as info:
        load_workload(path)
    assert "\n" not in str(info.value)


@pytest.mark.filesystem
def test_missing_file_lists_the_shipped_workloads():
    with pytest.raises(WorkloadError, match=r"not found.*paper.*smoke"):
        load_workload("no-such-workload")


@pytest.mark.filesystem
def test_a_file_path_wins_over_shipped_names(tmp_path: Path):
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(with_(name="mine", tries=1)))
    assert load_workload(path).workload.tries == 1


@pytest.mark.parametrize(
    ("text", "value"),
    [(8, 8), ("8", 8), ("8B", 8), ("1KiB", 1024), ("128KB", 131072), ("1MiB", 1048576),
     ("x", None), (True, None), (1.5, None)],
)
def test_parse_size(text, value):
    assert parse_size(text) == value


# --- the plan --------------------------------------------------------------------------------


@pytest.mark.filesystem
def test_aa_has_two_sides_interleaved_try_by_try():
    wl = load_workload("aa").workload
    sides = plan.sides(wl)
    assert [s.label for s in sides] == ["A", "B"]
    (epoch,) = kinds.schedule(wl, sides)
    first = epoch.sessions[:8]
    assert [(s.side.label, s.try_no, s.scenario) for s in first] == [
        ("A", 1, "split"), ("B", 1, "split"), ("A", 1, "streaming"), ("B", 1, "streaming"),
        ("B", 2, "split"), ("A", 2, "split"), ("B", 2, "streaming"), ("A", 2, "streaming")]


@pytest.mark.filesystem
def test_policy_sweep_has_one_side_per_combination_and_restarts_per_metadata_check():
    wl = load_workload("policy-sweep").workload
    sides = plan.sides(wl)
    assert len(sides) == 6
    assert len({(s.offset_commit, s.metadata_check) for s in sides}) == 6
    assert len({s.label for s in sides}) == 6
    epochs = kinds.schedule(wl, sides)
    assert [e.metadata_check for e in epochs] == ["per_request", "cached"]
    for e in epochs:
        assert {s.side.metadata_check for s in e.sessions} == {e.metadata_check}
    assert sum(len(e.sessions) for e in epochs) == 6 * wl.tries * len(wl.scenarios)


def test_restart_per_try_makes_one_epoch_per_cell_and_try():
    wl = parse_workload(with_(restart="try", tries=3))
    epochs = kinds.schedule(wl, plan.sides(wl))
    assert len(epochs) == 3
    assert all(len(e.sessions) == 2 for e in epochs)


def test_both_architectures_alternate_session_by_session_abba():
    wl = parse_workload(with_(tries=3, scenarios=["split", "streaming"]))
    sides = plan.sides(wl, arches=("zk", "dsbs"))
    assert [(s.arch, s.label) for s in sides] == [("zk", ""), ("dsbs", "")]
    (epoch,) = kinds.schedule(wl, sides)
    assert epoch.arches == ("zk", "dsbs")
    order = [(s.try_no, s.scenario, s.side.arch) for s in epoch.sessions]
    assert order == [
        (1, "split", "zk"), (1, "split", "dsbs"), (1, "streaming", "zk"),
        (1, "streaming", "dsbs"),
        (2, "split", "dsbs"), (2, "split", "zk"), (2, "streaming", "dsbs"),
        (2, "streaming", "zk"),
        (3, "split", "zk"), (3, "split", "dsbs"), (3, "streaming", "zk"),
        (3, "streaming", "dsbs"),
    ]


@pytest.mark.filesystem
def test_both_architectures_times_an_aa_workload_gives_four_run_logs():
    wl = load_workload("aa").workload
    sides = plan.sides(wl, arches=("zk", "dsbs"))
    assert [(s.arch, s.label) for s in sides] == [
        ("zk", "A"), ("dsbs", "A"), ("zk", "B"), ("dsbs", "B")]
    assert [s.index for s in sides] == [0, 1, 2, 3]


def test_cli_label_names_the_single_side():
    wl = parse_workload(MINIMAL)
    assert [s.label for s in plan.sides(wl, "nightly")] == ["nightly"]
    assert [s.label for s in plan.sides(wl)] == [""]


@pytest.mark.parametrize(("count", "parts", "batch"),
                         [(30_000, (0, 1, 2), 20), (10_001, (0,), 20), (667, (1, 2), 50),
                          (7, (0, 1, 2), 20), (30_000, (2, 0, 1), 1)])
def test_planned_per_partition_adds_up(count, parts, batch):
    planned = plan.planned_per_partition(count, parts, batch)
    assert sum(planned.values()) == count
    assert set(planned) == set(parts)


def test_planned_per_partition_follows_round_robin_of_full_batches():
    # 5 batches of 20 then 7: partitions 0,1,2,0,1 get full batches, partition 2 the rest.
    assert plan.planned_per_partition(107, (0, 1, 2), 20) == {0: 40, 1: 40, 2: 27}


@pytest.mark.parametrize(("producers", "spread"), [(3, "split"), (2, "split"), (5, "split"),
                                                    (3, "all")])
def test_every_partition_has_a_producer_and_exactly_one_consumer(producers, spread):
    wl = parse_workload(with_(producers=producers, producer_partitions=spread, consumers=2))
    produced = {p for i in range(producers) for p in plan.producer_partitions(wl, i)}
    assert produced == set(range(wl.partitions))
    owned = [p for j in range(wl.consumers) for p in plan.consumer_partitions(wl, j)]
    assert sorted(owned) == list(range(wl.partitions))


def test_producer_counts_split_the_messages():
    assert plan.producer_counts(30_000, 3) == [10_000] * 3
    assert plan.producer_counts(10, 3) == [4, 3, 3]


@pytest.mark.parametrize(("text", "policy"), [("every_fetch", "every_fetch"), ("none", "none"),
                                              ("interval_ms:100", ("interval_ms", 100))])
def test_commit_policy_spelling(text, policy):
    assert plan.commit_policy(text) == policy


@pytest.mark.filesystem
def test_cli_refuses_a_bad_workload_before_starting_anything(tmp_path: Path, capsys):
    from harness.cli import main

    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(with_(name="bad", tires=4)))
    assert main(["run", "--arch", "zk", "--workload", str(path), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err == ("twinbench: error: bad.yaml: tires: unknown key (did you mean 'tries'?); "
                   "known: " + err.split("known: ", 1)[1])
    assert err.count("\n") == 1
    assert list(tmp_path.iterdir()) == [path]  # no run directory



@pytest.mark.filesystem
def test_two_clients_are_two_sides_of_one_cluster_interleaved():
    wl = load_workload("kafka-clients").workload
    sides = plan.sides(wl, arches=("zk", "kafka-kraft"))
    assert [(s.arch, s.client, s.label) for s in sides] == [
        ("zk", "twinbench", "client=twinbench"),
        ("kafka-kraft", "twinbench", "client=twinbench"),
        ("zk", "kafka-perf", "client=kafka-perf"),
        ("kafka-kraft", "kafka-perf", "client=kafka-perf")]
    assert len({s.cluster for s in sides}) == 2  # one cluster per architecture
    (epoch,) = kinds.schedule(wl, sides)
    assert {s.side.client for s in epoch.sessions[:8]} == {"twinbench", "kafka-perf"}


def test_the_client_defaults_to_ours_and_names_no_side():
    wl = parse_workload(MINIMAL)
    assert wl.client == ("twinbench",)
    assert [(s.client, s.label) for s in plan.sides(wl)] == [("twinbench", "")]
