"""Fetch semantics against a real broker: long-poll, min/max bytes, every partition listed."""

from __future__ import annotations

import socket
import uuid

import pytest

from brokers.core.protocol.api import ApiKey
from brokers.core.protocol.messages.create_topics import CreatableTopic, CreateTopicsRequest
from brokers.core.protocol.messages.fetch import (
    FetchPartition,
    FetchRequest,
    FetchResponse,
    FetchTopic,
)
from brokers.core.protocol.messages.produce import (
    PartitionProduceData,
    ProduceRequest,
    TopicProduceData,
)
from brokers.core.protocol.records import decode_records, iter_batches
from harness.cluster.kafka_probe import KafkaProbe
from tests.support.brokers import start_single_broker
from tests.support.record_builder import build_batch

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    b = start_single_broker(tmp_path_factory.mktemp("fetch") / "data")
    yield b
    b.process.stop()


def new_topic(broker, partitions: int = 1) -> str:
    name = f"f-{uuid.uuid4().hex[:8]}"
    with KafkaProbe(broker.host, broker.port) as p:
        res = p.request(ApiKey.CREATE_TOPICS, 4, CreateTopicsRequest(topics=[
            CreatableTopic(name=name, num_partitions=partitions, replication_factor=1)]))
    assert res.topics[0].error_code == 0
    return name


def produce(broker, topic: str, partition: int, values: list[bytes]) -> None:
    with KafkaProbe(broker.host, broker.port) as p:
        res = p.request(ApiKey.PRODUCE, 8, ProduceRequest(acks=1, timeout_ms=5000, topic_data=[
            TopicProduceData(name=topic, partition_data=[PartitionProduceData(
                index=partition, records=build_batch([(None, v) for v in values]))])]))
    assert res.responses[0].partition_responses[0].error_code == 0


def fetch_request(topic: str, partitions: list[int], *, max_wait_ms: int = 0, min_bytes: int = 1,
                  max_bytes: int = 1 << 20, partition_max_bytes: int = 1 << 20) -> FetchRequest:
    return FetchRequest(replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=min_bytes,
                        max_bytes=max_bytes, topics=[FetchTopic(topic=topic, partitions=[
                            FetchPartition(partition=p, fetch_offset=0,
                                           partition_max_bytes=partition_max_bytes)
                            for p in partitions])])


def assert_still_waiting(probe: KafkaProbe) -> None:
    """No response yet: a broker that answered at once would have answered within this."""
    probe.sock.settimeout(0.5)
    with pytest.raises(TimeoutError):
        probe.sock.recv(1, socket.MSG_PEEK)
    probe.sock.settimeout(60)


def test_long_poll_answers_with_data_produced_while_waiting(broker):
    topic = new_topic(broker)
    with KafkaProbe(broker.host, broker.port, timeout_s=60) as waiting:
        waiting.send(ApiKey.FETCH, 11, fetch_request(topic, [0], max_wait_ms=30_000))
        assert_still_waiting(waiting)
        produce(broker, topic, 0, [b"late"])
        frame = waiting.read_frame()
    part = FetchResponse.decode(frame[4:], 11).responses[0].partitions[0]
    assert part.error_code == 0
    assert [r.value for r in decode_records(part.records)] == [b"late"]


def test_long_poll_without_data_returns_empty_after_max_wait(broker):
    topic = new_topic(broker)
    with KafkaProbe(broker.host, broker.port) as p:
        res = p.request(ApiKey.FETCH, 11, fetch_request(topic, [0], max_wait_ms=200))
    part = res.responses[0].partitions[0]
    assert (part.error_code, bytes(part.records), part.high_watermark) == (0, b"", 0)


def test_min_bytes_keeps_waiting_until_enough_data(broker):
    topic = new_topic(broker)
    produce(broker, topic, 0, [b"x"])
    with KafkaProbe(broker.host, broker.port, timeout_s=60) as waiting:
        waiting.send(ApiKey.FETCH, 11, fetch_request(topic, [0], max_wait_ms=30_000,
                                                     min_bytes=2000))
        assert_still_waiting(waiting)  # 1 byte is there, but min_bytes asks for 2000
        produce(broker, topic, 0, [b"y" * 3000])
        frame = waiting.read_frame()
    part = FetchResponse.decode(frame[4:], 11).responses[0].partitions[0]
    assert [r.value for r in decode_records(part.records)] == [b"x", b"y" * 3000]


def test_every_requested_partition_is_listed_and_one_batch_exceeds_small_limits(broker):
    topic = new_topic(broker, partitions=3)
    produce(broker, topic, 1, [b"a" * 500, b"b" * 500])
    produce(broker, topic, 1, [b"c" * 500])
    produce(broker, topic, 2, [b"d" * 500])
    with KafkaProbe(broker.host, broker.port) as p:
        res = p.request(ApiKey.FETCH, 11, fetch_request(topic, [0, 1, 2], max_bytes=100,
                                                        partition_max_bytes=100))
    parts = {x.partition_index: x for x in res.responses[0].partitions}
    assert sorted(parts) == [0, 1, 2]
    assert bytes(parts[0].records) == b""
    # The first partition with data gets one whole batch despite the 100-byte limits, so a
    # consumer always progresses; the response budget is then spent.
    assert len(list(iter_batches(bytes(parts[1].records)))) == 1
    assert bytes(parts[2].records) == b""
    assert parts[2].high_watermark == 1
