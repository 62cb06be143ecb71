"""Kafka semantics real clients rely on, on every architecture: idempotent produce, ordered
offset commits, concurrent and static group joins, and the auto-creation settings.

Each test drives real broker processes with a real client (confluent-kafka) where the behaviour
is the client's, and with the raw protocol probe where a test needs a request no client sends on
purpose (a duplicate batch, a sequence number from the future, a stale epoch).
"""

from __future__ import annotations

import threading
import uuid

import confluent_kafka as ck
import pytest

from brokers.core.errors import (
    InconsistentGroupProtocol,
    InvalidProducerEpoch,
    OutOfOrderSequenceNumber,
    UnknownTopicOrPartition,
)
from brokers.core.protocol.api import ApiKey
from brokers.core.protocol.messages.find_coordinator import FindCoordinatorRequest
from brokers.core.protocol.messages.init_producer_id import InitProducerIdRequest
from brokers.core.protocol.messages.join_group import JoinGroupRequest, JoinGroupRequestProtocol
from brokers.core.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from brokers.core.protocol.records import iter_batches
from tests.support.clusters import ARCHITECTURES, start_cluster
from tests.support.ops import (
    connect,
    create_everywhere,
    eventually,
    fetch,
    fetch_values,
    leaders,
    produce,
)
from tests.support.record_builder import build_batch

pytestmark = pytest.mark.integration


def fresh(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def leader_of(cluster, topic: str, partition: int = 0):
    node = leaders(cluster.brokers[0], topic)[partition]
    with connect(cluster.brokers[0]) as c:
        port = next(b.port for b in c.metadata([topic]).brokers if b.node_id == node)
    return next(b for b in cluster.brokers if b.port == port)


def coordinator_of(cluster, group: str):
    def find():
        with connect(cluster.brokers[0]) as c:
            found = c.request(ApiKey.FIND_COORDINATOR, 2, FindCoordinatorRequest(key=group))
        return found if found.error_code == 0 else None

    found = eventually(find, what=f"a coordinator for {group}")
    return next(b for b in cluster.brokers if b.port == found.port)


def all_records(broker, topic: str) -> list[bytes]:
    return fetch_values(broker, topic, 0)


# --- idempotent produce -------------------------------------------------------------------------


def test_a_retried_idempotent_batch_is_stored_once_and_bad_sequences_get_kafkas_codes(cluster):
    topic = fresh("idem")
    create_everywhere(cluster.brokers, topic, 1)
    leader = leader_of(cluster, topic)
    with connect(leader) as c:
        init = c.request(ApiKey.INIT_PRODUCER_ID, 1, InitProducerIdRequest(
            transactional_id=None, transaction_timeout_ms=60_000))
    assert init.error_code == 0 and init.producer_id >= 0
    pid, epoch = init.producer_id, init.producer_epoch

    def batch(values, seq, ep=epoch):
        return build_batch([(None, v) for v in values], producer_id=pid, producer_epoch=ep,
                           base_sequence=seq)

    first = batch([b"a", b"b", b"c"], 0)
    assert produce(leader, topic, 0, first).base_offset == 0
    again = produce(leader, topic, 0, first)  # the retry of a timed-out request
    assert (again.error_code, again.base_offset) == (0, 0)
    assert produce(leader, topic, 0, batch([b"d"], 3)).base_offset == 3
    assert produce(leader, topic, 0, first).base_offset == 0  # still among the last 5
    future = produce(leader, topic, 0, batch([b"x"], 100))
    assert future.error_code == OutOfOrderSequenceNumber.code
    # A new epoch starts at 0; after it, the old epoch is fenced.
    assert produce(leader, topic, 0, batch([b"e"], 0, epoch + 1)).error_code == 0
    stale = produce(leader, topic, 0, batch([b"y"], 4, epoch))
    assert stale.error_code == InvalidProducerEpoch.code
    assert all_records(leader, topic) == [b"a", b"b", b"c", b"d", b"e"]
    with connect(leader) as c:  # the broker is up and serving
        assert c.metadata([topic]).topics[0].error_code == 0


def test_a_confluent_idempotent_batch_sent_again_is_stored_once(cluster):
    """The retry of a timed-out request, made deterministic: the exact batch librdkafka sent
    (its producer id, epoch and sequence numbers) reaches the leader a second time."""
    ck = pytest.importorskip("confluent_kafka")
    topic = fresh("idem-ck")
    create_everywhere(cluster.brokers, topic, 1)
    leader = leader_of(cluster, topic)
    producer = ck.Producer({"bootstrap.servers": cluster.bootstrap, "enable.idempotence": True,
                            "linger.ms": 50})
    for i in range(5):
        producer.produce(topic, f"m{i}".encode(), partition=0)
    assert producer.flush(30) == 0
    stored = bytes(fetch(leader, topic, 0).records)
    headers = list(iter_batches(stored))
    assert headers and all(h.producer_id >= 0 and h.base_sequence >= 0 for h in headers)
    last = headers[-1]
    copy = stored[last.position:last.position + last.size]  # the client's bytes, CRC intact
    again = produce(leader, topic, 0, copy)
    assert (again.error_code, again.base_offset) == (0, last.base_offset)
    producer.produce(topic, b"m5", partition=0)  # the producer's sequence goes on unharmed
    assert producer.flush(30) == 0
    assert all_records(leader, topic) == [f"m{i}".encode() for i in range(6)]


# --- offset commits -----------------------------------------------------------------------------


def test_asynchronous_commits_racing_leave_the_last_one_committed(cluster):
    ck = pytest.importorskip("confluent_kafka")
    topic = fresh("commits")
    create_everywhere(cluster.brokers, topic, 1)
    for _ in range(4):  # a fresh group each round: its offset znode does not exist yet
        group = fresh("commits-g")
        acked: list[int] = []
        failed: list[object] = []

        def on_commit(err, partitions, acked=acked, failed=failed):
            (failed.append(err) if err else acked.extend(p.offset for p in partitions))

        consumer = ck.Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group,
                                "enable.auto.commit": False, "on_commit": on_commit})
        tp = ck.TopicPartition(topic, 0)
        consumer.assign([tp])
        try:
            for offset in range(1, 51):
                consumer.commit(offsets=[ck.TopicPartition(topic, 0, offset)],
                                asynchronous=True)
            eventually(lambda c=consumer, a=acked, f=failed: c.poll(0.05) is None
                       and len(a) + len(f) == 50, what="every commit acknowledged")
            assert not failed and sorted(acked) == list(range(1, 51))
            assert consumer.committed([tp], timeout=10)[0].offset == 50
        finally:
            consumer.close()


# --- group joins --------------------------------------------------------------------------------


@pytest.mark.parametrize("round_", range(4))
def test_joins_at_the_same_moment_are_never_an_inconsistent_protocol(cluster, round_):
    group = fresh("joins")
    coordinator = coordinator_of(cluster, group)
    barrier = threading.Barrier(3)
    codes: list[int] = []

    def join(client: str) -> None:
        request = JoinGroupRequest(
            group_id=group, session_timeout_ms=10_000, rebalance_timeout_ms=10_000,
            member_id="", protocol_type="consumer",
            protocols=[JoinGroupRequestProtocol(name="range", metadata=b"")])
        with connect(coordinator, timeout_s=30) as c:
            barrier.wait(10)
            codes.append(c.request(ApiKey.JOIN_GROUP, 3, request).error_code)

    threads = [threading.Thread(target=join, args=(f"c{i}",)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert InconsistentGroupProtocol.code not in codes
    assert codes == [0, 0, 0]


def test_confluent_consumers_started_together_both_get_partitions(cluster):
    ck = pytest.importorskip("confluent_kafka")
    topic = fresh("together")
    create_everywhere(cluster.brokers, topic, 2)
    for _ in range(2):
        group = fresh("together-g")
        consumers = [ck.Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group,
                                  "session.timeout.ms": 10_000})
                     for _ in range(2)]
        errors: list[object] = []
        try:
            for c in consumers:
                c.subscribe([topic])

            def assigned(consumers=consumers, errors=errors):
                for c in consumers:
                    msg = c.poll(0.05)
                    if msg is not None and msg.error():
                        errors.append(msg.error())
                return all(c.assignment() for c in consumers)

            eventually(assigned, timeout_s=60, what="both consumers assigned")
            assert not [e for e in errors
                        if e.code() == ck.KafkaError.INCONSISTENT_GROUP_PROTOCOL]
        finally:
            for c in consumers:
                c.close()


def test_a_static_member_restarting_causes_no_rebalance(cluster):
    ck = pytest.importorskip("confluent_kafka")
    topic, group = fresh("static"), fresh("static-g")
    create_everywhere(cluster.brokers, topic, 2)
    rebalances: list[str] = []

    def consumer(instance: str, log: bool):
        def on_assign(c, partitions):
            if log:
                rebalances.append("assign")

        def on_revoke(c, partitions):
            if log:
                rebalances.append("revoke")

        c = ck.Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group,
                         "group.instance.id": instance, "session.timeout.ms": 30_000,
                         "heartbeat.interval.ms": 500})
        c.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke)
        return c

    stays = consumer("stays", log=True)
    restarts = consumer("restarts", log=False)
    try:
        def both_assigned():
            stays.poll(0.05)
            restarts.poll(0.05)
            return len(stays.assignment()) == 1 and len(restarts.assignment()) == 1

        eventually(both_assigned, timeout_s=60, what="one partition each")
        before = list(rebalances)
        mine = restarts.assignment()
        restarts.close()  # a static member sends no LeaveGroup
        restarts = consumer("restarts", log=False)

        def reassigned():
            stays.poll(0.05)
            restarts.poll(0.05)
            return restarts.assignment()

        assert eventually(reassigned, timeout_s=30, what="the restarted member's partition") \
            == mine
        for _ in range(20):  # heartbeats go on for a few intervals: still no rebalance
            stays.poll(0.1)
            restarts.poll(0.1)
        assert rebalances == before
    finally:
        stays.close()
        restarts.close()


# --- num.partitions and auto.create.topics.enable -----------------------------------------------


@pytest.fixture(scope="module", params=ARCHITECTURES)
def four_partitions(request, tmp_path_factory):
    c = start_cluster(request.param, tmp_path_factory.mktemp(f"np-{request.param}"),
                      brokers=2, num_partitions=4)
    yield c
    c.stop()


@pytest.fixture(scope="module", params=ARCHITECTURES)
def no_auto_create(request, tmp_path_factory):
    c = start_cluster(request.param, tmp_path_factory.mktemp(f"noauto-{request.param}"),
                      brokers=2, auto_create_topics=False)
    yield c
    c.stop()


def _metadata(broker, topic: str):
    with connect(broker) as c:
        return c.request(ApiKey.METADATA, 8, MetadataRequest(
            topics=[MetadataRequestTopic(name=topic)], allow_auto_topic_creation=True))


def test_an_auto_created_topic_gets_num_partitions(four_partitions):
    ck = pytest.importorskip("confluent_kafka")
    topic = fresh("auto4")
    producer = ck.Producer({"bootstrap.servers": four_partitions.bootstrap})
    producer.produce(topic, b"v")  # the client's Metadata request auto-creates it
    assert producer.flush(30) == 0
    for b in four_partitions.brokers:
        got = eventually(lambda b=b: len(_metadata(b, topic).topics[0].partitions) == 4,
                         what="4 partitions everywhere")
        assert got


def test_with_auto_create_off_an_unknown_topic_stays_unknown(no_auto_create):
    topic = fresh("noauto")
    for b in no_auto_create.brokers:
        md = _metadata(b, topic)
        assert md.topics[0].error_code == UnknownTopicOrPartition.code
    assert not any(t.name == topic for t in _metadata(no_auto_create.brokers[0], topic).topics
                   if t.error_code == 0)
    with connect(no_auto_create.brokers[0]) as c:
        assert topic not in {t.name for t in c.metadata(None).topics}



def test_a_replaced_static_consumer_is_fenced_and_an_admin_removes_one_by_instance_id(cluster):
    """KIP-345 with real clients: a second confluent-kafka consumer with the same
    group.instance.id takes over and the first one's heartbeat gets FENCED_INSTANCE_ID (fatal
    to librdkafka, not an UNKNOWN_MEMBER_ID it would rejoin after); kafka-python's admin then
    removes the static member by its instance id alone (LeaveGroup v3+)."""
    ck = pytest.importorskip("confluent_kafka")
    kadmin = pytest.importorskip("kafka.admin")
    kerrors = pytest.importorskip("kafka.errors")
    topic, group, instance = fresh("fenced"), fresh("fenced-g"), fresh("inst")
    create_everywhere(cluster.brokers, topic, 1)

    def consumer():
        c = ck.Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group,
                         "group.instance.id": instance, "session.timeout.ms": 30_000,
                         "heartbeat.interval.ms": 500})
        c.subscribe([topic])
        return c

    first = consumer()
    second = None
    try:
        def assigned(c):
            c.poll(0.05)
            return bool(c.assignment())

        eventually(lambda: assigned(first), timeout_s=60, what="the first consumer's partition")
        second = consumer()
        errors: list = []

        def first_fenced():
            msg = first.poll(0.05)
            if second is not None:
                second.poll(0.05)
            if msg is not None and msg.error() is not None:
                errors.append(msg.error())
            # librdkafka reports the fatal error as _FATAL (it stops rejoining).
            return any(e.code() == ck.KafkaError._FATAL or e.fatal() for e in errors)

        eventually(first_fenced, timeout_s=30, what="the first consumer fenced")
        assert any("fenced" in str(e).lower() for e in errors), errors
        eventually(lambda: assigned(second), timeout_s=30, what="the second one's partition")
    finally:
        first.close()
        if second is not None:
            second.close()  # static: no LeaveGroup, the member stays for its session timeout
    admin = kadmin.KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        gone = kadmin.MemberToRemove(group_instance_id=instance)
        got = admin.remove_group_members(group, [gone])
        assert list(got.values()) == [kerrors.NoError]
        assert admin.describe_groups([group])[group]["members"] == []
        again = admin.remove_group_members(group, [gone])
        assert list(again.values()) == [kerrors.UnknownMemberIdError]
    finally:
        admin.close()


# --- ListOffsets by time ------------------------------------------------------------------------


def test_offsets_for_times_answers_the_record_not_its_batch(cluster):
    """librdkafka's 0054-offset_time as a user runs it: two records with timestamps 1234 and
    999999999999 go out in one batch; the time lookup answers each record's own offset, -1
    past the last record, and the -1/-2 specials the partition's end and start."""
    topic = fresh("times")
    create_everywhere(cluster.brokers, topic, 2)
    producer = ck.Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all",
                            "linger.ms": 100})
    for partition in (0, 1):
        for ts in (1234, 999999999999):
            producer.produce(topic, b"v", partition=partition, timestamp=ts)
    assert producer.flush(30) == 0
    consumer = ck.Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": fresh("g")})
    try:
        for ts, want in ((1234, 0), (999999999999, 1), (1000000000000, -1), (-1, 2),
                         (-2, 0)):
            found = consumer.offsets_for_times(
                [ck.TopicPartition(topic, p, ts) for p in (0, 1)], timeout=10)
            assert [(tp.error, tp.offset) for tp in found] == [(None, want)] * 2, ts
    finally:
        consumer.close()
