"""The client's hand-written Produce/Fetch/ApiVersions code against the shared codec, and the
connection's framing under arbitrary fragmentation (no sockets: a fake transport)."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brokers.core.errors import ProtocolViolation
from brokers.core.protocol import api
from brokers.core.protocol.header import RequestHeader
from brokers.core.protocol.messages import fetch, produce
from brokers.core.protocol.primitives import join
from workloads import wire
from workloads.connection import BrokerConnection, ConnectionClosed, ConnectionConfig
from workloads.payload import BatchBuilder
from workloads.producer import _parse

CLIENT = b"twinbench"


@pytest.mark.parametrize("version", range(3, 9))
def test_produce_prefix_plus_batch_equals_codec_request(version):
    batch = BatchBuilder(32, 20, 1).build(0, 10**15)
    prefix = wire.produce_prefix(
        version=version,
        client_id=CLIENT,
        topic=b"topic-a",
        partition=5,
        acks=1,
        timeout_ms=1234,
        batch_size=len(batch),
        correlation_id=77,
    )
    assert len(prefix) == wire.produce_prefix_size(CLIENT, b"topic-a")
    ours = prefix + batch
    req = produce.ProduceRequest(
        transactional_id=None,
        acks=1,
        timeout_ms=1234,
        topic_data=[
            produce.TopicProduceData(
                name="topic-a",
                partition_data=[produce.PartitionProduceData(index=5, records=batch)],
            )
        ],
    )
    header = RequestHeader(0, version, 77, "twinbench")
    assert ours == join(api.request_frame(header, req))
    # and the broker's decoder reads it back
    _h, pos = RequestHeader.decode(ours[4:])
    back = produce.ProduceRequest.decode(memoryview(ours[4:])[pos:], version)
    assert bytes(back.topic_data[0].partition_data[0].records) == batch


@pytest.mark.parametrize("version", range(3, 9))
def test_produce_response_parsing(version):
    resp = produce.ProduceResponse(
        responses=[
            produce.TopicProduceResponse(
                name="t",
                partition_responses=[
                    produce.PartitionProduceResponse(
                        index=2,
                        error_code=0,
                        base_offset=4242,
                        log_start_offset=0,
                        record_errors=[produce.BatchIndexAndErrorMessage(0, "x")]
                        if version >= 8
                        else [],
                        error_message="m" if version >= 8 else None,
                    )
                ],
            )
        ]
    )
    body = b"\x00\x00\x00\x09" + join(resp.encode(version))  # correlation id 9
    assert _parse(memoryview(body), version) == (0, 4242)
    (r,) = wire.decode_produce_response(body, version, 4)
    assert (r.topic, r.partition, r.error_code, r.base_offset) == ("t", 2, 0, 4242)
    two = produce.ProduceResponse(
        responses=[
            produce.TopicProduceResponse(
                name="t",
                partition_responses=[
                    produce.PartitionProduceResponse(0, 0, 1),
                    produce.PartitionProduceResponse(1, 6, -1),
                ],
            )
        ]
    )
    assert _parse(memoryview(b"\0\0\0\1" + join(two.encode(version))), version) == (6, -1)


@pytest.mark.parametrize("version", range(4, 12))
def test_fetch_request_equals_codec(version):
    parts = [(0, 100, 4096), (3, 0, 1 << 20)]
    ours = wire.encode_fetch_request(
        version=version, max_wait_ms=250, min_bytes=1, max_bytes=8192, topic="tp", partitions=parts
    )
    req = fetch.FetchRequest(
        max_wait_ms=250,
        min_bytes=1,
        max_bytes=8192,
        topics=[
            fetch.FetchTopic(
                topic="tp",
                partitions=[
                    fetch.FetchPartition(partition=p, fetch_offset=o, partition_max_bytes=m)
                    for p, o, m in parts
                ],
            )
        ],
    )
    assert ours == join(req.encode(version))


@pytest.mark.parametrize("version", range(4, 12))
def test_fetch_response_parsing(version):
    records = BatchBuilder(16, 3, 1).build(0, 10**15) * 2
    resp = fetch.FetchResponse(
        error_code=0,
        responses=[
            fetch.FetchableTopicResponse(
                topic="tp",
                partitions=[
                    fetch.PartitionData(
                        partition_index=0,
                        error_code=0,
                        high_watermark=6,
                        aborted_transactions=[fetch.AbortedTransaction(1, 2)],
                        records=records,
                    ),
                    fetch.PartitionData(
                        partition_index=1, error_code=1, high_watermark=-1, records=None
                    ),
                ],
            )
        ],
    )
    body = join(resp.encode(version))
    top, parts = wire.decode_fetch_response(body, version)
    assert top == 0
    assert [(p.partition, p.error_code, p.high_watermark) for p in parts] == [(0, 0, 6), (1, 1, -1)]
    assert bytes(parts[0].records) == records and parts[1].records is None
    with pytest.raises(ProtocolViolation):
        wire.decode_fetch_response(body[:-5], version)


def test_api_versions_response_and_fallback():
    body = join(api.api_versions_response().encode(2))
    err, ranges = wire.decode_api_versions_response(body)
    assert err == 0 and ranges[0] == (0, 9) and ranges[1] == (4, 12)
    err, ranges = wire.decode_api_versions_response(join(api.api_versions_fallback().encode(0)))
    assert err == 35 and ranges == {18: (0, 3)}


class FakeTransport:
    def __init__(self) -> None:
        self.written: list[bytes] = []
        self.closed = False

    def write(self, data) -> None:
        self.written.append(bytes(data))

    def writelines(self, parts) -> None:
        self.written.append(b"".join(bytes(p) for p in parts))

    def close(self) -> None:
        self.closed = True


def _response(corr: int, body: bytes) -> bytes:
    return (len(body) + 4).to_bytes(4, "big") + corr.to_bytes(4, "big") + body


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 3000), min_size=1, max_size=6),
    cuts=st.lists(st.integers(1, 700), min_size=1, max_size=40),
)
def test_framing_survives_any_fragmentation(sizes, cuts):
    async def body():
        conn = BrokerConnection("h", 1, ConnectionConfig(request_timeout_s=None))
        conn.transport = FakeTransport()  # type: ignore[assignment]
        futs = [conn.request(18, 0, b"") for _ in sizes]
        stream = b"".join(_response(i + 1, bytes([i]) * n) for i, n in enumerate(sizes))
        pos = 0
        k = 0
        while pos < len(stream):
            step = cuts[k % len(cuts)]
            conn.data_received(stream[pos : pos + step])
            pos += step
            k += 1
        for i, (f, n) in enumerate(zip(futs, sizes, strict=True)):
            frame = f.result()
            assert bytes(frame[4:]) == bytes([i]) * n
        assert conn.in_flight == 0
        assert conn.latency[18].count == len(sizes)

    asyncio.run(body())


def test_correlation_mismatch_closes_and_fails_everything():
    async def body():
        conn = BrokerConnection("h", 1, ConnectionConfig(request_timeout_s=None))
        t = FakeTransport()
        conn.transport = t  # type: ignore[assignment]
        f1 = conn.request(18, 0, b"")
        f2 = conn.request(18, 0, b"")
        conn.data_received(_response(2, b""))  # answers the second first: not allowed
        assert t.closed and conn.closed
        for f in (f1, f2):
            with pytest.raises(ProtocolViolation):
                f.result()
        with pytest.raises(ProtocolViolation):
            conn.request(18, 0, b"")

    asyncio.run(body())


def test_request_timeout_fails_the_connection():
    async def body():
        conn = BrokerConnection("h", 1, ConnectionConfig(request_timeout_s=0.05))
        conn.transport = FakeTransport()  # type: ignore[assignment]
        f = conn.request(18, 0, b"")
        with pytest.raises(ConnectionClosed):
            await f

    asyncio.run(body())


def test_oversized_frame_is_refused_before_allocation():
    async def body():
        conn = BrokerConnection("h", 1, ConnectionConfig(max_frame_bytes=1000))
        conn.transport = FakeTransport()  # type: ignore[assignment]
        f = conn.request(18, 0, b"")
        conn.data_received((10**9).to_bytes(4, "big"))
        assert conn.closed
        with pytest.raises(ProtocolViolation):
            f.result()

    asyncio.run(body())
