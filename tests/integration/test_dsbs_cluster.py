"""A three-broker DSBS cluster of real processes under failures (gossip preset: local)."""

from __future__ import annotations

import socket
import time
import uuid

import pytest

from brokers.core.protocol.api import ApiKey
from brokers.core.protocol.messages.create_topics import CreatableTopic, CreateTopicsRequest
from brokers.core.protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic
from brokers.core.protocol.messages.produce import (
    PartitionProduceData,
    ProduceRequest,
    TopicProduceData,
)
from brokers.core.protocol.records import build_batch, decode_records
from harness.cluster import Cluster, ClusterSpec
from harness.kafka_probe import KafkaProbe

pytestmark = pytest.mark.integration

DETECTION_BUDGET_S = 3.0  # issue 4: every survivor declares a SIGKILLed broker dead within 3 s


@pytest.fixture
def cluster(tmp_path):
    c = Cluster(ClusterSpec("dsbs", brokers=3, data_dir=tmp_path, gossip_preset="local")).start()
    yield c
    c.stop()


def eventually(probe, timeout_s: float = 30.0, what: str = "condition"):
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        try:
            last = probe()
        except (OSError, ConnectionError) as exc:
            last = exc
        else:
            if last:
                return last
        time.sleep(0.02)
    raise AssertionError(f"{what} not reached in {timeout_s} s (last: {last!r})")


def metadata(broker, topics):
    with KafkaProbe(broker.host, broker.port) as p:
        return p.metadata(topics)


def leaders(broker, topic: str) -> dict[int, int]:
    return {x.partition_index: x.leader_id for x in metadata(broker, [topic]).topics[0].partitions}


def create(cluster, topic: str, partitions: int) -> dict[int, int]:
    with KafkaProbe(cluster.brokers[0].host, cluster.brokers[0].port) as p:
        res = p.request(ApiKey.CREATE_TOPICS, 4, CreateTopicsRequest(topics=[
            CreatableTopic(name=topic, num_partitions=partitions, replication_factor=1)]))
    assert res.topics[0].error_code == 0
    for b in cluster.brokers:
        eventually(lambda b=b: all(v >= 0 for v in leaders(b, topic).values()) and
                   len(leaders(b, topic)) == partitions, what=f"topic on broker {b.node_id}")
    return leaders(cluster.brokers[0], topic)


def produce(broker, topic, partition, values) -> int:
    with KafkaProbe(broker.host, broker.port) as p:
        res = p.request(ApiKey.PRODUCE, 8, ProduceRequest(acks=1, timeout_ms=5000, topic_data=[
            TopicProduceData(name=topic, partition_data=[PartitionProduceData(
                index=partition, records=build_batch([(None, v) for v in values]))])]))
    return res.responses[0].partition_responses[0].error_code


def fetch_values(broker, topic, partition) -> list[bytes]:
    with KafkaProbe(broker.host, broker.port) as p:
        res = p.request(ApiKey.FETCH, 11, FetchRequest(
            replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20,
            topics=[FetchTopic(topic=topic, partitions=[FetchPartition(
                partition=partition, fetch_offset=0, partition_max_bytes=1 << 20)])]))
    part = res.responses[0].partitions[0]
    assert part.error_code == 0, part.error_code
    return [r.value for r in decode_records(part.records)]


def test_sigkilled_broker_is_declared_dead_within_budget_and_rejoins_with_its_data(cluster):
    topic = f"dk-{uuid.uuid4().hex[:8]}"
    lead = create(cluster, topic, 3)
    victim = cluster.brokers[2]
    partition = next(p for p, n in lead.items() if n == victim.node_id)
    values = [f"v{i}".encode() for i in range(40)]
    assert produce(victim, topic, partition, values) == 0
    survivors = cluster.brokers[:2]
    killed_at = time.monotonic()
    cluster.kill_broker(victim.node_id)
    for b in survivors:
        eventually(lambda b=b: victim.port not in {x.port for x in metadata(b, []).brokers},
                   timeout_s=10, what=f"broker {b.node_id} to drop the killed broker")
    detected = time.monotonic() - killed_at
    assert detected < DETECTION_BUDGET_S, f"detection took {detected:.2f} s"
    for b in survivors:
        assert leaders(b, topic)[partition] == -1  # unavailable, not moved: no replication yet
    cluster.restart_broker(victim.node_id)
    for b in cluster.brokers:
        eventually(lambda b=b: leaders(b, topic)[partition] == victim.node_id,
                   what=f"broker {b.node_id} to see the restarted leader")
    assert fetch_values(victim, topic, partition) == values


def test_junk_datagrams_on_the_gossip_port_do_not_hurt(cluster):
    gossip_ports = [int(a.rpartition(":")[2]) for a in
                    [argv[argv.index("--gossip") + 1] for argv in cluster._argvs]]
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for port in gossip_ports:
            for payload in (b"", b"\x00", b"junk" * 100, b"\xff" * 1400, bytes(range(256)) * 5):
                s.sendto(payload, ("127.0.0.1", port))
    topic = f"junk-{uuid.uuid4().hex[:8]}"
    create(cluster, topic, 3)
    for b in cluster.brokers:
        assert b.process.poll() is None
        assert len(metadata(b, []).brokers) == 3


def test_confluent_group_across_three_dsbs_brokers_resumes_from_commits(cluster):
    ck = pytest.importorskip("confluent_kafka")
    topic, group = f"dg-{uuid.uuid4().hex[:8]}", f"grp-{uuid.uuid4().hex[:8]}"
    create(cluster, topic, 3)
    producer = ck.Producer({"bootstrap.servers": cluster.bootstrap})
    for i in range(60):
        producer.produce(topic, f"m{i}".encode(), partition=i % 3)
    assert producer.flush(30) == 0

    def consume_all(n: int) -> list[bytes]:
        c = ck.Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
        c.subscribe([topic])
        got: list[bytes] = []
        deadline = time.monotonic() + 60
        while len(got) < n and time.monotonic() < deadline:
            msg = c.poll(0.2)
            if msg is not None and not msg.error():
                got.append(msg.value())
        c.commit(asynchronous=False)
        c.close()
        return got

    assert sorted(consume_all(60)) == sorted(f"m{i}".encode() for i in range(60))
    for i in range(60, 66):
        producer.produce(topic, f"m{i}".encode(), partition=i % 3)
    assert producer.flush(30) == 0
    # A new consumer in the group starts from the committed offsets: only the new records.
    assert sorted(consume_all(6)) == sorted(f"m{i}".encode() for i in range(60, 66))
