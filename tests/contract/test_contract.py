"""The broker contract: what every architecture must do, checked against real processes.

Parametrized over ``tests.support.clusters.ARCHITECTURES`` by the ``cluster`` fixture, so the
ZooKeeper and DSBS clusters run exactly these tests.
"""

from __future__ import annotations

import shutil
import subprocess
import threading
import uuid

import pytest

from brokers.core.errors import (
    InvalidReplicationFactor,
    NotCoordinator,
    NotLeaderOrFollower,
    TopicAlreadyExists,
)
from brokers.core.protocol.api import ApiKey
from brokers.core.protocol.messages.create_topics import CreatableTopic, CreateTopicsRequest
from brokers.core.protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic
from brokers.core.protocol.messages.find_coordinator import FindCoordinatorRequest
from brokers.core.protocol.messages.init_producer_id import InitProducerIdRequest
from brokers.core.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from brokers.core.protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from brokers.core.protocol.messages.offset_fetch import OffsetFetchRequest, OffsetFetchRequestTopic
from brokers.core.protocol.messages.produce import (
    PartitionProduceData,
    ProduceRequest,
    TopicProduceData,
)
from brokers.core.protocol.records import decode_records, iter_batches
from harness.cluster.kafka_probe import KafkaProbe
from tests.support.clusters import REPLICATING
from tests.support.ops import (
    create_everywhere,
    eventually,
    fetch_values,
    leaders,
    produce_values,
)
from tests.support.record_builder import build_batch

pytestmark = pytest.mark.integration


def fresh_topic() -> str:
    return f"contract-{uuid.uuid4().hex[:10]}"


def connect(broker) -> KafkaProbe:
    return KafkaProbe(broker.host, broker.port)


def metadata(client: KafkaProbe, topics: list[str] | None, *, auto_create: bool = False):
    req = MetadataRequest(
        topics=None if topics is None else [MetadataRequestTopic(name=t) for t in topics],
        allow_auto_topic_creation=auto_create,
    )
    return client.request(ApiKey.METADATA, 8, req)


def create_topic(client: KafkaProbe, name: str, partitions: int, replication_factor: int = 1):
    req = CreateTopicsRequest(
        topics=[CreatableTopic(name=name, num_partitions=partitions,
                               replication_factor=replication_factor)],
        timeout_ms=15_000,
    )
    return client.request(ApiKey.CREATE_TOPICS, 4, req).topics[0]


def broker_by_id(cluster, node_id: int):
    with connect(cluster.brokers[0]) as c:
        md = metadata(c, [])
    port = next(b.port for b in md.brokers if b.node_id == node_id)
    return next(b for b in cluster.brokers if b.port == port)


def produce(client: KafkaProbe, topic: str, partition: int, batch: bytes):
    req = ProduceRequest(acks=1, timeout_ms=10_000, topic_data=[TopicProduceData(
        name=topic, partition_data=[PartitionProduceData(index=partition, records=batch)])])
    return client.request(ApiKey.PRODUCE, 8, req).responses[0].partition_responses[0]


def fetch(client: KafkaProbe, topic: str, partition: int, offset: int, max_wait_ms: int = 0):
    req = FetchRequest(replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=1 << 20,
                       topics=[FetchTopic(topic=topic, partitions=[FetchPartition(
                           partition=partition, fetch_offset=offset,
                           partition_max_bytes=1 << 20)])])
    return client.request(ApiKey.FETCH, 11, req).responses[0].partitions[0]


def test_metadata_lists_every_broker_and_a_controller_among_them(cluster):
    for broker in cluster.brokers:
        with connect(broker) as c:
            md = metadata(c, None)
        ports = {b.port for b in md.brokers}
        assert ports == {b.port for b in cluster.brokers}
        assert md.controller_id in {b.node_id for b in md.brokers}


def test_create_topic_on_any_broker_is_visible_from_every_broker(cluster):
    for broker in cluster.brokers:
        topic = fresh_topic()
        with connect(broker) as c:
            assert create_topic(c, topic, len(cluster.brokers)).error_code == 0
            again = create_topic(c, topic, 1)
            assert again.error_code == TopicAlreadyExists.code
        for other in cluster.brokers:
            # Other brokers learn of the topic through watches or gossip: soon, not at once.
            got = eventually(lambda b=other, t=topic: (ls := leaders(b, t)) and
                             all(v >= 0 for v in ls.values()) and ls)
            assert len(got) == len(cluster.brokers)


# --- topic creation racing auto-creation ------------------------------------------------------
RACE_ROUNDS = 20
RACE_PARTITIONS = 3  # what CreateTopics asks for; an auto-create gets the broker default, 1


def _partition_count(md) -> int | None:
    """Partitions a one-topic Metadata answer shows; None when the broker does not know it."""
    t = md.topics[0]
    return len(t.partitions) if t.error_code == 0 and t.partitions else None


def _in_threads(*bodies, timeout_s: float = 60.0) -> list[BaseException]:
    """Run each body in its own thread; the exceptions they raised."""
    errors: list[BaseException] = []

    def guard(body):
        try:
            body()
        except BaseException as exc:  # reported to the test, which fails on it
            errors.append(exc)

    threads = [threading.Thread(target=guard, args=(b,), daemon=True) for b in bodies]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout_s)
        if t.is_alive():
            errors.append(TimeoutError(f"{t.name} still running after {timeout_s} s"))
    return errors


def _settled(brokers, topic: str) -> dict[int, int] | None:
    """partition -> leader once every broker shows the topic with a live leader for each
    partition and all show the same leaders; None before."""
    views = [leaders(b, topic) for b in brokers]
    ok = all(v and all(x >= 0 for x in v.values()) and v == views[0] for v in views)
    return views[0] if ok else None


def _read_back(cluster, topic: str, partition: int, leader: int) -> list[bytes] | str:
    try:
        return fetch_values(broker_by_id(cluster, leader), topic, partition)
    except AssertionError as exc:  # fetch_values asserts on an error code
        return f"fetch of partition {partition} from its leader {leader} failed: {exc}"


def _race_round(cluster, rnd: int) -> list[str]:
    """CreateTopics on one broker against an auto-creating Metadata on another, at once, with a
    sampler reading every broker's Metadata meanwhile and until the cluster converges. Returns
    what went wrong (nothing, when the round passed)."""
    brokers = cluster.brokers
    topic = fresh_topic()
    creator, auto = brokers[rnd % len(brokers)], brokers[(rnd + 1) % len(brokers)]
    got: dict[str, object] = {}
    samples: list[tuple[int, int]] = []  # (broker port, partitions it reported)
    gate = threading.Barrier(3, timeout=30)
    converged = threading.Event()

    def create():
        with connect(creator) as c:
            gate.wait()
            got["create"] = create_topic(c, topic, RACE_PARTITIONS)

    def auto_create():
        with connect(auto) as c:
            gate.wait()
            got["auto"] = _partition_count(metadata(c, [topic], auto_create=True))

    def sample():
        probes = [connect(b) for b in brokers]
        try:
            gate.wait()
            while not converged.is_set():
                for b, p in zip(brokers, probes, strict=True):
                    n = _partition_count(metadata(p, [topic]))
                    if n is not None:
                        samples.append((b.port, n))
        finally:
            for p in probes:
                p.close()

    def race_then_settle():
        errors = _in_threads(create, auto_create)
        try:
            if errors:
                raise errors[0]
            got["final"] = eventually(lambda: _settled(brokers, topic),
                                      what=f"{topic} to converge")
        finally:
            converged.set()

    errors = _in_threads(race_then_settle, sample)
    if errors:
        return [f"{type(e).__name__}: {e}" for e in errors]
    problems = []
    code = got["create"].error_code  # type: ignore[attr-defined]
    final: dict[int, int] = got["final"]  # type: ignore[assignment]
    if code not in (0, TopicAlreadyExists.code):
        problems.append(f"CreateTopics answered error {code}")
    if code == 0 and len(final) != RACE_PARTITIONS:
        problems.append(f"CreateTopics succeeded, yet the cluster settled on {len(final)} "
                        "partitions (its record was replaced)")
    expected = RACE_PARTITIONS if code == 0 else len(final)
    if got["auto"] not in (None, expected):
        problems.append(f"the auto-creating Metadata showed {got['auto']} partitions, "
                        f"not {expected}")
    wrong = sorted({s for s in samples if s[1] != expected})
    if wrong:
        problems.append(f"(broker port, partitions) seen while converging, not {expected}: "
                        f"{wrong}")
    for partition, leader in final.items():
        values = [f"{topic}/{partition}/{i}".encode() for i in range(20)]
        b = broker_by_id(cluster, leader)
        code = produce_values(b, topic, partition, values)
        if code != 0:
            problems.append(f"produce to partition {partition} on its leader: error {code}")
        elif (back := _read_back(cluster, topic, partition, leader)) != values:
            problems.append(back if isinstance(back, str) else
                            f"acknowledged records of partition {partition} not read back")
    return problems


def test_create_topics_racing_an_auto_create_leaves_one_record_everywhere(cluster):
    """Kafka's rule: whichever creation reaches the store first wins and the other gets
    TOPIC_ALREADY_EXISTS (an auto-create just gets the topic). Never two records at once:
    a CreateTopics that succeeded is never replaced, no broker ever shows another partition
    count, and records acknowledged afterwards are all there."""
    failed = {}
    for rnd in range(RACE_ROUNDS):
        problems = _race_round(cluster, rnd)
        if problems:
            failed[rnd] = problems
    assert not failed, f"{len(failed)} of {RACE_ROUNDS} rounds failed: {failed}"


@pytest.mark.parametrize("replication_factor", [2, 3])
def test_replication_factor_above_one_is_refused_with_the_reason(cluster, replication_factor):
    """Architectures that do not replicate say so; those that do
    (tests.support.clusters.REPLICATING) place the replicas."""
    topic = fresh_topic()
    with connect(cluster.brokers[0]) as c:
        res = create_topic(c, topic, 1, replication_factor=replication_factor)
        if getattr(cluster, "spec", cluster).arch in REPLICATING:
            assert res.error_code == 0
            replicas = eventually(lambda: (md := metadata(c, [topic])).topics[0].partitions
                                  and md.topics[0].partitions[0].replica_nodes)
            assert len(set(replicas)) == replication_factor
            return
        assert res.error_code == InvalidReplicationFactor.code
        assert "replication is not implemented" in (res.error_message or "")
        assert _partition_count(metadata(c, [topic])) is None
        # -1 asks for the broker default, which is 1.
        assert create_topic(c, topic, 1, replication_factor=-1).error_code == 0


@pytest.mark.interop
@pytest.mark.multi_broker
def test_confluent_admin_create_then_immediate_produce_to_every_partition(cluster):
    """AdminClient creates 3 partitions and the moment it returns a producer sends 3,000
    records to partitions 0..2: no produce() may raise, no delivery may fail, and every
    acknowledged record is on its partition's leader."""
    ck = pytest.importorskip("confluent_kafka")
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    failed = {}
    for rnd in range(10):
        topic = fresh_topic()
        admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=1)],
                            request_timeout=30)[topic].result(30)
        producer = ck.Producer({"bootstrap.servers": cluster.bootstrap})
        acked: dict[int, set[bytes]] = {0: set(), 1: set(), 2: set()}
        errors: list[str] = []
        raised: list[str] = []

        def delivered(err, msg, acked=acked, errors=errors):
            if err is not None:
                errors.append(err.name())
            else:
                acked[msg.partition()].add(msg.value())

        for i in range(3000):
            try:
                producer.produce(topic, str(i).encode(), partition=i % 3, on_delivery=delivered)
            except (ck.KafkaException, BufferError) as exc:
                raised.append(str(exc))
        left = producer.flush(60)
        problems = []
        if raised:
            problems.append(f"produce() raised {len(raised)} times, first: {raised[0]}")
        if errors or left:
            problems.append(f"{len(errors)} failed deliveries ({sorted(set(errors))}), "
                            f"{left} undelivered")
        lead = eventually(lambda t=topic: _settled(cluster.brokers, t), what=f"{topic} settled")
        for partition, leader in lead.items():
            back = _read_back(cluster, topic, partition, leader)
            if isinstance(back, str):
                problems.append(back)
            elif not acked.get(partition, set()) <= set(back):
                problems.append(f"partition {partition}: {len(acked[partition] - set(back))} "
                                "acknowledged records missing")
        if len(lead) != 3:
            problems.append(f"the topic settled on {len(lead)} partitions, not 3")
        if problems:
            failed[rnd] = problems
    assert not failed, f"{len(failed)} of 10 rounds failed: {failed}"


def test_produced_batches_come_back_byte_identical_from_the_leader(cluster):
    topic = fresh_topic()
    create_everywhere(cluster.brokers, topic, len(cluster.brokers))
    for partition, leader in leaders(cluster.brokers[0], topic).items():
        batches = [build_batch([(None, f"p{partition}-r{i}-{j}".encode()) for j in range(5)])
                   for i in range(3)]
        with connect(broker_by_id(cluster, leader)) as c:
            offsets = [produce(c, topic, partition, b) for b in batches]
            assert [o.error_code for o in offsets] == [0, 0, 0]
            assert [o.base_offset for o in offsets] == [0, 5, 10]
            got = fetch(c, topic, partition, 0)
        assert got.error_code == 0 and got.high_watermark == 15
        values = [r.value for r in decode_records(got.records)]
        assert values == [r.value for b in batches for r in decode_records(b)]
        # Stored bytes are the sent bytes but for baseOffset [0:8) and the epoch [12:16).
        stored = bytes(got.records)
        for header, sent in zip(iter_batches(stored), batches, strict=True):
            mine = stored[header.position: header.position + header.size]
            assert mine[8:12] + mine[16:] == sent[8:12] + sent[16:]


@pytest.mark.multi_broker
def test_non_leader_answers_not_leader_or_follower(cluster):
    topic = fresh_topic()
    create_everywhere(cluster.brokers, topic, 1)
    leader = leaders(cluster.brokers[0], topic)[0]
    other = next(b for b in cluster.brokers if b is not broker_by_id(cluster, leader))
    with connect(other) as c:
        assert produce(c, topic, 0, build_batch([(None, b"x")])).error_code == (
            NotLeaderOrFollower.code)
        assert fetch(c, topic, 0, 0).error_code == NotLeaderOrFollower.code


def test_offsets_commit_on_the_group_coordinator_and_fetch_back(cluster):
    topic, group = fresh_topic(), f"g-{uuid.uuid4().hex[:8]}"
    create_everywhere(cluster.brokers, topic, 1)
    with connect(cluster.brokers[0]) as c:
        found = c.request(ApiKey.FIND_COORDINATOR, 2, FindCoordinatorRequest(key=group))
    assert found.error_code == 0
    coordinator = next(b for b in cluster.brokers if b.port == found.port)
    commit = OffsetCommitRequest(
        group_id=group, generation_id_or_member_epoch=-1, member_id="",
        topics=[OffsetCommitRequestTopic(name=topic, partitions=[
            OffsetCommitRequestPartition(partition_index=0, committed_offset=42,
                                         committed_metadata="m")])])
    with connect(coordinator) as c:
        res = c.request(ApiKey.OFFSET_COMMIT, 7, commit)
        assert res.topics[0].partitions[0].error_code == 0
        got = c.request(ApiKey.OFFSET_FETCH, 5, OffsetFetchRequest(
            group_id=group, topics=[OffsetFetchRequestTopic(name=topic, partition_indexes=[0])]))
    part = got.topics[0].partitions[0]
    assert (part.committed_offset, part.metadata, part.error_code) == (42, "m", 0)
    for other in cluster.brokers:
        if other is coordinator:
            continue
        with connect(other) as c:
            res = c.request(ApiKey.OFFSET_COMMIT, 7, commit)
        assert res.topics[0].partitions[0].error_code == NotCoordinator.code


def test_producer_ids_are_unique_across_brokers(cluster):
    seen = set()
    for broker in cluster.brokers:
        with connect(broker) as c:
            for _ in range(3):
                res = c.request(ApiKey.INIT_PRODUCER_ID, 1, InitProducerIdRequest(
                    transactional_id=None, transaction_timeout_ms=60_000))
                assert res.error_code == 0
                seen.add(res.producer_id)
    assert len(seen) == 3 * len(cluster.brokers)


@pytest.mark.interop
def test_confluent_kafka_group_commits_and_a_second_consumer_resumes(cluster):
    ck = pytest.importorskip("confluent_kafka")
    topic, group = fresh_topic(), f"ck-{uuid.uuid4().hex[:8]}"
    producer = ck.Producer({"bootstrap.servers": cluster.bootstrap})
    for i in range(60):
        producer.produce(topic, f"m{i}".encode(), partition=i % 1)
    assert producer.flush(30) == 0

    def consume(n: int) -> list[bytes]:
        consumer = ck.Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group,
                                "auto.offset.reset": "earliest", "enable.auto.commit": False})
        consumer.subscribe([topic])
        got: list[bytes] = []
        for _ in range(200):
            if len(got) >= n:
                break
            msg = consumer.poll(0.5)
            if msg is not None and not msg.error():
                got.append(msg.value())
        consumer.commit(asynchronous=False)
        consumer.close()
        return got

    first = consume(25)
    assert first == [f"m{i}".encode() for i in range(len(first))]
    # librdkafka may prefetch beyond 25 but commits only what it delivered; resume from there.
    rest = consume(60 - len(first))
    assert rest == [f"m{i}".encode() for i in range(len(first), 60)]


@pytest.mark.interop
def test_kafka_python_default_producer_and_group_consumer(cluster):
    kafka = pytest.importorskip("kafka")
    topic, group = fresh_topic(), f"kp-{uuid.uuid4().hex[:8]}"
    producer = kafka.KafkaProducer(bootstrap_servers=cluster.bootstrap)  # idempotent default
    for i in range(40):
        producer.send(topic, f"v{i}".encode())
    producer.flush(30)
    producer.close()

    def consume(n: int) -> list[bytes]:
        consumer = kafka.KafkaConsumer(
            topic, bootstrap_servers=cluster.bootstrap, group_id=group,
            auto_offset_reset="earliest", enable_auto_commit=False, consumer_timeout_ms=10_000,
            max_poll_records=n)
        got = []
        for msg in consumer:
            got.append(msg.value)
            if len(got) == n:
                break
        consumer.commit()
        consumer.close()
        return got

    assert consume(15) == [f"v{i}".encode() for i in range(15)]
    assert consume(25) == [f"v{i}".encode() for i in range(15, 40)]


def _kcat(kcat: str, cluster, *args: str, stdin: str | None = None) -> list[str]:
    """Run kcat to completion (bounded); its stdout lines. Fails the test on an error exit."""
    done = subprocess.run([kcat, "-b", cluster.bootstrap, *args], input=stdin,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, (args, done.stderr[-2000:])
    return done.stdout.split()


@pytest.mark.interop
def test_kcat_produces_every_codec_and_its_group_resumes_from_its_commit(cluster):
    """kcat links Debian's librdkafka 2.0.2, older than confluent-kafka's: it needs Produce
    advertised from v0 to compress and FindCoordinator v0 to join a group."""
    kcat = shutil.which("kcat")
    if kcat is None:
        pytest.skip("kcat is not installed (harness/setup_system.sh installs it)")
    topic, group = fresh_topic(), f"kc-{uuid.uuid4().hex[:8]}"
    leader = create_everywhere(cluster.brokers, topic, 1)[0]
    sent = []
    for codec in ("gzip", "snappy", "lz4"):
        values = [f"{codec}-{i}" for i in range(10)]
        _kcat(kcat, cluster, "-P", "-t", topic, "-p", "0", "-z", codec,
              stdin="\n".join(values) + "\n")
        sent += values
    # Compressed for real: librdkafka < 2.11 silently sends uncompressed batches when the
    # advertised Produce range does not start at v0.
    with connect(broker_by_id(cluster, leader)) as c:
        stored = bytes(fetch(c, topic, 0, 0).records)
    # gzip, snappy, lz4 each present. librdkafka sends a batch uncompressed when compressing it
    # would not make it smaller, which a lone record split off by its linger timer on a loaded
    # machine can be: so 0 may appear too.
    assert {1, 2, 3} <= {h.compression for h in iter_batches(stored)}
    assert _kcat(kcat, cluster, "-C", "-t", topic, "-p", "0", "-o", "beginning", "-e",
                 "-q") == sent
    # A balanced consumer reads everything, commits on its way out; the next one resumes.
    assert _kcat(kcat, cluster, "-G", group, topic, "-o", "beginning", "-e", "-q") == sent
    more = [f"more-{i}" for i in range(5)]
    _kcat(kcat, cluster, "-P", "-t", topic, "-p", "0", stdin="\n".join(more) + "\n")
    assert _kcat(kcat, cluster, "-G", group, topic, "-e", "-q") == more
