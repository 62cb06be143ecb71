"""Replication with real clients: a topic of replication factor 3 on a three-broker cluster,
acks=all, the leader killed (SIGKILL) mid-stream, a new leader elected from the ISR, and every
acknowledged record still there, once and in order; min.insync.replicas enforced.

Only architectures whose coordinator replicates (``IsrChanges``; tests.support.clusters.
REPLICATING) take a factor above 1 and run these tests; the others must keep refusing it with
the reason (test_contract.py checks the refusal).
"""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from brokers.core.errors import NotEnoughReplicas
from brokers.core.replication.epochs import LeaderEpochCache
from tests.support.ops import connect, eventually, produce
from tests.support.record_builder import build_batch

pytestmark = [pytest.mark.integration, pytest.mark.multi_broker, pytest.mark.replicated]


def _state(broker, topic: str) -> tuple[int, list[int]]:
    """(leader, isr) of partition 0 as ``broker``'s Metadata shows it; (-1, []) while it does
    not know the topic yet (its watches lag the creation)."""
    with connect(broker) as p:
        md = p.metadata([topic])
    if not md.topics[0].partitions:
        return -1, []
    part = md.topics[0].partitions[0]
    return part.leader_id, sorted(part.isr_nodes)


def _create(cluster, topic: str, min_isr: int) -> int:
    ck = pytest.importorskip("confluent_kafka")
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=3,
                                  config={"min.insync.replicas": str(min_isr)})],
                        request_timeout=30)[topic].result(30)
    assert ck is not None
    everyone = sorted(b.node_id for b in cluster.brokers)
    for b in cluster.brokers:
        eventually(lambda b=b: _state(b, topic)[1] == everyone and _state(b, topic),
                   what=f"{topic} with a full ISR on {b.port}")
    return _state(cluster.brokers[0], topic)[0]


def _by_node(cluster, node_id: int):
    return next(b for b in cluster.brokers if b.node_id == node_id)


def test_a_killed_leader_loses_no_acknowledged_record(cluster):
    ck = pytest.importorskip("confluent_kafka")
    topic = f"repl-{uuid.uuid4().hex[:10]}"
    victim = _create(cluster, topic, min_isr=2)
    producer = ck.Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all",
                            "enable.idempotence": True, "linger.ms": 5,
                            "message.timeout.ms": 60_000})
    acked: list[bytes] = []
    failed: list[str] = []
    lock = threading.Lock()

    def delivered(err, msg):
        with lock:
            (failed.append(err.name()) if err is not None else acked.append(msg.value()))

    total = 4_000
    for i in range(total):
        producer.produce(topic, f"r{i:05d}".encode(), partition=0, on_delivery=delivered)
        producer.poll(0)
        if i == total // 2:
            producer.flush(30)
            cluster.kill_broker(victim)
    try:
        assert producer.flush(90) == 0
        survivors = [b for b in cluster.brokers if b.node_id != victim]
        _, isr = eventually(lambda: (s := _state(survivors[0], topic))[0] not in (
            -1, victim) and s, timeout_s=60, what="a new leader")
        assert victim not in isr
        # Idempotence plus acks=all: every record acknowledged, none twice, in order.
        assert not failed, failed[:5]
        assert acked == [f"r{i:05d}".encode() for i in range(total)]
        consumer = ck.Consumer({"bootstrap.servers": cluster.bootstrap,
                                "group.id": f"g-{topic}", "auto.offset.reset": "earliest",
                                "enable.auto.commit": False})
        consumer.subscribe([topic])
        got: list[bytes] = []
        deadline = time.monotonic() + 60
        while len(got) < total and time.monotonic() < deadline:
            got += [m.value() for m in consumer.consume(1000, 0.5) if not m.error()]
        consumer.close()
        assert got == acked, (len(got), [_state(b, topic) for b in survivors])
    finally:
        cluster.restart_broker(victim)
    # The old leader truncates to the new leader's log, catches up and rejoins the ISR.
    everyone = sorted(b.node_id for b in cluster.brokers)
    eventually(lambda: _state(cluster.brokers[0], topic)[1] == everyone, timeout_s=60,
               what=f"broker {victim} back in the ISR")
    # Every replica keeps its leader-epoch cache in Kafka's checkpoint file: the first
    # leader's epoch and the new one's, where the new leader's records begin.
    for b in cluster.brokers:
        path = b.data_dir / "logs" / f"{topic}-0" / "leader-epoch-checkpoint"
        cache = eventually(lambda p=path: p.exists() and len(
            (c := LeaderEpochCache.decode(p.read_text())).entries) >= 2 and c,
            what=f"two epochs in {path}")
        assert cache.entries[0].start_offset == 0 and cache.entries[1].start_offset > 0


def test_min_insync_replicas_refuses_acks_all_but_not_acks_one(cluster):
    topic = f"misr-{uuid.uuid4().hex[:10]}"
    leader = _create(cluster, topic, min_isr=3)
    follower = next(b.node_id for b in cluster.brokers if b.node_id != leader)

    assert produce(_by_node(cluster, leader), topic, 0, build_batch([(None, b"a")]), acks=-1) \
        .error_code == 0
    cluster.kill_broker(follower)
    try:
        # Once the stored ISR has lost the dead follower (its ZooKeeper session expires, the
        # controller drops it), acks=all is refused before the append. Until then an attempt
        # waits for the dead follower and ends in a timeout or NOT_ENOUGH_REPLICAS_AFTER_APPEND.
        eventually(lambda: produce(_by_node(cluster, leader), topic, 0,
                                   build_batch([(None, b"b")]), acks=-1).error_code
                   == NotEnoughReplicas.code,
                   timeout_s=90, what="NOT_ENOUGH_REPLICAS for acks=all")
        assert produce(_by_node(cluster, leader), topic, 0, build_batch([(None, b"c")]), acks=1) \
            .error_code == 0
    finally:
        cluster.restart_broker(follower)
    eventually(lambda: len(_state(_by_node(cluster, leader), topic)[1]) == 3, timeout_s=60,
               what=f"broker {follower} back in the ISR")
    assert produce(_by_node(cluster, leader), topic, 0, build_batch([(None, b"d")]), acks=-1) \
        .error_code == 0


def test_deleted_records_stay_deleted_after_a_failover(cluster):
    """DeleteRecords on the leader of a replicated partition: the followers move their log
    start too (from their next fetch), so a new leader does not serve what was deleted."""
    from brokers.core.errors import OffsetOutOfRange
    from brokers.core.protocol.api import ApiKey
    from brokers.core.protocol.messages.delete_records import (
        DeleteRecordsPartition,
        DeleteRecordsRequest,
        DeleteRecordsTopic,
    )
    from brokers.core.storage.log import START_OFFSET_FILE
    from harness.cluster.kafka_probe import KafkaProbe
    from tests.support.ops import fetch

    topic = f"delrec-{uuid.uuid4().hex[:10]}"
    victim = _create(cluster, topic, min_isr=2)
    node = _by_node(cluster, victim)
    for i in range(10):
        assert produce(node, topic, 0, build_batch([(None, b"v%d" % i)]), acks=-1) \
            .error_code == 0
    with KafkaProbe(node.host, node.port) as probe:
        got = probe.request(ApiKey.DELETE_RECORDS, 2, DeleteRecordsRequest(topics=[
            DeleteRecordsTopic(name=topic, partitions=[
                DeleteRecordsPartition(partition_index=0, offset=-1)])]))
    assert got.topics[0].partitions[0].low_watermark == 10  # acks=all: all 10 are in the ISR
    followers = [b for b in cluster.brokers if b.node_id != victim]
    for b in followers:
        path = b.data_dir / "logs" / f"{topic}-0" / START_OFFSET_FILE
        eventually(lambda p=path: p.exists() and p.read_text().strip() == "10",
                   what=f"broker {b.node_id}'s log start at 10")
    cluster.kill_broker(victim)
    try:
        new, _ = eventually(lambda: (s := _state(followers[0], topic))[0] not in (
            -1, victim) and s, timeout_s=60, what="a new leader")
        leader = _by_node(cluster, new)
        assert fetch(leader, topic, 0, 0).error_code == OffsetOutOfRange.code
        assert fetch(leader, topic, 0, 10).log_start_offset == 10
    finally:
        cluster.restart_broker(victim)


def _coordinator_of(cluster, group: str, ask) -> object:
    """The live broker ``ask`` names as ``group``'s coordinator (None while it names none)."""
    from brokers.core.protocol.api import ApiKey
    from brokers.core.protocol.messages.find_coordinator import FindCoordinatorRequest

    try:
        with connect(ask) as c:
            found = c.request(ApiKey.FIND_COORDINATOR, 2, FindCoordinatorRequest(key=group))
    except OSError:
        return None
    if found.error_code:
        return None
    return next((b for b in cluster.brokers if b.port == found.port), None)


def _commit(broker, group: str, topic: str, offset: int) -> int:
    from brokers.core.protocol.api import ApiKey
    from brokers.core.protocol.messages.offset_commit import (
        OffsetCommitRequest,
        OffsetCommitRequestPartition,
        OffsetCommitRequestTopic,
    )

    with connect(broker) as c:
        res = c.request(ApiKey.OFFSET_COMMIT, 7, OffsetCommitRequest(
            group_id=group, generation_id_or_member_epoch=-1, member_id="",
            topics=[OffsetCommitRequestTopic(name=topic, partitions=[
                OffsetCommitRequestPartition(partition_index=0, committed_offset=offset)])]))
    return res.topics[0].partitions[0].error_code


def _committed(broker, group: str, topic: str) -> int | None:
    """The group's committed offset as ``broker`` serves it; None while it cannot say (not the
    coordinator, loading, unreachable)."""
    from brokers.core.protocol.api import ApiKey
    from brokers.core.protocol.messages.offset_fetch import (
        OffsetFetchRequest,
        OffsetFetchRequestTopic,
    )

    try:
        with connect(broker) as c:
            got = c.request(ApiKey.OFFSET_FETCH, 5, OffsetFetchRequest(
                group_id=group,
                topics=[OffsetFetchRequestTopic(name=topic, partition_indexes=[0])]))
    except OSError:
        return None
    if got.error_code or not got.topics:  # not the coordinator, or loading: no topics
        return None
    part = got.topics[0].partitions[0]
    return None if part.error_code else part.committed_offset


def test_a_commit_survives_its_coordinator_killed_right_after_the_ack(cluster):
    """Issue 31's schedule: commit, SIGKILL the group's coordinator at once, and read the
    offset from its successor; then the old coordinator returns (with its file, older than the
    successor's newest commit) and must serve the newest, not its own."""
    topic, group = f"offs-{uuid.uuid4().hex[:10]}", f"g-{uuid.uuid4().hex[:8]}"
    _create(cluster, topic, min_isr=2)
    first = eventually(lambda: _coordinator_of(cluster, group, cluster.brokers[0]),
                       what="a coordinator")
    for offset in range(1, 51):
        assert _commit(first, group, topic, offset) == 0
    cluster.kill_broker(first.node_id)
    others = [b for b in cluster.brokers if b is not first]
    try:
        second = eventually(lambda: (c := _coordinator_of(cluster, group, others[0]))
                            not in (None, first) and c, timeout_s=60, what="a new coordinator")
        got = eventually(lambda: _committed(second, group, topic), timeout_s=30,
                         what="the successor's committed offset")
        assert got == 50, f"acknowledged 50, the successor serves {got}"
        eventually(lambda: _commit(second, group, topic, 80) == 0, what="a commit of 80")
    finally:
        cluster.restart_broker(first.node_id)
    # Whoever coordinates now (the returning broker, on dsbs, ranks first again) serves 80.
    eventually(lambda: _committed(eventually(
        lambda: _coordinator_of(cluster, group, cluster.brokers[0]), what="a coordinator"),
        group, topic) == 80, timeout_s=60, what="80 served after the return")
    returned = cluster.broker(first.node_id)
    if _coordinator_of(cluster, group, returned) is returned:
        assert _committed(returned, group, topic) == 80
