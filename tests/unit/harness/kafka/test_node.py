"""A real Kafka node's files and command line (harness/kafka/node.py): pure, no JVM runs here
(tests/integration/test_real_kafka.py starts them)."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from brokers.core.errors import UserError
from harness.kafka import node as kn
from harness.kafka.releases import RELEASES

K39, K41 = RELEASES["3.9.2"], RELEASES["4.1.1"]
VOTERS = ((1, "10.0.0.1", 9093), (2, "10.0.0.2", 9093), (3, "10.0.0.3", 9093))


def props(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if line)


def test_a_kraft_node_is_a_combined_broker_and_controller_with_static_voters():
    node = kn.KafkaNode(K41, 2, "10.0.0.2", 9092, Path("/d"), "kraft", controller_port=9093,
                        voters=VOTERS)
    p = props(kn.server_properties(node))
    assert p["process.roles"] == "broker,controller" and p["node.id"] == "2"
    assert p["controller.quorum.voters"] == "1@10.0.0.1:9093,2@10.0.0.2:9093,3@10.0.0.3:9093"
    assert p["listeners"] == "PLAINTEXT://10.0.0.2:9092,CONTROLLER://10.0.0.2:9093"
    assert p["advertised.listeners"] == "PLAINTEXT://10.0.0.2:9092"  # clients never see 9093
    assert "zookeeper.connect" not in p and "broker.id" not in p


def test_a_zookeeper_node_has_its_chroot_and_the_box_settings():
    node = kn.KafkaNode(K39, 1, "127.0.0.1", 9092, Path("/d"), "zookeeper",
                        zookeeper_connect="127.0.0.1:2181/k39-x")
    p = props(kn.server_properties(node))
    assert p["broker.id"] == "1" and p["zookeeper.connect"] == "127.0.0.1:2181/k39-x"
    assert "process.roles" not in p
    s = kn.BoxSettings()
    assert p["num.io.threads"] == str(s.io_threads)
    assert p["offsets.topic.num.partitions"] == str(s.offsets_partitions)
    assert p["auto.create.topics.enable"] == "false"
    assert p["offsets.topic.replication.factor"] == "3"
    assert "log.flush.interval.messages" not in p  # flushing left to the OS, as Kafka's default


def test_a_node_beyond_the_voters_is_a_broker_that_knows_the_quorum():
    node = kn.KafkaNode(K39, 4, "10.0.0.4", 9092, Path("/d"), "kraft", voters=VOTERS)
    p = props(kn.server_properties(node))
    assert p["process.roles"] == "broker"
    assert p["listeners"] == "PLAINTEXT://10.0.0.4:9092"  # no controller listener of its own
    assert p["controller.quorum.voters"].startswith("1@10.0.0.1:9093")
    assert p["controller.listener.names"] == "CONTROLLER"


def test_the_cluster_policies_become_kafka_properties():
    node = kn.KafkaNode(K39, 1, "h", 1, Path("/d"), "zookeeper", zookeeper_connect="z",
                        flush="interval_ms:250", num_partitions=4, auto_create_topics=True,
                        min_insync_replicas=2)
    p = props(kn.server_properties(node))
    assert p["log.flush.interval.ms"] == p["log.flush.scheduler.interval.ms"] == "250"
    assert (p["num.partitions"], p["auto.create.topics.enable"]) == ("4", "true")
    assert p["min.insync.replicas"] == "2"
    assert kn.flush_properties("every_batch") == ["log.flush.interval.messages=1"]
    assert kn.flush_properties("os") == []
    for bad in ("interval_ms:0", "interval_ms:x", "always"):
        with pytest.raises(UserError, match="flush policy"):
            kn.flush_properties(bad)


def test_a_one_broker_cluster_gets_internal_topics_it_can_hold():
    node = kn.KafkaNode(K39, 1, "h", 1, Path("/d"), "zookeeper", zookeeper_connect="z",
                        cluster_brokers=1)
    p = props(kn.server_properties(node))
    assert p["offsets.topic.replication.factor"] == "1"
    assert p["transaction.state.log.min.isr"] == "1"


def test_impossible_nodes_are_refused_in_one_line():
    with pytest.raises(UserError, match="does not run in zookeeper mode"):
        kn.KafkaNode(K41, 1, "h", 1, Path("/d"), "zookeeper", zookeeper_connect="z")
    with pytest.raises(UserError, match="has no voters"):
        kn.KafkaNode(K41, 9, "h", 1, Path("/d"), "kraft")
    with pytest.raises(UserError, match="is not its controller listener"):
        kn.KafkaNode(K41, 2, "10.0.0.2", 9092, Path("/d"), "kraft", controller_port=9094,
                     voters=VOTERS)
    with pytest.raises(UserError, match="needs zookeeper_connect"):
        kn.KafkaNode(K39, 1, "h", 1, Path("/d"), "zookeeper")


@pytest.mark.parametrize(("release", "flag"), [(K39, "-Dlog4j.configuration=file:"),
                                               (K41, "-Dlog4j2.configurationFile=")])
def test_the_command_line_has_the_release_class_path_and_its_logging(release, flag):
    node = kn.KafkaNode(release, 1, "h", 1, Path("/run/d"), "kraft", controller_port=2,
                        voters=((1, "h", 2),))
    argv = kn.java_command(node, kn.KAFKA_MAIN, ["/run/p"], Path("/run/log.cfg"))
    assert argv[0] == "java" and "-Xmx512m" in argv and "-Xms512m" in argv
    assert any(a.startswith(flag) for a in argv)
    cp = argv[argv.index("-cp") + 1]
    assert cp.endswith(f"{release.version}/lib/*")  # expanded by the JVM, not a shell
    assert argv[-2:] == [kn.KAFKA_MAIN, "/run/p"]
    assert "-Duser.language=en" in argv  # the perf tools printf numbers


def test_cluster_ids_are_kafka_uuids():
    for _ in range(200):
        cid = kn.new_cluster_id()
        assert len(cid) == 22 and not cid.startswith("-") and cid not in kn.RESERVED_IDS
        assert len(base64.urlsafe_b64decode(cid + "==")) == 16
