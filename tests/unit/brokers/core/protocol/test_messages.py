"""Message codec tests: round trips for every API x version, known byte vectors, the
hand-written fast paths against the generic schema codec, and garbage fuzzing."""

from __future__ import annotations

import contextlib
import struct
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brokers.core.errors import ProtocolViolation, UnsupportedVersion
from brokers.core.protocol import api
from brokers.core.protocol.api import DEFINED, REQUESTS, RESPONSES, SUPPORTED, ApiKey
from brokers.core.protocol.messages import api_versions, fetch, metadata, produce
from brokers.core.protocol.primitives import join
from brokers.core.protocol.schema import (
    BOOL,
    BYTES,
    INT8,
    INT16,
    INT32,
    INT64,
    RECORDS,
    STRING,
    UUID,
    ArrayOf,
    Message,
    Struct,
    generic_decode,
    generic_encode,
    wire_fields,
)

# Every defined codec, advertised or not yet (api.DEFINED).
PAIRS = [(k, v) for k, (lo, hi) in DEFINED.items() for v in range(lo, hi + 1)]
PAIR_IDS = [f"{k.name}-v{v}" for k, v in PAIRS]

_INTS = {INT8: 8, INT16: 16, INT32: 32, INT64: 64}
_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=6)


def _kind_strategy(kind: Any, version: int) -> st.SearchStrategy[Any]:
    if isinstance(kind, ArrayOf):
        return st.lists(_kind_strategy(kind.elem, version), max_size=3)
    if isinstance(kind, type) and issubclass(kind, Struct):
        return struct_strategy(kind, version)
    if kind in _INTS:
        bits = _INTS[kind]
        return st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    if kind == BOOL:
        return st.booleans()
    if kind == STRING:
        return _TEXT
    if kind == BYTES:
        return st.binary(max_size=12)
    if kind == UUID:
        return st.binary(min_size=16, max_size=16)
    if kind == RECORDS:
        # Occasionally big enough to take the zero-copy path of the encoders.
        return st.binary(max_size=12) | st.binary(min_size=520, max_size=530)
    raise AssertionError(kind)


def struct_strategy(cls: type[Struct], version: int) -> st.SearchStrategy[Any]:
    """Instances of ``cls`` with every field present at ``version`` drawn at random and every
    absent field at its default (so decode(encode(x)) == x must hold exactly)."""
    kw = {}
    for name, spec in wire_fields(cls):
        if spec.present(version):
            s = _kind_strategy(spec.kind, version)
            kw[name] = st.none() | s if spec.nullable(version) else s
    return st.builds(cls, **kw)


def _rt(obj: Message, version: int) -> Message:
    raw = join(obj.encode(version))
    assert raw == join(generic_encode(obj, version))  # fast paths agree with the schema
    back = type(obj).decode(raw, version)
    assert back == generic_decode(type(obj), raw, version)
    return back


@pytest.mark.parametrize(("key", "version"), PAIRS, ids=PAIR_IDS)
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_round_trip_every_api_and_version(key: ApiKey, version: int, data: st.DataObject
                                          ) -> None:
    for cls in (REQUESTS[key], RESPONSES[key]):
        obj = data.draw(struct_strategy(cls, version))
        assert _rt(obj, version) == obj
        # The registry helpers are the same codec.
        if cls is REQUESTS[key]:
            raw = join(api.encode_request(key, version, obj))
            assert api.decode_request(key, version, raw) == obj
        else:
            raw = join(api.encode_response(key, version, obj))
            assert api.decode_response(key, version, raw) == obj


@pytest.mark.parametrize(("key", "version"), PAIRS, ids=PAIR_IDS)
def test_defaults_round_trip(key: ApiKey, version: int) -> None:
    for cls in (REQUESTS[key], RESPONSES[key]):
        assert _rt(cls(), version) == cls()


@pytest.mark.parametrize(("key", "version"), PAIRS, ids=PAIR_IDS)
@settings(max_examples=40, deadline=None)
@given(garbage=st.binary(max_size=120))
def test_garbage_bodies_only_raise_protocol_violation(key: ApiKey, version: int,
                                                      garbage: bytes) -> None:
    for decode in (api.decode_request, api.decode_response):
        try:
            obj = decode(key, version, garbage)
        except ProtocolViolation:
            continue
        assert isinstance(obj, Message)


@pytest.mark.parametrize(("key", "version"), PAIRS, ids=PAIR_IDS)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_truncated_or_mutated_encodings(key: ApiKey, version: int, data: st.DataObject) -> None:
    for cls in (REQUESTS[key], RESPONSES[key]):
        raw = join(data.draw(struct_strategy(cls, version)).encode(version))
        if raw:
            cut = data.draw(st.integers(0, len(raw) - 1))
            with pytest.raises(ProtocolViolation):
                cls.decode(raw[:cut], version)
            i = data.draw(st.integers(0, len(raw) - 1))
            mutated = raw[:i] + bytes([raw[i] ^ data.draw(st.integers(1, 255))]) + raw[i + 1 :]
            with contextlib.suppress(ProtocolViolation):
                cls.decode(mutated, version)
        if version < cls.TRAILING_IGNORED_FROM:
            with pytest.raises(ProtocolViolation):
                cls.decode(raw + b"\x00", version)  # trailing bytes
        else:  # ignored, as Kafka ignores them (see MetadataRequest)
            assert cls.decode(raw + b"\x00", version) == cls.decode(raw, version)


def test_huge_array_count_is_rejected_before_allocating() -> None:
    body = b"\x7f\xff\xff\xff" + b"\x00" * 16
    for key, version in [(ApiKey.METADATA, 5), (ApiKey.CREATE_TOPICS, 3)]:
        with pytest.raises(ProtocolViolation):
            api.decode_request(key, version, body)
    # Produce: null txn id, acks, timeout, then 2^31-1 topics.
    with pytest.raises(ProtocolViolation):
        api.decode_request(ApiKey.PRODUCE, 3, b"\xff\xff\x00\x01\x00\x00\x00\x00" + body)
    with pytest.raises(ProtocolViolation):
        api.decode_request(ApiKey.FETCH, 4, b"\x00" * 17 + body)


def test_unsupported_versions_and_keys() -> None:
    assert api.is_supported(0, 0) and api.is_supported(0, 9) and not api.is_supported(0, 10)
    assert not api.is_served(0, 2) and api.is_served(0, 3)
    assert api.is_supported(17, 1) and not api.is_supported(17, 2)  # SaslHandshake v0-1
    assert api.is_supported(36, 2) and not api.is_supported(36, 3)  # SaslAuthenticate v0-2
    assert not api.is_supported(7, 0)  # ControlledShutdown: inter-broker, never served
    assert not api.is_supported(999, 0) and not api.is_supported(-1, 0)
    with pytest.raises(UnsupportedVersion):
        api.decode_request(1, 3, b"")
    with pytest.raises(UnsupportedVersion):
        api.decode_request(4242, 0, b"")
    with pytest.raises(ValueError):
        fetch.FetchRequest().encode(3)


# --- known byte vectors, computed by hand from the specs -------------------------------------

def test_api_versions_v0_request_bytes() -> None:
    # Header v1: api_key=18, version=0, correlation_id=1, client_id="ab"; v0 body is empty.
    hdr = api.RequestHeader(18, 0, 1, "ab")
    frame = join(api.request_frame(hdr, api_versions.ApiVersionsRequest()))
    assert frame == bytes.fromhex("0000000c" "0012" "0000" "00000001" "0002") + b"ab"
    assert api_versions.ApiVersionsRequest.decode(b"", 0) == api_versions.ApiVersionsRequest()


def test_api_versions_v0_and_v1_response_bytes() -> None:
    resp = api_versions.ApiVersionsResponse(0, [api_versions.ApiVersion(0, 0, 8),
                                                api_versions.ApiVersion(18, 0, 2)], 7)
    v0 = bytes.fromhex("0000" "00000002" "0000" "0000" "0008" "0012" "0000" "0002")
    assert join(resp.encode(0)) == v0
    assert join(resp.encode(1)) == v0 + bytes.fromhex("00000007")
    assert api_versions.ApiVersionsResponse.decode(v0, 0) == api_versions.ApiVersionsResponse(
        0, resp.api_keys, 0)


def test_api_versions_fallback_frame() -> None:
    # size, response header v0 (correlation id), v0 body: error 35, [{18, 0, 3}]
    expected = bytes.fromhex("00000010" "0000002a" "0023" "00000001" "0012" "0000" "0003")
    assert join(api.api_versions_fallback_frame(42)) == expected
    assert api.api_versions_fallback().error_code == 35


def test_api_versions_v3_request_bytes_flexible() -> None:
    # Header v2 (v1 + empty tags), then compact strings "rk" and "2.1" (length + 1) and no tags.
    hdr = api.RequestHeader(18, 3, 1, "ab")
    req = api_versions.ApiVersionsRequest("rk", "2.1")
    frame = join(api.request_frame(hdr, req))
    assert frame == (bytes.fromhex("00000015" "0012" "0003" "00000001" "0002") + b"ab" + b"\x00"
                     + b"\x03rk" + b"\x042.1" + b"\x00")
    assert api_versions.ApiVersionsRequest.decode(frame[17:], 3) == req


def test_api_versions_v3_response_compact_array_and_tags() -> None:
    resp = api_versions.ApiVersionsResponse(0, [api_versions.ApiVersion(18, 0, 3)], 0)
    raw = join(resp.encode(3))
    assert raw == bytes.fromhex("0000" "02" "0012" "0000" "0003" "00" "00000000" "00")
    # A tagged field we know (finalized_features_epoch, tag 1) is written only when set.
    resp.finalized_features_epoch = 5
    raw = join(resp.encode(3))
    assert raw.endswith(bytes.fromhex("01" "01" "08" "0000000000000005"))
    assert api_versions.ApiVersionsResponse.decode(raw, 3) == resp


def test_unknown_tagged_fields_are_skipped_and_bad_ones_rejected() -> None:
    # Heartbeat v4 request: compact "g", generation 1, compact "m", null instance id, then a
    # tag section with an unknown tag 7 of 2 bytes.
    body = b"\x02g" + b"\x00\x00\x00\x01" + b"\x02m" + b"\x00"
    req = api.decode_request(ApiKey.HEARTBEAT, 4, body + b"\x01\x07\x02zz")
    assert (req.group_id, req.generation_id, req.member_id) == ("g", 1, "m")
    for bad in (b"\x01\x07\x05zz",  # size beyond the body
                b"\x02\x07\x00\x03\x00",  # tags out of order
                b"\x05"):  # more tags than bytes
        with pytest.raises(ProtocolViolation):
            api.decode_request(ApiKey.HEARTBEAT, 4, body + bad)


def test_metadata_v11_all_topics_as_librdkafka_sends_it() -> None:
    # Captured from confluent-kafka 2.16's AdminClient.list_topics(): 3 bytes past the fields.
    req = api.decode_request(ApiKey.METADATA, 11, bytes.fromhex("00000000010000"))
    assert req.topics is None
    with pytest.raises(ProtocolViolation):  # still strict where no client needs leniency
        api.decode_request(ApiKey.METADATA, 8, join(metadata.MetadataRequest().encode(8)) + b"x")


def test_flexible_response_header_except_api_versions() -> None:
    produce_v9 = join(api.response_frame(3, ApiKey.PRODUCE, 9, produce.ProduceResponse()))
    assert produce_v9[4:9] == b"\x00\x00\x00\x03\x00"  # header v1: correlation id + no tags
    av3 = join(api.response_frame(3, ApiKey.API_VERSIONS, 3, api.api_versions_response()))
    assert av3[4:10] == b"\x00\x00\x00\x03\x00\x00"  # header v0, then error_code 0


def test_api_versions_response_lists_every_supported_range() -> None:
    resp = api.api_versions_response()
    assert {(k.api_key, k.min_version, k.max_version) for k in resp.api_keys} == {
        (int(k), lo, hi) for k, (lo, hi) in SUPPORTED.items()}


PRODUCE_V3 = bytes.fromhex(
    "ffff"  # transactional_id: null
    "ffff"  # acks: -1
    "000003e8"  # timeout_ms: 1000
    "00000001" "0001" "74"  # 1 topic, name "t"
    "00000001" "00000002" "00000003" "616263"  # 1 partition: index 2, records "abc"
)


def test_produce_v3_request_bytes() -> None:
    req = produce.ProduceRequest(None, -1, 1000, [produce.TopicProduceData(
        "t", [produce.PartitionProduceData(2, b"abc")])])
    assert join(req.encode(3)) == PRODUCE_V3
    back = produce.ProduceRequest.decode(PRODUCE_V3, 3)
    assert back == req
    records = back.topic_data[0].partition_data[0].records
    assert isinstance(records, memoryview) and records.obj is PRODUCE_V3  # zero copy


def test_produce_response_v8_bytes() -> None:
    resp = produce.ProduceResponse([produce.TopicProduceResponse("t", [
        produce.PartitionProduceResponse(1, 0, 100, -1, 0)])], 0)
    assert join(resp.encode(8)) == bytes.fromhex(
        "00000001" "0001" "74" "00000001"
        "00000001" "0000" "0000000000000064" "ffffffffffffffff" "0000000000000000"
        "00000000" "ffff"  # record_errors: [], error_message: null
        "00000000")  # throttle
    assert join(resp.encode(3)) == bytes.fromhex(
        "00000001" "0001" "74" "00000001"
        "00000001" "0000" "0000000000000064" "ffffffffffffffff" "00000000")


def test_metadata_request_null_topics_means_all() -> None:
    assert join(metadata.MetadataRequest(topics=None).encode(4)) == b"\xff\xff\xff\xff\x01"
    assert metadata.MetadataRequest.decode(b"\xff\xff\xff\xff\x01", 4).topics is None
    assert metadata.MetadataRequest.decode(b"\x00\x00\x00\x00", 1).topics == []


def test_fetch_response_passes_large_records_by_reference() -> None:
    stored = memoryview(bytearray(b"R" * 100_000))
    resp = fetch.FetchResponse(responses=[fetch.FetchableTopicResponse("t", [
        fetch.PartitionData(0, 0, 5, 5, 0, None, -1, stored)])])
    for v in range(4, 12):
        parts = resp.encode(v)
        assert any(p is stored for p in parts)
        back = fetch.FetchResponse.decode(join(parts), v)
        assert bytes(back.responses[0].partitions[0].records) == bytes(stored)


def test_fetch_request_v11_bytes() -> None:
    raw = bytes.fromhex(
        "ffffffff" "000001f4" "00000001" "00100000" "00"  # replica, wait, min, max, isolation
        "00000000" "ffffffff"  # session id, epoch
        "00000001" "0001" "74" "00000001"  # topic "t", 1 partition
        "00000000" "ffffffff" "000000000000000a" "ffffffffffffffff" "00100000"
        "00000000"  # forgotten topics
        "0000")  # rack id ""
    req = fetch.FetchRequest.decode(raw, 11)
    assert req == fetch.FetchRequest(-1, 500, 1, 0x100000, 0, 0, -1, [fetch.FetchTopic(
        "t", [fetch.FetchPartition(0, -1, 10, -1, -1, 0x100000)])], [], "")
    assert join(req.encode(11)) == raw


def test_struct_sizes_match_spec_layout() -> None:
    assert struct.calcsize(">iiiib") == 17
