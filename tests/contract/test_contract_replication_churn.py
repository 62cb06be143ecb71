"""Brokers killed and restarted again and again under load: no acknowledged record is lost.

On every architecture that replicates, a three-broker cluster (real processes) holds a topic
of 3 partitions, replication factor 3 and min.insync.replicas=2. A confluent-kafka producer
(acks=all, enable.idempotence) writes numbered records to every partition without pause while
each round SIGKILLs the leader of a random partition, waits until the survivors show a new
leader for it, starts the victim again and waits until it is back in every ISR. Then every
record the producer saw acknowledged must be consumed exactly once, in order, per partition.

Failure detection is shortened for the test (dsbs: the LOCAL gossip preset; zk: a 4 s
session), so a round takes seconds. ``TWINBENCH_CHURN_ROUNDS`` sets the rounds per
architecture: 3 by default (``make test``: each kill after the first lands on a cluster that
has already failed over and taken a broker back), ``make test-churn`` runs 20 and prints, per
architecture, records acknowledged and lost and the failover times (kill to a new leader on
every survivor's Metadata).
"""

from __future__ import annotations

import os
import random
import statistics
import threading
import time
import uuid

import pytest

from harness.cluster.spec import ClusterSpec
from tests.support.clusters import REPLICATING, start_spec
from tests.support.ops import connect, eventually

PARTITIONS = 3
ROUNDS = int(os.environ.get("TWINBENCH_CHURN_ROUNDS", "3"))

# A round takes seconds to tens of seconds (ZooKeeper's session expiry, a restart, catching up).
pytestmark = [pytest.mark.integration, pytest.mark.multi_broker, pytest.mark.replicated,
              pytest.mark.slow, pytest.mark.timeout(180 + 90 * ROUNDS)]


@pytest.fixture(scope="module", params=REPLICATING)
def churn_cluster(request, tmp_path_factory):
    arch = request.param
    cluster = start_spec(ClusterSpec(arch, brokers=3,
                                     data_dir=tmp_path_factory.mktemp(f"churn-{arch}"),
                                     options={"dsbs": {"gossip_preset": "local"},
                                              "zk": {"session_timeout_ms": 4000}}))
    yield cluster
    cluster.stop()


def _partitions(broker, topic: str) -> dict[int, tuple[int, list[int]]]:
    """partition -> (leader, isr) as ``broker``'s Metadata shows them ({} while unknown)."""
    with connect(broker, timeout_s=5) as p:
        md = p.metadata([topic])
    return {x.partition_index: (x.leader_id, sorted(x.isr_nodes))
            for x in md.topics[0].partitions}


class Producer:
    """Numbered records to every partition, as fast as acks=all allows, in a thread."""

    def __init__(self, ck, bootstrap: str, topic: str) -> None:
        self.topic = topic
        self.acked: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
        self.failed: list[str] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._producer = ck.Producer({
            "bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
            "linger.ms": 5, "message.timeout.ms": 120_000,
            "topic.metadata.refresh.interval.ms": 1000,
            "log_level": 2})  # the killed broker's refused connections are expected
        self._thread = threading.Thread(target=self._run, name="churn-producer", daemon=True)

    def _delivered(self, err, msg) -> None:
        with self._lock:
            if err is not None:
                self.failed.append(err.name())
            else:
                self.acked[msg.partition()].append(msg.value())

    def _run(self) -> None:
        seq = 0
        while not self._stop.is_set():
            for p in range(PARTITIONS):
                try:
                    self._producer.produce(self.topic, f"p{p}-{seq:07d}".encode(), partition=p,
                                           on_delivery=self._delivered)
                except BufferError:
                    self._producer.poll(0.05)
            seq += 1
            self._producer.poll(0.002)

    def start(self) -> None:
        self._thread.start()

    def finish(self) -> int:
        self._stop.set()
        self._thread.join(30)
        return self._producer.flush(150)

    def count(self) -> int:
        with self._lock:
            return sum(len(v) for v in self.acked.values())


def _consume(ck, bootstrap: str, topic: str) -> dict[int, list[bytes]]:
    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{topic}",
                            "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        ends = {p: consumer.get_watermark_offsets(ck.TopicPartition(topic, p), timeout=30)[1]
                for p in range(PARTITIONS)}
        consumer.assign([ck.TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        got: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
        seen = dict.fromkeys(range(PARTITIONS), -1)
        deadline = time.monotonic() + 120
        while any(seen[p] + 1 < ends[p] for p in range(PARTITIONS)):
            assert time.monotonic() < deadline, (seen, ends)
            for m in consumer.consume(1000, 0.5):
                if m.error():
                    continue
                got[m.partition()].append(m.value())
                seen[m.partition()] = m.offset()
        return got
    finally:
        consumer.close()


def test_repeated_kills_and_restarts_under_load_lose_no_acknowledged_record(churn_cluster):
    ck = pytest.importorskip("confluent_kafka")
    from confluent_kafka.admin import AdminClient, NewTopic

    cluster = churn_cluster
    arch = cluster.spec.arch
    seed = int(os.environ.get("TWINBENCH_CHURN_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed)
    topic = f"churn-{uuid.uuid4().hex[:10]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=PARTITIONS, replication_factor=3,
                                  config={"min.insync.replicas": "2"})],
                        request_timeout=30)[topic].result(30)
    everyone = sorted(b.node_id for b in cluster.brokers)

    def full(broker) -> bool:
        parts = _partitions(broker, topic)
        return len(parts) == PARTITIONS and all(
            leader >= 0 and isr == everyone for leader, isr in parts.values())

    for b in cluster.brokers:
        eventually(lambda b=b: full(b), timeout_s=60, what=f"{topic} in sync on {b.port}")
    producer = Producer(ck, cluster.bootstrap, topic)
    producer.start()
    failovers = []
    try:
        for _ in range(ROUNDS):
            before = producer.count()
            eventually(lambda n=before: producer.count() > n + 50, timeout_s=60,
                       what="records acknowledged before the kill")
            partition = rng.randrange(PARTITIONS)
            victim = _partitions(cluster.brokers[0], topic)[partition][0]
            survivors = [b for b in cluster.brokers if b.node_id != victim]
            killed = time.monotonic()
            cluster.kill_broker(victim)
            for b in survivors:
                eventually(lambda b=b, p=partition, v=victim: (s := _partitions(b, topic).get(p))
                           and s[0] not in (-1, v), timeout_s=60,
                           what=f"a new leader of partition {partition} on {b.port}")
            failovers.append(time.monotonic() - killed)
            cluster.restart_broker(victim)
            for b in cluster.brokers:
                eventually(lambda b=b: full(b), timeout_s=90,
                           what=f"broker {victim} back in every ISR on {b.port}")
    finally:
        unsent = producer.finish()
    got = _consume(ck, cluster.bootstrap, topic)
    acked = producer.count()
    lost = {p: [v for v in producer.acked[p] if v not in set(got[p])] for p in range(PARTITIONS)}
    print(f"\nchurn {arch}: seed {seed}, {ROUNDS} leader kills, {acked} records acknowledged, "
          f"{sum(map(len, lost.values()))} lost, {len(producer.failed)} failed deliveries, "
          f"failover median {statistics.median(failovers):.2f} s, max {max(failovers):.2f} s")
    assert unsent == 0
    assert acked > 0
    for p in range(PARTITIONS):
        assert not lost[p], (p, lost[p][:5])
        # Exactly once and in order: what was consumed, restricted to what was acknowledged,
        # is the acknowledged sequence itself (retries of unacknowledged records may appear).
        mine = set(producer.acked[p])
        assert [v for v in got[p] if v in mine] == producer.acked[p], p
        assert len(got[p]) == len(set(got[p])), f"partition {p} holds a record twice"
