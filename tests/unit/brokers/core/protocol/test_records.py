"""RecordBatch v2 helpers and the consumer embedded protocol."""

from __future__ import annotations

import struct

import cramjam
import pytest
from crc32c import crc32c
from hypothesis import given, settings
from hypothesis import strategies as st

from brokers.core.errors import CorruptMessage, ProtocolViolation
from brokers.core.protocol.records import (
    BATCH_HEADER,
    BROKER_PREFIX,
    CRC_START,
    HEADER_SIZE,
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
    ConsumerTopicPartitions,
    Record,
    UnsupportedCompression,
    decode_records,
    decompress,
    iter_batches,
)
from tests.support.record_builder import build_batch

blobs = st.none() | st.binary(max_size=20)
records_st = st.lists(
    st.builds(Record, timestamp=st.integers(0, 2**41), key=blobs, value=blobs,
              headers=st.lists(st.tuples(
                  st.text(st.characters(blacklist_categories=("Cs",)), max_size=4), blobs),
                  max_size=2)),
    min_size=1, max_size=5)


def test_header_layout_matches_the_reference_table() -> None:
    assert HEADER_SIZE == BATCH_HEADER.size == 61
    b = build_batch([(b"k", b"v")], 7, timestamp_ms=123, producer_id=9, producer_epoch=2,
                    base_sequence=5, partition_leader_epoch=3)
    assert struct.unpack_from(">q", b, 0)[0] == 7
    assert struct.unpack_from(">i", b, 8)[0] == len(b) - 12
    assert struct.unpack_from(">i", b, 12)[0] == 3
    assert b[16] == 2
    assert struct.unpack_from(">I", b, 17)[0] == crc32c(b[21:])
    assert struct.unpack_from(">q", b, 27)[0] == 123
    assert struct.unpack_from(">q", b, 43)[0] == 9
    assert struct.unpack_from(">h", b, 51)[0] == 2
    assert struct.unpack_from(">i", b, 53)[0] == 5
    assert struct.unpack_from(">i", b, 57)[0] == 1


@settings(max_examples=100, deadline=None)
@given(recs=records_st, base=st.integers(0, 2**40), gzip=st.booleans())
def test_build_then_decode_round_trip(recs: list[Record], base: int, gzip: bool) -> None:
    raw = build_batch(recs, base, compression=1 if gzip else 0)
    (h,) = iter_batches(raw, verify_crc=True)
    assert (h.base_offset, h.records_count, h.size) == (base, len(recs), len(raw))
    assert h.next_offset == base + len(recs)
    assert h.max_timestamp == max(r.timestamp for r in recs)
    got = decode_records(raw)
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in got] == [
        (base + i, r.timestamp, r.key, r.value, r.headers) for i, r in enumerate(recs)]


def test_several_batches_and_partial_tail() -> None:
    a = build_batch([(b"a", b"1")], 0, timestamp_ms=1)
    b = build_batch([(b"b", b"2"), (b"c", b"3")], 1, timestamp_ms=2)
    buf = a + b
    assert [h.base_offset for h in iter_batches(buf, verify_crc=True)] == [0, 1]
    assert [h.position for h in iter_batches(buf)] == [0, len(a)]
    for cut in (len(a) + 5, len(a) + 61, len(buf) - 1):
        assert [h.base_offset for h in iter_batches(buf[:cut])] == [0]
        with pytest.raises(CorruptMessage):
            list(iter_batches(buf[:cut], allow_partial_tail=False))
    assert [r.value for r in decode_records(buf)] == [b"1", b"2", b"3"]


def test_crc_detects_every_flipped_byte_inside_the_crc_range() -> None:
    raw = build_batch([(b"key", b"value"), (None, b"x" * 30)], timestamp_ms=10)
    for i in range(21, len(raw)):
        bad = bytearray(raw)
        bad[i] ^= 0x40
        if i < 61 and struct.unpack_from(">i", bad, 8)[0] != len(raw) - 12:
            continue
        with pytest.raises(CorruptMessage):
            list(iter_batches(bad, verify_crc=True))
        assert crc32c(bad[CRC_START:]) != struct.unpack_from(">I", bad, 17)[0]


def test_patch_keeps_the_crc_valid() -> None:
    raw = bytearray(build_batch([(b"k", b"v")], 0, timestamp_ms=1))
    BROKER_PREFIX.pack_into(raw, 0, 12345, len(raw) - 12, 7)
    (h,) = iter_batches(raw, verify_crc=True)
    assert (h.base_offset, h.partition_leader_epoch) == (12345, 7)
    assert decode_records(raw)[0].offset == 12345


def test_bad_magic_and_lengths() -> None:
    raw = bytearray(build_batch([(b"k", b"v")], timestamp_ms=1))
    raw[16] = 1
    with pytest.raises(CorruptMessage):
        list(iter_batches(raw))
    raw = bytearray(build_batch([(b"k", b"v")], timestamp_ms=1))
    struct.pack_into(">i", raw, 8, 10)
    with pytest.raises(CorruptMessage):
        list(iter_batches(raw))


def test_corrupt_record_body_raises_corrupt_message() -> None:
    raw = bytearray(build_batch([(b"k", b"v")], timestamp_ms=1))
    struct.pack_into(">i", raw, 57, 5)  # claims 5 records, holds 1
    with pytest.raises(CorruptMessage):
        decode_records(raw, verify_crc=False)


def test_unsupported_codec_is_a_clear_error() -> None:
    raw = bytearray(build_batch([(b"k", b"v")], timestamp_ms=1))
    struct.pack_into(">h", raw, 21, 5)  # no codec has code 5
    with pytest.raises(UnsupportedCompression):
        decode_records(raw, verify_crc=False)
    with pytest.raises(UnsupportedCompression):
        build_batch([(b"k", b"v")], compression=6)


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_every_kafka_codec_decodes(codec: int) -> None:
    recs = [(b"k%d" % i, b"value %d" % i * 20) for i in range(50)]
    raw = build_batch(recs, timestamp_ms=7, compression=codec)
    assert [(r.key, r.value) for r in decode_records(raw)] == recs


def test_snappy_java_framing_decodes() -> None:
    """What Kafka's Java producer writes: snappy-java's stream framing, several blocks."""
    payload = bytes(range(256)) * 40
    blocks = [payload[:3000], payload[3000:]]
    framed = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1) + b"".join(
        struct.pack(">i", len(c)) + c
        for c in (bytes(cramjam.snappy.compress_raw(b)) for b in blocks))
    assert decompress(2, framed) == payload


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_garbage_payload_is_corrupt_message(codec: int) -> None:
    with pytest.raises(CorruptMessage):
        decompress(codec, b"\x82SNAPPY\x00\0\0\0\1\0\0\0\1\0\0\1\0garbage"
                   if codec == 2 else b"garbage that no codec reads")


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_consumer_protocol_round_trip(version: int) -> None:
    sub = ConsumerProtocolSubscription(topics=["a", "b"], user_data=b"u", version=version)
    if version >= 1:
        sub.owned_partitions = [ConsumerTopicPartitions("a", [0, 1])]
    if version >= 2:
        sub.generation_id = 4
    if version >= 3:
        sub.rack_id = "r1"
    assert ConsumerProtocolSubscription.decode(sub.encode()) == sub
    asg = ConsumerProtocolAssignment([ConsumerTopicPartitions("a", [0, 2])], None, version)
    assert ConsumerProtocolAssignment.decode(asg.encode()) == asg


def test_consumer_protocol_known_bytes_and_forward_compatibility() -> None:
    # Assignment v0 as every Java/Python client writes it: version, [topic, [partitions]],
    # user_data (null here).
    raw = bytes.fromhex("0000" "00000001" "0001" "74" "00000002" "00000000" "00000003"
                        "ffffffff")
    asg = ConsumerProtocolAssignment.decode(raw)
    assert asg.assigned_partitions == [ConsumerTopicPartitions("t", [0, 3])]
    assert asg.user_data is None
    assert asg.encode() == raw
    # A future version 9 with unknown trailing fields is read with our newest layout.
    future = b"\x00\x09" + raw[2:] + b"extra"
    assert ConsumerProtocolAssignment.decode(future).assigned_partitions == asg.assigned_partitions
    with pytest.raises(ProtocolViolation):
        ConsumerProtocolAssignment.decode(raw[:-1])


def test_consumer_protocol_matches_kafka_python() -> None:
    cp = pytest.importorskip("kafka.protocol.old.consumer_protocol")
    asg = ConsumerProtocolAssignment([ConsumerTopicPartitions("t", [1, 5])], b"x")
    sub = ConsumerProtocolSubscription(["t", "u"], None)
    kp_asg = cp.ConsumerProtocolMemberAssignment_v0.decode(asg.encode())
    assert bytes(kp_asg.encode()) == asg.encode()
    kp_sub = cp.ConsumerProtocolMemberMetadata_v0.decode(sub.encode())
    assert bytes(kp_sub.encode()) == sub.encode()


def test_offsets_derived_from_the_field_table_are_the_documented_ones() -> None:
    from brokers.core.protocol import records

    assert (records.LOG_OVERHEAD, records.MAGIC_AT, records.CRC_AT, records.CRC_START) == (
        12, 16, 17, 21)
    assert (records.LAST_OFFSET_DELTA_AT, records.BASE_TIMESTAMP_AT,
            records.MAX_TIMESTAMP_AT) == (23, 27, 35)
    assert records.BROKER_PREFIX.size == 16
