"""A three-broker DSBS cluster of real processes under failures (gossip preset: local)."""

from __future__ import annotations

import socket
import time
import uuid

import pytest

from harness.cluster.running import ProcessCluster
from harness.cluster.spec import ClusterSpec
from tests.support.ops import (
    connect,
    create_everywhere,
    eventually,
    fetch_values,
    leaders,
    produce_values,
)

pytestmark = pytest.mark.integration

# How long detection takes is a benchmark's question (`make perf-detection`,
# harness/bench/detection.py: the LOCAL preset aims at 3 s); here only that it happens, before a
# deadline generous enough for a loaded 2-core machine.
DETECTION_DEADLINE_S = 30.0


@pytest.fixture
def cluster(tmp_path):
    spec = ClusterSpec("dsbs", brokers=3, data_dir=tmp_path,
                       options={"dsbs": {"gossip_preset": "local"}})
    c = ProcessCluster(spec).start()
    yield c
    c.stop()


def metadata(broker, topics):
    with connect(broker) as p:
        return p.metadata(topics)


def test_sigkilled_broker_is_declared_dead_and_rejoins_with_its_data(cluster, record_property):
    topic = f"dk-{uuid.uuid4().hex[:8]}"
    lead = create_everywhere(cluster.brokers, topic, 3)
    victim = cluster.brokers[2]
    partition = next(p for p, n in lead.items() if n == victim.node_id)
    values = [f"v{i}".encode() for i in range(40)]
    assert produce_values(victim, topic, partition, values) == 0
    survivors = cluster.brokers[:2]
    killed_at = time.monotonic()
    cluster.kill_broker(victim.node_id)
    for b in survivors:
        eventually(lambda b=b: victim.port not in {x.port for x in metadata(b, []).brokers},
                   timeout_s=DETECTION_DEADLINE_S,
                   what=f"broker {b.node_id} to drop the killed broker")
    # Reported, not judged (the junit XML carries it).
    record_property("detection_s", round(time.monotonic() - killed_at, 3))
    for b in survivors:
        assert leaders(b, topic)[partition] == -1  # unavailable, not moved: no replication yet
    cluster.restart_broker(victim.node_id)
    for b in cluster.brokers:
        eventually(lambda b=b: leaders(b, topic)[partition] == victim.node_id,
                   what=f"broker {b.node_id} to see the restarted leader")
    assert fetch_values(victim, topic, partition) == values


def test_junk_datagrams_on_the_gossip_port_do_not_hurt(cluster):
    gossip_ports = [int(a.rpartition(":")[2]) for a in
                    [argv[argv.index("--gossip") + 1]
                     for argv in (b.spec.argv for b in cluster.brokers if b.spec)]]
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for port in gossip_ports:
            for payload in (b"", b"\x00", b"junk" * 100, b"\xff" * 1400, bytes(range(256)) * 5):
                s.sendto(payload, ("127.0.0.1", port))
    topic = f"junk-{uuid.uuid4().hex[:8]}"
    create_everywhere(cluster.brokers, topic, 3)
    for b in cluster.brokers:
        assert b.process.poll() is None
        assert len(metadata(b, []).brokers) == 3


def test_confluent_group_across_three_dsbs_brokers_resumes_from_commits(cluster):
    ck = pytest.importorskip("confluent_kafka")
    topic, group = f"dg-{uuid.uuid4().hex[:8]}", f"grp-{uuid.uuid4().hex[:8]}"
    create_everywhere(cluster.brokers, topic, 3)
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
