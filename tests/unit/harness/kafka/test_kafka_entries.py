"""The kafka-zk and kafka-kraft registry entries (harness/architectures/kafka.py): the nodes
they plan, the command lines and files they make, and what they refuse in one line. No JVM runs
here (tests/integration/test_real_kafka.py starts them)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from brokers.core.errors import UserError
from harness import architectures
from harness.architectures import kafka
from harness.architectures.entry import Launch, Node
from harness.cluster.machines import LOCAL
from harness.cluster.spec import ClusterSpec

pytestmark = pytest.mark.filesystem

ZK_CONNECT = {"zookeeper": "127.0.0.1:2181"}


def launch(tmp_path: Path, arch: str, n: int = 3, netns: bool = False, **spec: object) -> Launch:
    s = ClusterSpec(arch, brokers=n, **spec)  # type: ignore[arg-type]
    hosts = tuple(f"198.18.0.{i + 2}" for i in range(n)) if netns else ("127.0.0.1",) * n
    return Launch(s.settings(), s.arch_options(), tmp_path, hosts, netns,
                  ZK_CONNECT if arch == "kafka-zk" else {}, ports=(0,) * n)


def node(tmp_path: Path, i: int, host: str = "127.0.0.1", metrics: str | None = None) -> Node:
    return Node(i, host, 0, tmp_path / f"broker-{i}", "python", metrics)


def properties(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if line)


def test_kafka_zk_runs_java_on_the_release_with_its_own_chroot_and_the_policies(tmp_path):
    spec = launch(tmp_path, "kafka-zk", flush="every_batch", num_partitions=3,
                  auto_create_topics=False, broker_args=("--min-insync-replicas", "2"))
    command = architectures.get("kafka-zk").command(spec)
    specs = [command(node(tmp_path, i)) for i in range(3)]
    ports = [s.port for s in specs]
    assert all(ports) and len(set(ports)) == 3  # chosen, distinct
    first = specs[0]
    assert first.argv[0] == "java" and first.argv[-2] == "kafka.Kafka"
    assert first.ready == "port-open" and first.counters == "jmx-exporter"
    metrics = {s.metrics_port for s in specs}
    assert len(metrics) == 3 and not metrics & set(ports)  # an exporter's port per node
    assert first.argv[1].startswith("-javaagent:") and f":{first.metrics_port}:" in first.argv[1]
    assert first.stop_grace_s == kafka.STOP_GRACE_S
    assert "-Xmx512m" in first.argv
    p = properties(Path(first.argv[-1]))
    assert p["zookeeper.connect"] == "127.0.0.1:2181/kafka-zk"
    assert p["listeners"] == f"PLAINTEXT://127.0.0.1:{ports[0]}"
    assert p["log.dirs"] == str(tmp_path / "broker-0" / "kafka")
    assert p["log.flush.interval.messages"] == "1"
    assert (p["num.partitions"], p["auto.create.topics.enable"]) == ("3", "false")
    assert p["min.insync.replicas"] == "2"
    # A restart asks again with the port the broker had: the same command line.
    again = command(dataclasses.replace(node(tmp_path, 1), port=ports[1]))
    assert again.argv == specs[1].argv


def test_kraft_voters_are_the_first_three_nodes_and_the_rest_are_brokers(tmp_path):
    spec = launch(tmp_path, "kafka-kraft", n=5)
    options = spec.options
    assert isinstance(options, kafka.KafkaKraftOptions)
    nodes = kafka._nodes(spec, "kafka-kraft", kafka.RELEASES[options.release], options, "kraft")
    assert [n.voter is not None for n in nodes] == [True, True, True, False, False]
    assert len({n.port for n in nodes} | {n.controller_port for n in nodes[:3]}) == 8
    assert all(n.voters == nodes[0].voters for n in nodes)
    one = launch(tmp_path, "kafka-kraft", n=2)
    assert isinstance(one.options, kafka.KafkaKraftOptions)
    pair = kafka._nodes(one, "kafka-kraft", kafka.RELEASES["3.9.2"], one.options, "kraft")
    assert [n.voter is not None for n in pair] == [True, False]  # never two voters


def test_in_namespaces_every_node_uses_kafkas_usual_ports(tmp_path):
    spec = launch(tmp_path, "kafka-kraft", netns=True)
    assert isinstance(spec.options, kafka.KafkaKraftOptions)
    nodes = kafka._nodes(spec, "kafka-kraft", kafka.RELEASES["3.9.2"], spec.options, "kraft")
    assert {(n.port, n.controller_port) for n in nodes} == {(9092, 9093)}
    assert [v[1] for v in nodes[0].voters] == ["198.18.0.2", "198.18.0.3", "198.18.0.4"]


def test_the_box_options_are_validated_and_reach_the_jvm(tmp_path):
    spec = launch(tmp_path, "kafka-zk", options={"kafka-zk": {"heap_mb": 1024,
                                                              "io_threads": 4}})
    command = architectures.get("kafka-zk").command(spec)
    argv = command(node(tmp_path, 0)).argv
    assert "-Xms1024m" in argv and "-Xmx1024m" in argv
    assert properties(Path(argv[-1]))["num.io.threads"] == "4"
    assert properties(Path(argv[-1]))["zookeeper.session.timeout.ms"] == "18000"
    fast = launch(tmp_path, "kafka-zk", options={"kafka-zk": {"session_timeout_ms": 4000}})
    argv = architectures.get("kafka-zk").command(fast)(node(tmp_path, 0)).argv
    assert properties(Path(argv[-1]))["zookeeper.session.timeout.ms"] == "4000"
    with pytest.raises(UserError, match=r"kafka-zk.heap_mb: "):
        ClusterSpec("kafka-zk", options={"kafka-zk": {"heap_mb": 1}})
    with pytest.raises(UserError, match=r"kafka-kraft.release: "):
        ClusterSpec("kafka-kraft", options={"kafka-kraft": {"release": "2.8.0"}})


def test_what_is_not_built_for_real_kafka_is_refused_in_one_line(tmp_path):
    entry = architectures.get("kafka-zk")
    with pytest.raises(UserError, match=r"^kafka-zk: the broker setting "
                                        r"--replica-lag-time-max-ms has no Kafka translation"):
        entry.command(launch(tmp_path, "kafka-zk",
                             broker_args=("--replica-lag-time-max-ms", "10")))
    with pytest.raises(UserError, match=r"^kafka-zk runs on this machine only"):
        entry.command(dataclasses.replace(launch(tmp_path, "kafka-zk"), machines=(LOCAL,) * 3,
                                          roots=(tmp_path,) * 3))
    secured = dataclasses.replace(launch(tmp_path, "kafka-zk").settings,
                                  protocol=ClusterSpec("dsbs").protocol.__class__("SSL"))
    with pytest.raises(UserError, match=r"^kafka-zk: PLAINTEXT listeners only"):
        entry.command(dataclasses.replace(launch(tmp_path, "kafka-zk"), settings=secured))
    command = entry.command(launch(tmp_path, "kafka-zk"))
    with pytest.raises(UserError, match=r"^--metrics: real Kafka's metrics are JMX"):
        command(node(tmp_path, 0, metrics="127.0.0.1:0"))


def test_the_metadata_studys_limits_bound_nothing_on_kafka(tmp_path):
    """The twins' --max-topics and --max-partitions-per-topic guard one Python process's
    tables; Kafka has no such limit, so they are accepted and set nothing, beside a setting
    that does translate."""
    given = ("--max-topics", "1000", "--max-partitions-per-topic", "10000",
             "--min-insync-replicas", "2")
    argv = architectures.get("kafka-zk").command(
        launch(tmp_path, "kafka-zk", broker_args=given))(node(tmp_path, 0)).argv
    props = properties(Path(argv[-1]))
    assert props["min.insync.replicas"] == "2"
    assert not {"1000", "10000"} & set(props.values())


def test_real_kafka_is_a_reference_that_applies_the_cached_policy_only():
    for name in ("kafka-zk", "kafka-kraft"):
        entry = architectures.get(name)
        assert entry.reference and not entry.compared
        assert entry.metadata_checks == ("cached",)
    assert "kafka-zk" not in architectures.under_test()
    assert architectures.get("kafka-zk").coordination.messages == "zookeeper:packets_received"


def test_a_jvm_warms_up_until_two_sessions_agree_or_the_cap():
    from harness.driver.runner import STEADY_MAX_SESSIONS, _steady

    assert architectures.get("kafka-kraft").warmup_until_steady
    assert not architectures.get("zk").warmup_until_steady
    assert not _steady([]) and not _steady([10_000.0])
    assert not _steady([10_000.0, 20_000.0, 30_000.0])  # still compiling
    assert _steady([10_000.0, 30_000.0, 31_000.0])
    assert not _steady([0.0, 0.0])
    assert _steady([float(i) for i in range(1, STEADY_MAX_SESSIONS + 1)])  # capped
