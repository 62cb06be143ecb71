"""Real Apache Kafka starts from the resolved jars and serves a real client (the smoke test of
issue 33; full runs are documented targets): one combined KRaft node of each pinned release, and
a Kafka 3.9 broker on the provisioned ZooKeeper in a chroot of its own. Each is ready when it
answers Metadata, serves librdkafka (produce at acks=all, consume back), and is stopped by PID."""

from __future__ import annotations

import uuid
from pathlib import Path

import confluent_kafka as ck
import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from harness.cluster.machines import free_ports
from harness.cluster.processes import pid_alive
from harness.kafka import node as kn
from harness.kafka.releases import RELEASES
from harness.services.zookeeper import ZooKeeperHandle

RECORDS = 200
READY_S = 120.0  # JVM start on a loaded 2-core machine; Kafka's own system tests allow 60 s


def round_trip(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("smoke", 1, 1)])["smoke"].result(timeout=60)
    producer = ck.Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    for i in range(RECORDS):
        producer.produce("smoke", str(i).encode())
    assert producer.flush(60) == 0
    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": "smoke",
                            "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe(["smoke"])
    got: list[bytes] = []
    try:
        for _ in range(600):
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                got.append(msg.value() or b"")
            if len(got) == RECORDS:
                break
    finally:
        consumer.close()
    assert got == [str(i).encode() for i in range(RECORDS)]


def run_node(node: kn.KafkaNode, workdir: Path, cluster_id: str | None) -> None:
    files = kn.write_files(node, workdir)
    if cluster_id is not None:
        kn.format_storage(node, files, cluster_id)
    process = kn.start(node, files)
    try:
        kn.wait_brokers({process: node}, READY_S)
        round_trip(f"{node.host}:{node.port}")
    finally:
        process.stop(grace_s=15.0)  # SIGTERM, then SIGKILL: a stop never hangs the run
    assert not pid_alive(process.pid)


@pytest.mark.parametrize("version", sorted(RELEASES))
def test_a_kraft_node_of_each_release_serves_librdkafka(tmp_path, version):
    release = RELEASES[version]
    port, controller = free_ports(2)
    node = kn.KafkaNode(release, 1, "127.0.0.1", port, tmp_path / "data", "kraft",
                        controller_port=controller, voters=((1, "127.0.0.1", controller),),
                        cluster_brokers=1)
    run_node(node, tmp_path, kn.new_cluster_id())


def test_kafka_39_on_zookeeper_serves_librdkafka(tmp_path, zk: ZooKeeperHandle):
    (port,) = free_ports(1)
    chroot = f"/twinbench-kafka-{uuid.uuid4().hex[:8]}"  # away from the zk twin's tree
    node = kn.KafkaNode(RELEASES["3.9.2"], 1, "127.0.0.1", port, tmp_path / "data",
                        "zookeeper", zookeeper_connect=f"{zk.connect_string}{chroot}",
                        cluster_brokers=1)
    run_node(node, tmp_path, None)
