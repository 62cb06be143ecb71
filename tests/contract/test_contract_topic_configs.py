"""Kafka 2.8's topic configs and KIP-467's per-record produce errors, as a new user meets them
through confluent-kafka (librdkafka) and kafka-python, on every architecture.

A topic created with configs the brokers only store (compression.type, segment.ms, ...) is
described with them as its own (DYNAMIC_TOPIC_CONFIG) and every other config at its default;
DescribeConfigs v3+ documents which configs the brokers act on. Appending compact to
cleanup.policy (IncrementalAlterConfigs APPEND, from the default delete) makes the leader
refuse records without a key, as librdkafka's own test does it (tests/0011-produce_batch.c,
``test_message_single_partition_record_fail``): 100 records, every 10th without a key, are one
batch refused whole (10 delivery reports INVALID_RECORD, 90 _INVALID_DIFFERENT_RECORD), or, one
record per batch, 90 delivered and 10 refused. librdkafka keeps each record's message from the
broker to itself (its Python delivery reports carry codes), so kafka-python shows that the
refused records are named with the missing key. The wire answer (record_errors, error_message)
is checked at Produce v8 and v9, with the topic's own max.message.bytes.
"""

from __future__ import annotations

import uuid

import pytest

from brokers.core.errors import InvalidConfig, InvalidRecord, MessageTooLarge
from brokers.core.protocol.api import ApiKey
from brokers.core.protocol.messages.describe_configs import (
    CONFIG_TYPES,
    DEFAULT_CONFIG,
    TOPIC,
    TOPIC_CONFIG,
    DescribeConfigsRequest,
    DescribeConfigsResource,
)
from brokers.core.protocol.messages.produce import (
    PartitionProduceData,
    ProduceRequest,
    TopicProduceData,
)
from harness.cluster.kafka_probe import KafkaProbe
from tests.support.ops import eventually, leaders
from tests.support.record_builder import build_batch

pytestmark = [pytest.mark.integration, pytest.mark.interop]

# Configs the brokers store without acting on them, as a user might set them.
STORED_ONLY = {"compression.type": "lz4", "segment.ms": "3600000", "preallocate": "true",
               "min.cleanable.dirty.ratio": "0.25", "message.timestamp.type": "CreateTime",
               "leader.replication.throttled.replicas": "*"}
MESSAGES = 100


def _topic(cluster, prefix: str, **configs: str) -> str:
    """A new topic on every broker, one partition replicated on every broker (acks=all then
    waits for the followers too), created through confluent-kafka's AdminClient."""
    ck_admin = pytest.importorskip("confluent_kafka.admin")
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    admin = ck_admin.AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([ck_admin.NewTopic(name, 1, len(cluster.brokers), config=configs)]
                        )[name].result(30)
    eventually(lambda: all(leaders(b, name).get(0, -1) >= 0 for b in cluster.brokers),
               timeout_s=15, what=f"{name} led on every broker")
    return name


def _describe(broker, topic: str, version: int):
    with KafkaProbe(broker.host, broker.port) as probe:
        got = probe.request(ApiKey.DESCRIBE_CONFIGS, version, DescribeConfigsRequest(
            resources=[DescribeConfigsResource(resource_type=TOPIC, resource_name=topic)],
            include_synonyms=True, include_documentation=True))
    (result,) = got.results
    assert result.error_code == 0, result.error_message
    return {c.name: c for c in result.configs}


def _everywhere(cluster, topic: str, name: str, value: str) -> None:
    eventually(lambda: all(_describe(b, topic, 1)[name].value == value for b in cluster.brokers),
               timeout_s=15, what=f"{name}={value} on every broker")


def test_a_new_user_sets_kafka_topic_configs_and_sees_them_described(cluster):
    ck = pytest.importorskip("confluent_kafka")
    ck_admin = pytest.importorskip("confluent_kafka.admin")
    kadmin = pytest.importorskip("kafka.admin")
    name = _topic(cluster, "cfg-stored", **STORED_ONLY)
    admin = ck_admin.AdminClient({"bootstrap.servers": cluster.bootstrap})
    res = ck_admin.ConfigResource(ck_admin.ResourceType.TOPIC, name)
    entries = eventually(lambda: admin.describe_configs([res])[res].result(30), timeout_s=15)
    assert len(entries) == 26  # Kafka 2.8's whole table
    for key, value in STORED_ONLY.items():
        assert entries[key].value == value, key
        assert entries[key].source == ck_admin.ConfigSource.DYNAMIC_TOPIC_CONFIG.value, key
    for key, value in {"cleanup.policy": "delete", "delete.retention.ms": "86400000",
                       "message.format.version": "2.8-IV1",
                       "unclean.leader.election.enable": "false"}.items():
        assert entries[key].value == value, key
        assert entries[key].source == ck_admin.ConfigSource.DEFAULT_CONFIG.value, key
    # The wire at v3 and v4: types, synonyms, and documentation saying what is only stored.
    for version in (3, 4):
        got = _describe(cluster.brokers[-1], name, version)
        assert got["segment.ms"].config_type == CONFIG_TYPES["LONG"]
        assert got["preallocate"].config_type == CONFIG_TYPES["BOOLEAN"]
        assert got["min.cleanable.dirty.ratio"].config_type == CONFIG_TYPES["DOUBLE"]
        assert got["cleanup.policy"].config_type == CONFIG_TYPES["LIST"]
        assert [(s.name, s.source) for s in got["compression.type"].synonyms] == [
            ("compression.type", TOPIC_CONFIG), ("compression.type", DEFAULT_CONFIG)]
        assert [(s.name, s.source) for s in got["segment.ms"].synonyms] == [
            ("segment.ms", TOPIC_CONFIG), ("log.roll.ms", DEFAULT_CONFIG)]
        assert "not implemented by twinbench" in got["segment.ms"].documentation
        assert "compaction is not implemented" in got["min.cleanable.dirty.ratio"].documentation
        assert got["retention.ms"].documentation.startswith("How long")
    # kafka-python's admin client describes the same.
    kp = kadmin.KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        described = eventually(lambda: str(kp.describe_configs(
            [kadmin.ConfigResource(kadmin.ConfigResourceType.TOPIC, name)])), timeout_s=15)
        assert "min.cleanable.dirty.ratio" in described and "3600000" in described
    finally:
        kp.close()
    # What Kafka refuses is refused, with Kafka's words.
    bad = {"compression.type": "brotli", "min.cleanable.dirty.ratio": "1.5",
           "message.format.version": "9.9", "no.such.config": "1"}
    for key, value in bad.items():
        entry = ck_admin.ConfigEntry(key, value,
                                     incremental_operation=ck_admin.AlterConfigOpType.SET)
        bad_res = ck_admin.ConfigResource(ck_admin.ResourceType.TOPIC, name,
                                          incremental_configs=[entry])
        with pytest.raises(ck.KafkaException) as info:
            admin.incremental_alter_configs([bad_res])[bad_res].result(30)
        assert info.value.args[0].code() == InvalidConfig.code, key
        assert (f"Unknown topic config name: {key}" if key == "no.such.config"
                else f"Invalid value {value} for configuration {key}") in str(info.value), key


def _append_compact(cluster, topic: str) -> None:
    ck_admin = pytest.importorskip("confluent_kafka.admin")
    admin = ck_admin.AdminClient({"bootstrap.servers": cluster.bootstrap})
    res = ck_admin.ConfigResource(ck_admin.ResourceType.TOPIC, topic, incremental_configs=[
        ck_admin.ConfigEntry("cleanup.policy", "compact",
                             incremental_operation=ck_admin.AlterConfigOpType.APPEND)])
    admin.incremental_alter_configs([res])[res].result(30)
    _everywhere(cluster, topic, "cleanup.policy", "delete,compact")  # appended to the default


def _produce_every_tenth_keyless(cluster, topic: str, **conf: object) -> list:
    """librdkafka's test: 100 records to partition 0, every 10th without a key; the errors of
    the delivery reports (None: delivered)."""
    ck = pytest.importorskip("confluent_kafka")
    reports: list = []
    producer = ck.Producer({"bootstrap.servers": cluster.bootstrap, **conf})
    for i in range(MESSAGES):
        value = f"test message #{i}".encode()
        producer.produce(topic, value, key=None if i % 10 == 0 else value, partition=0,
                         on_delivery=lambda err, _msg: reports.append(err))
    assert producer.flush(30) == 0
    assert len(reports) == MESSAGES
    return reports


@pytest.mark.parametrize("codec", ["none", "zstd"])
def test_a_compacted_topic_refuses_a_batch_with_keyless_records_naming_them(cluster, codec):
    ck = pytest.importorskip("confluent_kafka")
    topic = _topic(cluster, f"cfg-compact-{codec}")
    _append_compact(cluster, topic)
    # One batch of all 100 (linger long enough to gather them): refused whole.
    reports = _produce_every_tenth_keyless(cluster, topic, **{
        "linger.ms": 200, "compression.codec": codec})
    keyless = [e for i, e in enumerate(reports) if i % 10 == 0]
    keyed = [e for i, e in enumerate(reports) if i % 10]
    assert {e.code() for e in keyless} == {InvalidRecord.code}
    assert {e.code() for e in keyed} == {ck.KafkaError._INVALID_DIFFERENT_RECORD}
    # One record per batch: the keyed ones are delivered, and only they are in the log.
    reports = _produce_every_tenth_keyless(cluster, topic, **{
        "batch.size": 1, "compression.codec": codec})
    assert [e is None for e in reports] == [i % 10 != 0 for i in range(MESSAGES)]
    assert {e.code() for e in reports if e is not None} == {InvalidRecord.code}
    consumer = ck.Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": topic,
                            "enable.auto.commit": False})
    consumer.assign([ck.TopicPartition(topic, 0, 0)])
    got: list[bytes] = []
    try:
        def read_all() -> bool:
            msg = consumer.poll(0.5)
            if msg is not None and not msg.error():
                got.append(msg.key())
            return len(got) >= MESSAGES - MESSAGES // 10
        eventually(read_all, timeout_s=30, what="the delivered records")
    finally:
        consumer.close()
    assert None not in got and len(got) == MESSAGES - MESSAGES // 10


def test_kafka_python_names_the_keyless_records_of_a_refused_batch(cluster):
    """confluent-kafka's delivery reports carry the codes only; kafka-python hands each record
    the broker's own message for it (record_errors) or says it failed for its company."""
    kafka = pytest.importorskip("kafka")
    kerrors = pytest.importorskip("kafka.errors")
    topic = _topic(cluster, "cfg-compact-kp")
    _append_compact(cluster, topic)
    producer = kafka.KafkaProducer(bootstrap_servers=cluster.bootstrap, linger_ms=200,
                                   enable_idempotence=False, retries=0)
    try:
        futures = []
        for i in range(MESSAGES):
            value = f"test message #{i}".encode()
            futures.append(producer.send(topic, value=value, partition=0,
                                         key=None if i % 10 == 0 else value))
        producer.flush(30)
    finally:
        producer.close(5)
    errors = [f.exception for f in futures]
    assert all(isinstance(e, kerrors.InvalidRecordError) for e in errors[::10])
    assert all("Compacted topic cannot accept message without key in topic partition "
               f"{topic}-0." in str(e) for e in errors[::10])
    rest = [e for i, e in enumerate(errors) if i % 10]
    assert all(type(e) is kerrors.KafkaError and "part of a batch" in str(e) for e in rest)


def test_produce_v8_and_v9_carry_record_errors_and_subtract_lifts_the_check(cluster):
    ck_admin = pytest.importorskip("confluent_kafka.admin")
    topic = _topic(cluster, "cfg-wire", **{"max.message.bytes": "2000"})
    _append_compact(cluster, topic)
    leader = cluster.broker(leaders(cluster.brokers[0], topic)[0])
    batch = build_batch([(None, b"a"), (b"k", b"b"), (None, b"c")])
    big = build_batch([(b"k", b"v" * 3000)])
    with KafkaProbe(leader.host, leader.port) as probe:
        for version in (8, 9):
            def send(records: bytes, version: int = version):
                got = probe.request(ApiKey.PRODUCE, version, ProduceRequest(
                    acks=1, timeout_ms=5000, topic_data=[TopicProduceData(
                        name=topic, partition_data=[PartitionProduceData(0, records)])]))
                return got.responses[0].partition_responses[0]
            part = send(batch)
            assert part.error_code == InvalidRecord.code and part.base_offset == -1
            assert [e.batch_index for e in part.record_errors] == [0, 2]
            assert all(e.batch_index_error_message ==
                       "Compacted topic cannot accept message without key in topic partition "
                       f"{topic}-0." for e in part.record_errors)
            assert "2 record(s) without a key" in (part.error_message or "")
            # The topic's own max.message.bytes, checked before the keys.
            assert send(big).error_code == MessageTooLarge.code
    # SUBTRACT compact: the default policy again, and keyless records are taken.
    admin = ck_admin.AdminClient({"bootstrap.servers": cluster.bootstrap})
    res = ck_admin.ConfigResource(ck_admin.ResourceType.TOPIC, topic, incremental_configs=[
        ck_admin.ConfigEntry("cleanup.policy", "compact",
                             incremental_operation=ck_admin.AlterConfigOpType.SUBTRACT)])
    admin.incremental_alter_configs([res])[res].result(30)
    _everywhere(cluster, topic, "cleanup.policy", "delete")
    with KafkaProbe(leader.host, leader.port) as probe:
        got = probe.request(ApiKey.PRODUCE, 8, ProduceRequest(
            acks=1, timeout_ms=5000, topic_data=[TopicProduceData(
                name=topic, partition_data=[PartitionProduceData(0, batch)])]))
    part = got.responses[0].partition_responses[0]
    assert part.error_code == 0 and part.record_errors == []
