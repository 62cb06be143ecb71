"""The architecture registry (harness/architectures.py): its entries are complete and agree
with the counters contract, the CLI and the analysis's fallback labels; and a third
architecture is one entry away (every choice the harness makes comes from the table)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

import twinbench_common.runlog as fmt
from brokers.core.counters import CoordinatorCounters
from brokers.core.errors import UserError
from harness import architectures, cli
from harness.architectures import ZOOKEEPER, Architecture, Labels, Launch
from harness.cluster import ClusterSpec, ProcessCluster
from harness.driver import counters as driver_counters
from harness.driver import plan
from harness.faults import ACTIONS
from harness.workload import parse_workload
from spark_analysis import archs as analysis_archs


def entries() -> list[Architecture]:
    return list(architectures.ARCHITECTURES.values())


def test_every_entry_is_complete_and_consistent() -> None:
    spec_fields = {f.name for f in dataclasses.fields(ClusterSpec)}
    for a in entries():
        counters = a.counters_class()
        assert issubclass(counters, CoordinatorCounters), a.name
        declared = {s.name for s in counters.specs()}
        assert set(a.columns.values()) <= declared, a.name
        assert set(a.columns) <= set(driver_counters.COLUMNS), a.name
        assert a.labels.cost_column in fmt.COORDINATION.names(), a.name
        assert set(a.options) <= spec_fields, a.name
        assert a.services <= {ZOOKEEPER}, a.name  # services the cluster knows how to start
    assert sum(a.labels.baseline for a in entries()) == 1
    assert architectures.baseline().name == "zk"  # ratios are DSBS/ZK
    orders = [a.labels.order for a in entries()]
    assert orders == sorted(orders) and len(set(orders)) == len(orders)


def test_the_analysis_fallback_is_the_registry_labels() -> None:
    """spark_analysis may not import the registry; its labels for runs written before the
    manifests carried them must be the registry's, field for field."""
    for builtin in analysis_archs.BUILTIN:
        labels = architectures.get(builtin.name).labels
        assert dataclasses.asdict(labels) == {k: v for k, v in dataclasses.asdict(builtin).items()
                                              if k != "name"}
    assert tuple(analysis_archs.LABEL_KEYS) == tuple(f.name for f in dataclasses.fields(Labels))


def test_cli_choices_come_from_the_registry() -> None:
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices  # type: ignore[union-attr]
    cluster_arch = next(a for a in sub["cluster"]._actions if a.dest == "arch")
    run_arch = next(a for a in sub["run"]._actions if a.dest == "arch")
    assert tuple(cluster_arch.choices) == architectures.names() == ("zk", "dsbs")
    assert tuple(run_arch.choices) == ("zk", "dsbs", "both")
    assert architectures.expand("both") == ("zk", "dsbs")


def test_errors_name_the_choices() -> None:
    with pytest.raises(UserError, match=r"unknown architecture 'x'; choose zk or dsbs$"):
        ClusterSpec("x")
    with pytest.raises(UserError, match=r"choose zk, dsbs or both$"):
        architectures.expand("x")
    with pytest.raises(UserError, match=r"--zookeeper only applies to --arch zk$"):
        ClusterSpec("dsbs", zookeeper="127.0.0.1:2181")
    assert cli.main(["run", "--arch", "dsbs", "--workload", "smoke",
                     "--zookeeper", "127.0.0.1:1"]) == 2


def test_manifest_labels_are_the_entries() -> None:
    got = architectures.manifest_labels(("zk", "dsbs"))
    assert list(got) == ["zk", "dsbs"]
    assert got["zk"]["baseline"] is True and got["dsbs"]["short_name"] == "DSBS"


# --- a third architecture is one entry ---------------------------------------------------------

KRAFT = Architecture(
    name="kraft",
    summary="a Raft quorum of the brokers themselves",
    module="brokers.kraft_broker",
    broker_args=lambda launch: [["--quorum", ",".join(launch.hosts)] for _ in launch.hosts],
    services=frozenset(),
    options=(),
    counters="brokers.core.local_coordinator:LocalCounters",
    columns={},
    labels=Labels(display_name="KRaft", short_name="KRaft", color="#55A868", order=2,
                  baseline=False, cost_column="coordination_ops", cost_label="Raft messages"),
)

FAULTS = {"name": "f", "network": "netns",
          "cells": [{"table": "faults", "msg_sizes": [32], "batches": [20]}],
          "faults": {"rate": 1000, "duration_s": 10, "cases": [
              {"name": "kill", "schedule": [{"at_s": 2, "action": "kill", "broker": "leader:0"},
                                         {"at_s": 4, "action": "restart",
                                          "broker": "leader:0"}]},
              {"name": "zk-down", "schedule": [{"at_s": 2, "action": "stop-zookeeper"},
                                            {"at_s": 4, "action": "start-zookeeper"}]}]}}


@pytest.fixture
def with_kraft(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(architectures.ARCHITECTURES, KRAFT.name, KRAFT)


@pytest.mark.filesystem
@pytest.mark.usefixtures("with_kraft")
def test_a_new_entry_is_a_choice_everywhere(tmp_path: Path) -> None:
    assert architectures.names() == ("zk", "dsbs", "kraft")
    assert architectures.expand("both") == ("zk", "dsbs", "kraft")
    parser = cli.build_parser()
    assert parser.parse_args(["cluster", "--arch", "kraft"]).arch == "kraft"
    # Its cluster: its module and arguments after the core's, no ZooKeeper provisioned.
    cluster = ProcessCluster(ClusterSpec("kraft", brokers=2, flush="os"))
    cluster.root = tmp_path
    argvs = cluster._broker_argvs()
    assert cluster.zookeeper is None
    assert [argv[argv.index("-m") + 1] for argv in argvs] == ["brokers.kraft_broker"] * 2
    first = argvs[0]
    assert first[first.index("--data-dir") + 2:first.index("--flush")] == [
        "--quorum", "127.0.0.1,127.0.0.1"]
    with pytest.raises(UserError, match=r"--zookeeper only applies to --arch zk$"):
        ClusterSpec("kraft", zookeeper="127.0.0.1:2181")
    with pytest.raises(UserError, match="stop-zookeeper applies to zk clusters only; this one "
                                        "is kraft"):
        cluster.stop_zookeeper()


@pytest.mark.usefixtures("with_kraft")
def test_service_faults_run_only_where_the_service_is() -> None:
    wl = parse_workload(FAULTS, "f.yaml")
    (epoch,) = plan.schedule(wl, plan.sides(wl, arches=("zk", "dsbs", "kraft")))
    ran = {(s.side.arch, s.case.name) for s in epoch.sessions if s.case is not None}
    assert ran == {("zk", "kill"), ("dsbs", "kill"), ("kraft", "kill"), ("zk", "zk-down")}
    assert {a for a in ACTIONS.values() if a.service} == {
        ACTIONS["stop-zookeeper"], ACTIONS["start-zookeeper"], ACTIONS["kill-zookeeper"]}


@pytest.mark.filesystem
def test_broker_arguments_of_the_twins(tmp_path: Path) -> None:
    spec = ClusterSpec("zk", zk_session_timeout_ms=6000)
    launch = Launch(spec, tmp_path, ("127.0.0.1",) * 2, False, "127.0.0.1:2181/twinbench")
    assert architectures.ZK.broker_args(launch) == [
        ["--zookeeper", "127.0.0.1:2181/twinbench", "--zk-session-timeout-ms", "6000"]] * 2
    launch = Launch(ClusterSpec("dsbs", gossip_preset="local"), tmp_path,
                    ("198.18.0.2", "198.18.0.3"), True, None)
    args = architectures.DSBS.broker_args(launch)
    assert [a[1] for a in args] == ["198.18.0.2:7946", "198.18.0.3:7946"]
    assert args[0][3] == "198.18.0.2:7946,198.18.0.3:7946"
    assert args[0][5] == "local" and Path(args[0][7]).read_text().strip()
    assert (Path(args[0][7]).stat().st_mode & 0o777) == 0o600


def test_arbiter_only_where_creation_has_one() -> None:
    assert architectures.ZK.arbiter is None
    assert architectures.DSBS.arbiter is not None
    ids = [0, 1, 2]
    assert architectures.DSBS.arbiter("t", ids) in ids


@pytest.mark.filesystem
def test_num_partitions_and_auto_create_reach_every_broker(tmp_path: Path) -> None:
    # dsbs needs no ZooKeeper to build argv; zk clusters get the same core arguments, which
    # the contract suite checks end to end (tests/contract/test_contract_semantics.py).
    arch = "dsbs"
    parser = cli.build_parser()
    args = parser.parse_args(["cluster", "--arch", arch, "--num-partitions", "4",
                              "--no-auto-create-topics"])
    assert (args.num_partitions, args.auto_create_topics) == (4, False)
    spec = ClusterSpec(arch, brokers=2, num_partitions=4, auto_create_topics=False)
    cluster = ProcessCluster(spec)
    cluster.root = tmp_path
    for argv in cluster._broker_argvs():
        assert argv[argv.index("--num-partitions") + 1] == "4"
        assert "--no-auto-create-topics" in argv
    with pytest.raises(UserError, match="--num-partitions must be between 1 and 1000"):
        ClusterSpec(arch, num_partitions=0)
