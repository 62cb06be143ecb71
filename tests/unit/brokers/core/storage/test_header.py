"""Batch header validation and the sparse index, in memory."""

import struct

import pytest

from brokers.core.errors import CorruptMessage, InvalidRecord, MessageTooLarge
from brokers.core.storage.batch_header import (
    HEADER_SIZE,
    check_batch,
    patched_prefix,
    validate_batches,
)
from brokers.core.storage.index import SparseIndex
from tests.support.batches import build_batch, parse_batches, recrc, zigzag_varint

MAX = 1 << 20


def test_builder_matches_the_spec_layout():
    b = build_batch([b"a", b"bc", None], base_timestamp=1000, timestamp_deltas=[0, 5, 2])
    (parsed,) = parse_batches(b)
    assert parsed.values == [b"a", b"bc", None]
    assert parsed.last_offset_delta == 2 and parsed.max_timestamp == 1005
    assert struct.unpack_from(">i", b, 8)[0] + 12 == len(b)
    assert zigzag_varint(-1) == b"\x01" and zigzag_varint(300) == b"\xd8\x04"


def test_check_batch_reports_header_fields():
    b = build_batch([b"x"] * 4, base_offset=77, base_timestamp=5, timestamp_deltas=[0, 9, 3, 1])
    info = check_batch(memoryview(b), 0, MAX)
    assert (info.position, info.size, info.base_offset) == (0, len(b), 77)
    assert (info.last_offset_delta, info.max_timestamp, info.record_offsets) == (3, 14, 4)


def test_validate_splits_concatenated_batches():
    a, b = build_batch([b"1"]), build_batch([b"2", b"3"])
    infos = validate_batches(memoryview(a + b), MAX)
    assert [(i.position, i.size) for i in infos] == [(0, len(a)), (len(a), len(b))]


def _tamper(batch: bytes, at: int, fmt: str, value: int, fix_crc: bool) -> bytes:
    b = bytearray(batch)
    struct.pack_into(fmt, b, at, value)
    return recrc(b) if fix_crc else bytes(b)


@pytest.mark.parametrize(
    ("mutate", "error"),
    [
        (lambda b: b[:-1], CorruptMessage),  # truncated payload
        (lambda b: b[:40], CorruptMessage),  # truncated header
        (lambda b: _tamper(b, 16, ">b", 1, False), CorruptMessage),  # magic 1
        (lambda b: _tamper(b, 17, ">I", 12345, False), CorruptMessage),  # bad CRC
        (lambda b: b[:-1] + bytes([b[-1] ^ 1]), CorruptMessage),  # payload bit flip
        (lambda b: _tamper(b, 8, ">i", 10, False), CorruptMessage),  # length below header
        (lambda b: _tamper(b, 8, ">i", 1 << 30, False), MessageTooLarge),  # claims 1 GiB
        (lambda b: _tamper(b, 23, ">i", -1, True), InvalidRecord),  # lastOffsetDelta < 0
        (lambda b: _tamper(b, 57, ">i", 0, True), InvalidRecord),  # no records
        (lambda b: _tamper(b, 57, ">i", 5, True), InvalidRecord),  # count != delta + 1
    ],
)
def test_bad_batches_raise_the_right_kafka_error(mutate, error):
    good = build_batch([b"hello", b"world", b"!"])
    with pytest.raises(error):
        validate_batches(memoryview(mutate(good)), MAX)


def test_count_that_cannot_fit_uncompressed_payload_is_corrupt():
    b = build_batch([b"v"])
    b = _tamper(b, 23, ">i", 99, False)
    b = _tamper(b, 57, ">i", 100, True)
    with pytest.raises(CorruptMessage, match="cannot fit"):
        validate_batches(memoryview(b), MAX)


def test_oversized_batch_rejected_and_recovery_ignores_the_limit():
    b = build_batch([b"x" * 500])
    with pytest.raises(MessageTooLarge):
        validate_batches(memoryview(b), len(b) - 1)
    assert check_batch(memoryview(b), 0, None).size == len(b)


def test_empty_record_set_is_invalid():
    with pytest.raises(InvalidRecord):
        validate_batches(memoryview(b""), MAX)


def test_second_bad_batch_fails_the_whole_set():
    good = build_batch([b"a"])
    with pytest.raises(CorruptMessage):
        validate_batches(memoryview(good + good[:-3]), MAX)


def test_patched_prefix_rewrites_only_offset_length_epoch():
    b = build_batch([b"a", b"b"])
    prefix = patched_prefix(1234, len(b), 7)
    assert len(prefix) == 16
    assert struct.unpack(">qii", prefix) == (1234, len(b) - 12, 7)
    patched = prefix + b[16:]
    assert check_batch(memoryview(patched), 0, MAX).base_offset == 1234
    assert HEADER_SIZE == 61


def test_sparse_index_lookups():
    idx = SparseIndex()
    for rel, pos, ts in [(10, 4000, 100), (20, 8100, 100), (35, 12300, 250)]:
        idx.append(rel, pos, ts)
    assert idx.position_for_offset(0) == 0
    assert idx.position_for_offset(9) == 0
    assert idx.position_for_offset(10) == 4000
    assert idx.position_for_offset(34) == 8100
    assert idx.position_for_offset(10_000) == 12300
    assert idx.position_at_or_before(8099) == 4000
    assert idx.position_at_or_before(8100) == 8100
    assert idx.position_for_time(50) == 0
    assert idx.position_for_time(100) == 0
    assert idx.position_for_time(101) == 8100
    assert idx.position_for_time(10**15) == 12300


def test_sparse_index_round_trip_and_sanity():
    idx = SparseIndex()
    idx.append(3, 100, 5)
    idx.append(9, 300, 7)
    ib, tb = idx.encode()
    back = SparseIndex.decode(ib, tb, 1000)
    assert back is not None and list(back.rels) == [3, 9] and list(back.ts_before) == [5, 7]
    assert SparseIndex.decode(ib, tb, 300) is None  # position beyond the log
    assert SparseIndex.decode(ib[:-1], tb, 1000) is None  # torn entry
    assert SparseIndex.decode(ib, tb[:12], 1000) is None  # counts differ
    assert SparseIndex.decode(b"\0" * 16, b"\0" * 24, 1000) is None  # zero-filled
    assert SparseIndex.decode(ib[8:] + ib[:8], tb[12:] + tb[:12], 1000) is None  # not increasing


def _claim(batch: bytes, codec: int, count: int) -> bytes:
    """``batch`` relabelled as ``codec``-compressed holding ``count`` records (CRC fixed): the
    header-only check never decompresses, so the payload bytes do not matter."""
    b = _tamper(batch, 21, ">h", codec, False)
    b = _tamper(b, 23, ">i", count - 1, False)
    return _tamper(b, 57, ">i", count, True)


@pytest.mark.parametrize(("codec", "expansion"),
                         [(0, 1), (1, 1032), (2, 22), (3, 255), (4, 32768)])
def test_record_count_is_bounded_by_what_the_payload_can_decompress_to(codec, expansion):
    b = build_batch([b"x" * 200])
    payload = len(b) - HEADER_SIZE
    most = payload * expansion // 7  # every record takes at least 7 bytes
    info = check_batch(memoryview(_claim(b, codec, most)), 0, MAX)
    assert info.record_offsets == most
    with pytest.raises(CorruptMessage, match="cannot fit"):
        validate_batches(memoryview(_claim(b, codec, most + 1)), MAX)


def test_compressed_batch_claiming_two_billion_records_is_corrupt():
    """The attack: a 1-record gzip batch whose header claims 2^31 records would burn 2^31
    offsets and force a segment roll every second batch."""
    from tests.support.record_builder import build_batch as codec_build_batch

    b = codec_build_batch([(None, b"v")], compression=1)  # really gzip-compressed
    with pytest.raises(CorruptMessage, match="gzip"):
        validate_batches(memoryview(_claim(b, 1, 2**31 - 1)), MAX)


def test_unknown_codec_is_corrupt_but_recovery_keeps_what_was_stored():
    b = build_batch([b"v"])
    with pytest.raises(CorruptMessage, match="codec 5"):
        validate_batches(memoryview(_claim(b, 5, 1)), MAX)
    # Recovery validates stored bytes, not a producer's claims: a batch an older broker
    # accepted stays part of the log.
    stored = _claim(b, 1, 2**31 - 1)
    assert check_batch(memoryview(stored), 0, None).record_offsets == 2**31 - 1
