"""Transactions through kafka-python's own client (3.x: a transactional producer, KIP-447 group
metadata, read_committed consumers), on every architecture: commit and abort as its consumers
see them, a new incarnation fencing the old, and consume-transform-produce exactly once. Its
code paths are its own (no librdkafka underneath), so these check the broker against a second
client's reading of Kafka's protocol."""

from __future__ import annotations

import time

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka import errors as kerrors
from kafka.structs import OffsetAndMetadata

from tests.contract.test_contract_transactions import fill, fresh
from tests.support.ops import create_everywhere

pytestmark = pytest.mark.integration


def producer(cluster, tid: str) -> KafkaProducer:
    p = KafkaProducer(bootstrap_servers=cluster.bootstrap, transactional_id=tid, linger_ms=5,
                      max_block_ms=30_000)
    p.init_transactions()
    return p


def read(cluster, topic: str, partitions: int, isolation: str) -> list[bytes]:
    """Every record of ``topic`` a ``isolation`` consumer is handed, until it reaches the end
    its isolation level allows (the last stable offset at read_committed)."""
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap, isolation_level=isolation,
                             enable_auto_commit=False, consumer_timeout_ms=3000)
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    try:
        consumer.assign(tps)
        consumer.seek_to_beginning()
        ends = consumer.end_offsets(tps)  # at this consumer's isolation level
        got: list[bytes] = []
        deadline = time.monotonic() + 30
        while any(consumer.position(tp) < ends[tp] for tp in tps):
            assert time.monotonic() < deadline, f"read {len(got)}; positions short of {ends}"
            for records in consumer.poll(500).values():
                got.extend(r.value for r in records)
        return got
    finally:
        consumer.close()


def test_kafka_python_commits_and_aborts_as_read_committed_consumers_see_them(cluster):
    topic = fresh("kp-txn")
    create_everywhere(cluster.brokers, topic, 3)
    p = producer(cluster, fresh("tid"))
    try:
        p.begin_transaction()
        for i in range(30):
            p.send(topic, b"c%d" % i, partition=i % 3)
        p.commit_transaction()
        p.begin_transaction()
        for i in range(9):
            p.send(topic, b"a%d" % i, partition=i % 3)
        p.flush()
        p.abort_transaction()
        p.begin_transaction()
        p.send(topic, b"last", partition=1)
        p.commit_transaction()
    finally:
        p.close()
    assert sorted(read(cluster, topic, 3, "read_committed")) == sorted(
        [b"c%d" % i for i in range(30)] + [b"last"])
    assert len(read(cluster, topic, 3, "read_uncommitted")) == 40


def test_kafka_python_a_new_incarnation_fences_the_old(cluster):
    topic = fresh("kp-fence")
    create_everywhere(cluster.brokers, topic, 1)
    tid = fresh("tid")
    old = producer(cluster, tid)
    old.begin_transaction()
    old.send(topic, b"zombie", partition=0)
    old.flush()
    new = None
    try:
        new = producer(cluster, tid)  # ends the old incarnation's transaction: aborted
        with pytest.raises((kerrors.ProducerFencedError, kerrors.InvalidProducerEpochError)):
            old.commit_transaction()
        new.begin_transaction()
        new.send(topic, b"successor", partition=0)
        new.commit_transaction()
    finally:
        old.close(timeout=1)
        if new is not None:
            new.close()
    assert read(cluster, topic, 1, "read_committed") == [b"successor"]


def test_kafka_python_consume_transform_produce_is_exactly_once(cluster):
    source, sink, group = fresh("kp-in"), fresh("kp-out"), fresh("g")
    create_everywhere(cluster.brokers, source, 2)
    create_everywhere(cluster.brokers, sink, 2)
    values = fill(cluster, source, 2, 200)
    consumer = KafkaConsumer(source, bootstrap_servers=cluster.bootstrap, group_id=group,
                             isolation_level="read_committed", enable_auto_commit=False,
                             auto_offset_reset="earliest")
    p = producer(cluster, fresh("tid"))
    copied = 0
    deadline = time.monotonic() + 90
    try:
        while copied < len(values):
            assert time.monotonic() < deadline, f"copied {copied} of {len(values)}"
            polled = consumer.poll(500, max_records=20)
            if not polled:
                continue
            p.begin_transaction()
            offsets = {}
            for tp, records in polled.items():
                for r in records:
                    p.send(sink, r.value.upper(), partition=tp.partition)
                offsets[tp] = OffsetAndMetadata(records[-1].offset + 1, "", -1)
                copied += len(records)
            p.send_offsets_to_transaction(offsets, consumer.group_metadata())
            p.commit_transaction()
    finally:
        p.close()
    try:
        # The group's offsets were committed by the transactions alone, and stand at the end.
        ends = consumer.end_offsets([TopicPartition(source, q) for q in range(2)])
        assert {tp: consumer.committed(tp) for tp in ends} == ends
    finally:
        consumer.close()
    assert sorted(read(cluster, sink, 2, "read_committed")) == sorted(v.upper() for v in values)
