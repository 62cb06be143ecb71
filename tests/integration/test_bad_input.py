"""Garbage in: the right error code or a closed connection, and the broker keeps serving.

Every test ends by checking that a fresh, well-behaved client is still served, so "the broker
survived" is asserted, not assumed.
"""

from __future__ import annotations

import contextlib
import struct
import uuid

import pytest

from brokers.core import errors
from brokers.core.protocol.api import ApiKey
from brokers.core.protocol.header import RequestHeader
from brokers.core.protocol.messages.api_versions import ApiVersionsRequest, ApiVersionsResponse
from brokers.core.protocol.messages.create_topics import CreatableTopic, CreateTopicsRequest
from brokers.core.protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic
from brokers.core.protocol.messages.list_offsets import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
)
from brokers.core.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from brokers.core.protocol.messages.produce import (
    PartitionProduceData,
    ProduceRequest,
    TopicProduceData,
)
from harness.cluster.kafka_probe import KafkaProbe
from tests.support.brokers import start_single_broker
from tests.support.record_builder import build_batch

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    b = start_single_broker(tmp_path_factory.mktemp("bad-input") / "data")
    yield b
    assert b.process.poll() is None, "the broker died during the bad-input tests"
    assert b.process.stop() == 0
    # Garbage must be refused by validation, never reach a handler as an unexpected exception.
    log = b.process.log_path.read_text()
    assert "Traceback" not in log and "handler failed" not in log, log[-2000:]


@pytest.fixture
def client(broker):
    with KafkaProbe(broker.host, broker.port) as c:
        yield c


def still_serving(broker) -> None:
    with KafkaProbe(broker.host, broker.port) as c:
        res = c.request(ApiKey.API_VERSIONS, 2, ApiVersionsRequest())
        assert res.error_code == 0


def produce(client, topic: str, records: bytes, partition: int = 0, version: int = 8):
    req = ProduceRequest(acks=1, timeout_ms=5000, topic_data=[TopicProduceData(
        name=topic, partition_data=[PartitionProduceData(index=partition, records=records)])])
    return client.request(ApiKey.PRODUCE, version, req).responses[0].partition_responses[0]


def make_topic(client) -> str:
    name = f"bad-{uuid.uuid4().hex[:8]}"
    req = CreateTopicsRequest(topics=[CreatableTopic(name=name, num_partitions=1,
                                                     replication_factor=1)])
    assert client.request(ApiKey.CREATE_TOPICS, 4, req).topics[0].error_code == 0
    return name


def test_two_gib_length_prefix_closes_only_that_connection(broker, client):
    client.send_raw(struct.pack(">i", 0x7FFF_FFFF) + b"\x00" * 16)
    assert client.is_closed_by_peer()
    still_serving(broker)


def test_negative_length_prefix_closes_the_connection(broker, client):
    client.send_raw(struct.pack(">i", -5))
    assert client.is_closed_by_peer()
    still_serving(broker)


def test_frame_shorter_than_a_header_closes_the_connection(broker, client):
    client.send_raw(struct.pack(">i", 3) + b"abc")
    assert client.is_closed_by_peer()
    still_serving(broker)


def test_unknown_api_key_closes_the_connection(broker, client):
    header = RequestHeader(api_key=999, api_version=0, correlation_id=1, client_id="x").encode()
    client.send_raw(struct.pack(">i", len(header)) + header)
    assert client.is_closed_by_peer()
    still_serving(broker)


def test_garbage_body_closes_the_connection(broker, client):
    header = RequestHeader(ApiKey.METADATA, 8, 1, "x").encode()
    body = b"\x7f\xff\xff\xff"  # an array count far beyond the bytes that follow
    client.send_raw(struct.pack(">i", len(header) + len(body)) + header + body)
    assert client.is_closed_by_peer()
    still_serving(broker)


def test_torn_frame_then_disconnect_leaves_broker_serving(broker, client):
    client.send_raw(struct.pack(">i", 1000) + b"partial")
    client.close()
    still_serving(broker)


def test_api_versions_v4_gets_the_kip511_fallback(broker, client):
    # ApiVersions v4 (kafka-python 3 starts there) uses request header v2: v1 plus an (empty)
    # tagged-field section, which RequestHeader.encode adds for a flexible version.
    header = RequestHeader(ApiKey.API_VERSIONS, 4, 7, "x").encode()
    assert header.endswith(b"\x00")
    body = b"\x03abc\x021\x00"  # compact strings "abc", "1", no tagged fields
    client.send_raw(struct.pack(">i", len(header) + len(body)) + header + body)
    frame = client.read_frame()
    assert struct.unpack_from(">i", frame)[0] == 7
    res = ApiVersionsResponse.decode(frame[4:], 0)
    assert res.error_code == errors.UnsupportedVersion.code
    assert [(k.api_key, k.min_version, k.max_version) for k in res.api_keys] == [(18, 0, 3)]


def test_produce_v2_is_answered_unsupported_version(broker, client):
    topic = make_topic(client)
    res = produce(client, topic, build_batch([(None, b"x")]), version=2)
    assert res.error_code == errors.UnsupportedVersion.code
    still_serving(broker)


def test_unserved_version_of_another_api_closes_the_connection(broker, client):
    header = RequestHeader(ApiKey.FETCH, 2, 1, "x").encode()
    client.send_raw(struct.pack(">i", len(header)) + header)
    assert client.is_closed_by_peer()
    still_serving(broker)


@pytest.mark.parametrize("name", ["", "a/b", "..", "spaces here", "x" * 250, "ünïcode"])
def test_invalid_topic_names_are_rejected_everywhere(broker, client, name):
    created = client.request(ApiKey.CREATE_TOPICS, 4, CreateTopicsRequest(
        topics=[CreatableTopic(name=name, num_partitions=1, replication_factor=1)]))
    assert created.topics[0].error_code == errors.InvalidTopic.code
    md = client.request(ApiKey.METADATA, 8, MetadataRequest(
        topics=[MetadataRequestTopic(name=name)], allow_auto_topic_creation=True))
    assert md.topics[0].error_code == errors.InvalidTopic.code


def test_produce_to_unknown_topic_or_partition(broker, client):
    assert produce(client, "never-created", build_batch([(None, b"x")])).error_code == (
        errors.UnknownTopicOrPartition.code)
    topic = make_topic(client)
    assert produce(client, topic, build_batch([(None, b"x")]), partition=5).error_code == (
        errors.UnknownTopicOrPartition.code)


def test_batch_with_wrong_crc_or_magic_is_corrupt_and_not_stored(broker, client):
    topic = make_topic(client)
    good = build_batch([(None, b"payload")])
    bad_crc = bytearray(good)
    bad_crc[-1] ^= 0xFF
    bad_magic = bytearray(good)
    bad_magic[16] = 1
    truncated = good[:-3]
    for bad in (bad_crc, bad_magic, truncated, b"\x00" * 10):
        res = produce(client, topic, bytes(bad))
        assert res.error_code == errors.CorruptMessage.code, bytes(bad)[:20]
    assert produce(client, topic, good).base_offset == 0  # nothing was stored before


def test_invalid_acks_is_rejected(broker, client):
    topic = make_topic(client)
    req = ProduceRequest(acks=5, timeout_ms=5000, topic_data=[TopicProduceData(
        name=topic, partition_data=[PartitionProduceData(index=0, records=build_batch(
            [(None, b"x")]))])])
    res = client.request(ApiKey.PRODUCE, 8, req).responses[0].partition_responses[0]
    assert res.error_code == errors.InvalidRequiredAcks.code


@pytest.mark.parametrize("offset", [-1, -100, 2, 10**12])
def test_fetch_outside_the_log_is_offset_out_of_range(broker, client, offset):
    topic = make_topic(client)
    produce(client, topic, build_batch([(None, b"a")]))
    req = FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20,
                       topics=[FetchTopic(topic=topic, partitions=[FetchPartition(
                           partition=0, fetch_offset=offset, partition_max_bytes=1 << 20)])])
    part = client.request(ApiKey.FETCH, 11, req).responses[0].partitions[0]
    assert part.error_code == errors.OffsetOutOfRange.code


def test_list_offsets_earliest_latest_and_by_time(broker, client):
    topic = make_topic(client)
    for i in range(3):
        produce(client, topic, build_batch([(None, b"r")] * 2, timestamp_ms=1_000 * (i + 1)))

    def lookup(ts: int):
        req = ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsTopic(name=topic, partitions=[
            ListOffsetsPartition(partition_index=0, timestamp=ts)])])
        p = client.request(ApiKey.LIST_OFFSETS, 5, req).topics[0].partitions[0]
        return p.error_code, p.offset

    assert lookup(-2) == (0, 0)
    assert lookup(-1) == (0, 6)
    assert lookup(2_000) == (0, 2)
    assert lookup(10**13) == (0, -1)
    assert lookup(-7)[0] == errors.InvalidRequest.code


def test_random_garbage_requests_never_take_the_broker_down(broker):
    """A seeded barrage: plausible headers for every API and version (served or not) followed
    by random bodies, random frame lengths, and raw noise. Each connection may be answered or
    closed; the broker must keep serving."""
    import random

    from brokers.core.protocol.api import SUPPORTED

    rng = random.Random(20261121)
    keys = [int(k) for k in SUPPORTED] + [rng.randrange(0, 32767) for _ in range(5)]
    for i in range(300):
        key = rng.choice(keys)
        version = rng.randrange(-1, 14)
        header = RequestHeader(key, version, i, rng.choice([None, "", "fuzz"])).encode()
        body = rng.randbytes(rng.randrange(0, 200))
        frame = header + body
        kind = i % 3
        if kind == 0:
            data = struct.pack(">i", len(frame)) + frame
        elif kind == 1:
            data = struct.pack(">i", rng.randrange(-(2**31), 2**31)) + frame
        else:
            data = rng.randbytes(rng.randrange(1, 300))
        with KafkaProbe(broker.host, broker.port, timeout_s=5) as c:
            c.send_raw(data)
            c.sock.settimeout(0.05)
            with contextlib.suppress(TimeoutError, ConnectionError):
                c.sock.recv(65536)
    still_serving(broker)
    assert broker.process.poll() is None
