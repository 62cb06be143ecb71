"""Kafka operations tests repeat: create a topic, produce values, read them back, poll metadata.

All go through ``harness.cluster.kafka_probe.KafkaProbe`` (exact requests over a plain socket) and
take any object with ``host`` and ``port`` as the broker.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from brokers.core.protocol.api import ApiKey
from brokers.core.protocol.messages.create_topics import (
    CreatableTopic,
    CreatableTopicResult,
    CreateTopicsRequest,
)
from brokers.core.protocol.messages.fetch import (
    FetchPartition,
    FetchRequest,
    FetchTopic,
    PartitionData,
)
from brokers.core.protocol.messages.produce import (
    PartitionProduceData,
    PartitionProduceResponse,
    ProduceRequest,
    TopicProduceData,
)
from brokers.core.protocol.records import decode_records
from harness.cluster.kafka_probe import KafkaProbe
from tests.support.record_builder import build_batch

T = TypeVar("T")


def connect(broker: Any, timeout_s: float = 10.0) -> KafkaProbe:
    return KafkaProbe(broker.host, broker.port, timeout_s=timeout_s)


def eventually(probe: Callable[[], T], timeout_s: float = 30.0, what: str = "condition") -> T:
    """Poll ``probe`` until it returns something truthy: a readiness probe with a deadline.
    Connection errors count as "not yet" (a broker may be restarting)."""
    deadline = time.monotonic() + timeout_s
    last: object = None
    while time.monotonic() < deadline:
        try:
            last = probe()
        except (OSError, ConnectionError) as exc:
            last = exc
        else:
            if last:
                return last  # type: ignore[return-value]
        time.sleep(0.02)
    raise AssertionError(f"{what} not reached in {timeout_s} s (last: {last!r})")


def create_topic(broker: Any, name: str, partitions: int) -> CreatableTopicResult:
    with connect(broker) as p:
        res = p.request(ApiKey.CREATE_TOPICS, 4, CreateTopicsRequest(
            topics=[CreatableTopic(name=name, num_partitions=partitions, replication_factor=1)],
            timeout_ms=15_000))
    return res.topics[0]


def leaders(broker: Any, topic: str) -> dict[int, int]:
    with connect(broker) as p:
        md = p.metadata([topic])
    return {x.partition_index: x.leader_id for x in md.topics[0].partitions}


def create_everywhere(brokers: list[Any], name: str, partitions: int) -> dict[int, int]:
    """Create a topic and wait until every broker shows it with a leader per partition: the
    architectures spread topic records by watches or gossip, so "soon", not "at once"."""
    assert create_topic(brokers[0], name, partitions).error_code == 0
    for b in brokers:
        eventually(lambda b=b: len(ls := leaders(b, name)) == partitions
                   and all(v >= 0 for v in ls.values()), what=f"{name} on {b.port}")
    return leaders(brokers[0], name)


def produce(broker: Any, topic: str, partition: int, batch: bytes,
            acks: int = 1) -> PartitionProduceResponse:
    with connect(broker) as p:
        res = p.request(ApiKey.PRODUCE, 8, ProduceRequest(acks=acks, timeout_ms=5000, topic_data=[
            TopicProduceData(name=topic, partition_data=[
                PartitionProduceData(index=partition, records=batch)])]))
    return res.responses[0].partition_responses[0]


def produce_values(broker: Any, topic: str, partition: int, values: list[bytes]) -> int:
    """Produce one batch of ``values``; returns the partition's error code."""
    return produce(broker, topic, partition, build_batch([(None, v) for v in values])).error_code


def fetch(broker: Any, topic: str, partition: int, offset: int = 0,
          isolation_level: int = 0) -> PartitionData:
    with connect(broker) as p:
        res = p.request(ApiKey.FETCH, 11, FetchRequest(
            replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20,
            isolation_level=isolation_level,
            topics=[FetchTopic(topic=topic, partitions=[FetchPartition(
                partition=partition, fetch_offset=offset, partition_max_bytes=1 << 20)])]))
    return res.responses[0].partitions[0]


def fetch_values(broker: Any, topic: str, partition: int) -> list[bytes]:
    """Every value in the partition, from offset 0 to the end."""
    values: list[bytes] = []
    offset = 0
    while True:
        part = fetch(broker, topic, partition, offset)
        assert part.error_code == 0, part.error_code
        records = [r for r in decode_records(part.records) if r.offset >= offset]
        if not records:
            return values
        values.extend(r.value for r in records)
        offset = records[-1].offset + 1
