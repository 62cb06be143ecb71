"""The architecture registry (harness/architectures/): its entries are complete and agree with
the counters contract, the services, the CLI and the analysis's fallback labels; options are
validated by their entries; and a further architecture is one entry away (every choice the
harness makes comes from the registry)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import pytest

import twinbench_common.runlog as fmt
from brokers.core.counters import CoordinatorCounters
from brokers.core.errors import UserError
from harness import architectures, cli, services
from harness.architectures.core_broker import core_broker
from harness.architectures.dsbs import DsbsOptions
from harness.architectures.entry import (
    Architecture,
    Coordination,
    Labels,
    Launch,
    Node,
    ProcessSpec,
)
from harness.architectures.local import LocalOptions
from harness.architectures.options import split_assignments
from harness.architectures.zk import ZkOptions
from harness.cluster.fault_actions import ACTIONS
from harness.cluster.running import ProcessCluster
from harness.cluster.spec import ClusterSpec
from harness.driver import kinds, plan
from harness.workload import WorkloadError, parse_workload
from spark_analysis import archs as analysis_archs


def test_every_entry_is_complete_and_consistent() -> None:
    for a in architectures.entries():
        counters = a.counters_class()
        assert issubclass(counters, CoordinatorCounters), a.name
        declared = {s.name for s in counters.specs()}
        for name in (a.coordination.messages, a.coordination.bytes):
            if name is None:
                continue
            for term in name.split("+"):  # a sum over sources: each term on its own
                source, _, counter = term.partition(":")
                # jmx: real Kafka's own metrics (harness/kafka/jmx.py), read from every node.
                assert source in ("coordinator", "jmx") or source in a.services, (a.name, name)
                if source in ("coordinator", *a.services) and source != "zookeeper":
                    assert counter in declared, (a.name, name)
        assert a.labels.cost_column in fmt.COORDINATION.names(), a.name
        assert set(a.services) <= set(services.names()), a.name
        assert 1 <= a.max_brokers <= 64, a.name
    compared = [a for a in architectures.entries() if a.compared]
    assert sum(a.labels.baseline for a in compared) == 1
    assert architectures.baseline().name == "zk"  # ratios are DSBS/ZK
    orders = [a.labels.order for a in architectures.entries()]
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
    assert tuple(cluster_arch.choices) == architectures.names() == (
        "zk", "dsbs", "raft", "raft-dc", "kafka-zk", "kafka-kraft", "local")
    assert architectures.run_choices() == (
        "zk", "dsbs", "raft", "raft-dc", "kafka-zk", "kafka-kraft", "local", "all", "both")
    assert architectures.expand("both") == architectures.expand("all") == ("zk", "dsbs", "raft")
    # Real Kafka is a reference: measured when named, never under test.
    assert architectures.expand("kafka-kraft,dsbs,zk,kafka-zk") == (
        "zk", "dsbs", "kafka-zk", "kafka-kraft")
    # raft-dc is the raft twin deployed with dedicated controllers: under test, not compared.
    assert architectures.under_test() == ("zk", "dsbs", "raft", "raft-dc", "local")
    assert architectures.expand("dsbs,zk") == ("zk", "dsbs")  # the registry's order
    # run --arch takes a list too, so argparse must not hold choices; its help names them all.
    run_arch = next(a for a in sub["run"]._actions if a.dest == "arch")
    assert run_arch.choices is None
    assert all(name in str(run_arch.help) for name in architectures.names())
    assert parser.parse_args(["run", "--arch", "dsbs,zk", "--workload", "w.yaml"]).arch == "dsbs,zk"
    option = next(a for a in sub["run"]._actions if a.dest == "option")
    assert "zk.session_timeout_ms" in str(option.help)
    assert "zookeeper.nodes" in str(option.help)


def test_errors_name_the_choices() -> None:
    with pytest.raises(UserError, match=r"unknown architecture 'x'; choose zk, dsbs, raft, "
                                        r"raft-dc, kafka-zk, kafka-kraft or local$"):
        ClusterSpec("x")
    with pytest.raises(UserError, match=r"unknown architecture 'x'; choose zk, dsbs, raft, "
                                        r"raft-dc, kafka-zk, kafka-kraft, local, all or both"):
        architectures.expand("zk,x")
    with pytest.raises(UserError, match=r"^metadata_check per_request: kafka-kraft cannot apply "
                                        r"it \(it applies cached only\)$"):
        ClusterSpec("kafka-kraft", metadata_check="per_request")
    with pytest.raises(UserError, match=r"kafka-zk.release: "):
        ClusterSpec("kafka-zk", options={"kafka-zk": {"release": "4.1.1"}})
    with pytest.raises(UserError, match=r"--arch local runs at most 1 broker"):
        ClusterSpec("local", brokers=3)
    with pytest.raises(UserError, match=r"options for 'nope': no architecture or service"):
        ClusterSpec("dsbs", options={"nope": {}})
    with pytest.raises(UserError, match=r"zk.bogus: unknown option \(known: "
                                        r"session_timeout_ms\)"):
        ClusterSpec("zk", options={"zk": {"bogus": 1}})
    assert cli.main(["run", "--arch", "dsbs", "--workload", "smoke",
                     "--option", "zookeeper.connect=127.0.0.1:1"]) == 2
    assert cli.main(["run", "--arch", "zk", "--workload", "smoke",
                     "--option", "zk.session_timeout_ms=1"]) == 2


def test_options_are_validated_by_their_entry() -> None:
    assert ZkOptions.parse({"session_timeout_ms": "6000"}, "zk").session_timeout_ms == 6000
    assert ZkOptions.parse({"session_timeout_ms": "none"}, "zk").session_timeout_ms is None
    assert ZkOptions.parse(None, "zk") == ZkOptions()
    assert DsbsOptions.parse({"gossip_preset": "local"}, "dsbs").gossip_preset == "local"
    assert LocalOptions.parse({}, "local").as_manifest() == {}
    for raw, problem in (({"session_timeout_ms": 10}, r"between 1000 and 600000"),
                         ({"session_timeout_ms": "soon"}, r"expected int, got 'soon'"),
                         ({"session_timeout_ms": True}, r"expected int")):
        with pytest.raises(UserError, match=rf"^zk\.session_timeout_ms: (must be )?{problem}"):
            ZkOptions.parse(raw, "zk")
    with pytest.raises(UserError, match=r"dsbs.gossip_preset: choose lan or local, got 'wan'"):
        DsbsOptions.parse({"gossip_preset": "wan"}, "dsbs")
    assert split_assignments(["zk.session_timeout_ms=6000", "zookeeper.nodes=3"]) == {
        "zk": {"session_timeout_ms": "6000"}, "zookeeper": {"nodes": "3"}}
    with pytest.raises(UserError, match=r"expected NAME\.KEY=VALUE"):
        split_assignments(["session_timeout_ms=6000"])


def test_workload_options_are_checked_and_old_keys_are_told_their_new_place() -> None:
    base = {"name": "w", "cells": [{"table": "t", "msg_sizes": [32], "batches": [1]}]}
    wl = parse_workload({**base, "options": {"zk": {"session_timeout_ms": 6000},
                                             "zookeeper": {"nodes": 3}}}, "w.yaml")
    assert wl.options == {"zk": {"session_timeout_ms": 6000}, "zookeeper": {"nodes": 3}}
    with pytest.raises(WorkloadError, match=r"w.yaml: gossip_preset: is now an option of "
                                            r"dsbs: write options: \{dsbs: \{gossip_preset: "
                                            r"'local'\}\}"):
        parse_workload({**base, "gossip_preset": "local"}, "w.yaml")
    with pytest.raises(WorkloadError, match=r"zk_nodes: is now an option of zookeeper"):
        parse_workload({**base, "zk_nodes": 3}, "w.yaml")
    with pytest.raises(WorkloadError, match=r"options.rafts: names no architecture or service"):
        parse_workload({**base, "options": {"rafts": {}}}, "w.yaml")
    with pytest.raises(WorkloadError, match=r"w.yaml: options.zookeeper.nodes: choose 1 or 3, "
                                            r"got 5"):
        parse_workload({**base, "options": {"zookeeper": {"nodes": 5}}}, "w.yaml")
    with pytest.raises(WorkloadError, match=r"options.zookeeper.nodes: choose 1 or 3, got 2"):
        parse_workload({**base, "options": {"zookeeper": {"nodes": 2}}}, "w.yaml")


def test_manifest_labels_are_the_entries() -> None:
    got = architectures.manifest_labels(("zk", "dsbs"))
    assert list(got) == ["zk", "dsbs"]
    assert got["zk"]["baseline"] is True and got["dsbs"]["short_name"] == "DSBS"


# --- a further architecture is one entry -------------------------------------------------------

def _kraft_command(launch: Launch) -> Callable[[Node], ProcessSpec]:
    quorum = ",".join(launch.hosts)
    return core_broker("brokers.kraft_broker", launch.settings, lambda node: ["--quorum", quorum])


KRAFT = Architecture(
    name="kraft",
    summary="a Raft quorum of the brokers themselves",
    labels=Labels(display_name="KRaft", short_name="KRaft", color="#55A868", order=2,
                  baseline=False, cost_column="coordination_ops", cost_label="Raft messages"),
    options=LocalOptions,
    command=_kraft_command,
    counters="brokers.core.local_coordinator:LocalCounters",
    coordination=Coordination(messages="coordinator:coordination_ops"),
)

FAULTS = {"name": "f", "network": "netns",
          "cells": [{"table": "faults", "msg_sizes": [32], "batches": [20]}],
          "faults": {"rate": 1000, "duration_s": 10, "cases": [
              {"name": "kill", "schedule": [{"at_s": 2, "action": "kill", "broker": "leader:0"},
                                         {"at_s": 4, "action": "restart",
                                          "broker": "leader:0"}]},
              {"name": "zk-down", "schedule": [{"at_s": 2, "action": "stop-zookeeper"},
                                            {"at_s": 4, "action": "start-zookeeper"}]}]}}


def _argvs(cluster: ProcessCluster) -> list[tuple[str, ...]]:
    assert cluster._command is not None
    return [cluster._command(node).argv for node in cluster._nodes]


@pytest.mark.filesystem
def test_a_new_entry_is_a_choice_everywhere(tmp_path: Path) -> None:
    with architectures.registered(KRAFT):
        assert architectures.names() == ("zk", "dsbs", "kraft", "raft", "raft-dc", "kafka-zk",
                                         "kafka-kraft", "local")
        assert architectures.expand("all") == ("zk", "dsbs", "kraft", "raft")
        parser = cli.build_parser()
        assert parser.parse_args(["cluster", "--arch", "kraft"]).arch == "kraft"
        # Its cluster: its module and arguments after the core's, no service started.
        cluster = ProcessCluster(ClusterSpec("kraft", brokers=2, flush="os"))
        cluster.root = tmp_path
        cluster._plan_brokers()
        argvs = _argvs(cluster)
        assert cluster.services == {}
        assert [argv[argv.index("-m") + 1] for argv in argvs] == ["brokers.kraft_broker"] * 2
        first = argvs[0]
        assert first[first.index("--data-dir") + 2:first.index("--flush")] == (
            "--quorum", "127.0.0.1,127.0.0.1")
        with pytest.raises(UserError, match="stop-zookeeper applies to zk or kafka-zk clusters "
                                            "only; this one is kraft"):
            cluster.act_on_service("zookeeper", "stop-zookeeper")
    assert "kraft" not in architectures.names()


def test_an_architecture_registered_by_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(architectures.PLUGINS_ENV, f"kraft={__name__}:KRAFT")
    assert architectures.get("kraft") is KRAFT
    monkeypatch.setenv(architectures.PLUGINS_ENV, "kraft=no.such.module:X")
    with pytest.raises(UserError, match=r"architecture kraft: cannot load no.such.module:X"):
        architectures.get("kraft")
    monkeypatch.setenv(architectures.PLUGINS_ENV, "kraft")
    with pytest.raises(UserError, match="is not name=module:attribute"):
        architectures.names()


def test_service_faults_run_only_where_the_service_is() -> None:
    with architectures.registered(KRAFT):
        wl = parse_workload(FAULTS, "f.yaml")
        (epoch,) = kinds.schedule(wl, plan.sides(wl, arches=("zk", "dsbs", "kraft")))
        ran = {(s.side.arch, s.case.name) for s in epoch.sessions if s.case is not None}
    assert ran == {("zk", "kill"), ("dsbs", "kill"), ("kraft", "kill"), ("zk", "zk-down")}
    assert {a.name for a in ACTIONS.values() if a.service == "zookeeper"} == {
        "stop-zookeeper", "start-zookeeper", "kill-zookeeper"}
    assert {a.name for a in ACTIONS.values() if a.service == "raft-controllers"} == {
        "stop-raft-controllers", "start-raft-controller", "kill-raft-controller"}


def _launch(tmp_path: Path, spec: ClusterSpec, hosts: tuple[str, ...], netns: bool,
            service: dict[str, str]) -> Launch:
    return Launch(spec.settings(), spec.arch_options(), tmp_path, hosts, netns, service)


def _node(i: int, host: str = "127.0.0.1") -> Node:
    return Node(i, host, 0, Path(f"/d/broker-{i}"), "python", None)


@pytest.mark.filesystem
def test_broker_arguments_of_the_twins(tmp_path: Path) -> None:
    zk = architectures.get("zk")
    spec = ClusterSpec("zk", options={"zk": {"session_timeout_ms": 6000}})
    command = zk.command(_launch(tmp_path, spec, ("127.0.0.1",) * 2, False,
                                 {"zookeeper": "127.0.0.1:2181"}))
    argv = command(_node(1)).argv
    assert argv[:3] == ("python", "-m", "brokers.zk_broker")
    at = argv.index("--zookeeper")
    assert argv[at:at + 4] == ("--zookeeper", "127.0.0.1:2181/twinbench",
                               "--zk-session-timeout-ms", "6000")
    dsbs = architectures.get("dsbs")
    spec = ClusterSpec("dsbs", options={"dsbs": {"gossip_preset": "local"}})
    hosts = ("198.18.0.2", "198.18.0.3")
    command = dsbs.command(_launch(tmp_path, spec, hosts, True, {}))
    args = [command(_node(i, h)).argv for i, h in enumerate(hosts)]
    gossip = [a[a.index("--gossip") + 1] for a in args]
    assert gossip == ["198.18.0.2:7946", "198.18.0.3:7946"]
    first = args[0]
    assert first[first.index("--seeds") + 1] == "198.18.0.2:7946,198.18.0.3:7946"
    assert first[first.index("--gossip-preset") + 1] == "local"
    key = Path(first[first.index("--gossip-key-file") + 1])
    assert key.read_text().strip() and (key.stat().st_mode & 0o777) == 0o600


def test_arbiter_only_where_creation_has_one() -> None:
    assert architectures.get("zk").arbiter is None
    arbiter = architectures.get("dsbs").arbiter
    assert arbiter is not None
    ids = [0, 1, 2]
    assert arbiter("t", ids) in ids


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
    cluster._plan_brokers()
    for argv in _argvs(cluster):
        assert argv[argv.index("--num-partitions") + 1] == "4"
        assert "--no-auto-create-topics" in argv
    with pytest.raises(UserError, match="--num-partitions must be between 1 and 1000"):
        ClusterSpec(arch, num_partitions=0)
