"""The load client's fixed-layout batches against the codec's generic RecordBatch v2 code."""

from __future__ import annotations

import struct

import pytest
from crc32c import crc32c
from hypothesis import given, settings
from hypothesis import strategies as st

from brokers.core.protocol import records as codec_records
from tests.support.record_builder import build_batch
from workloads.payload import (
    BATCH_HEADER,
    BatchBuilder,
    batch_layout,
    decode_batches,
    decode_records_generic,
    record_overhead,
)

PID = 7
US = 1_700_000_000_123_456


def reference_batch(msg_size: int, n: int, pid: int, first_seq: int, send_us: int) -> bytes:
    """What our layout must be, built by the codec's generic builder."""
    filler = b"x" * (msg_size - (16 if msg_size >= 16 else 8))
    values = []
    for i in range(n):
        if msg_size >= 16:
            stamp = struct.pack(">IIQ", pid, first_seq + i, send_us)
        else:
            stamp = struct.pack(">II", pid, first_seq + i)
        values.append((None, stamp + filler))
    return build_batch(values, timestamp_ms=send_us // 1000)


sizes = st.sampled_from([8, 9, 15, 16, 17, 32, 64, 100, 128, 1024, 8191, 8192, 20000])


@settings(max_examples=60, deadline=None)
@given(msg_size=sizes, n=st.integers(1, 130), first_seq=st.integers(0, 2**32 - 200))
def test_template_batch_is_byte_identical_to_generic_builder(msg_size, n, first_seq):
    built = BatchBuilder(msg_size, n, PID).build(first_seq, US)
    assert built == reference_batch(msg_size, n, PID, first_seq, US)


@settings(max_examples=40, deadline=None)
@given(msg_size=sizes, n=st.integers(1, 80), first_seq=st.integers(0, 2**31))
def test_fast_decode_equals_generic_decode(msg_size, n, first_seq):
    data = BatchBuilder(msg_size, n, PID).build(first_seq, US)
    (fast,) = decode_batches(data)
    assert fast.fast and fast.crc_ok and fast.foreign == 0
    generic = codec_records.decode_records(data)
    assert len(generic) == n == fast.record_count
    assert fast.producer_ids == tuple(struct.unpack_from(">I", r.value)[0] for r in generic)
    assert fast.sequences == tuple(struct.unpack_from(">I", r.value, 4)[0] for r in generic)
    if msg_size >= 16:
        assert fast.send_us == tuple(struct.unpack_from(">Q", r.value, 8)[0] for r in generic)
    else:  # 8-byte messages: ms resolution from the batch timestamp
        assert fast.send_us == ((US // 1000) * 1000,) * n
    _attrs, mine = decode_records_generic(data)
    assert [(r.offset, r.timestamp_ms, r.key, r.value) for r in mine] == [
        (r.offset, r.timestamp, r.key, r.value) for r in generic
    ]


def test_crc_is_valid_and_buffer_reuse_overwrites_everything():
    b = BatchBuilder(32, 50, PID)
    buf = b.new_buffer(prefix=10)
    b.fill(buf, 10, 0, US)
    b.fill(buf, 10, 1000, US + 5000)
    batch = bytes(buf[10:])
    header = BATCH_HEADER.unpack_from(batch)
    assert header[4] == crc32c(batch[21:])
    assert batch == reference_batch(32, 50, PID, 1000, US + 5000)
    # and the codec's CRC-verifying iterator accepts it
    assert len(list(codec_records.iter_batches(batch, verify_crc=True))) == 1


def test_layout_sizes_and_overhead():
    lay = batch_layout(32, 20)
    assert lay.size == 61 + 20 * (32 + record_overhead(32))
    assert lay.value_offsets[0] == 61 + record_overhead(32) - 1
    with pytest.raises(ValueError):
        batch_layout(7, 1)


def test_decode_skips_partial_tail_and_flags_bad_crc():
    a = BatchBuilder(32, 5, 1).build(0, US)
    b = bytearray(BatchBuilder(32, 5, 1).build(5, US))
    struct.pack_into(">q", b, 0, 5)  # baseOffset is outside the CRC
    blob = a + bytes(b) + a[:40]
    out = decode_batches(blob)
    assert [d.base_offset for d in out] == [0, 5]
    assert out[1].next_offset == 10
    b[100] ^= 0xFF
    (bad,) = decode_batches(bytes(b))
    assert not bad.crc_ok and bad.sequences == ()


def test_foreign_batches_take_the_generic_path():
    # keyed records, mixed sizes, a header: not our layout
    recs = [
        codec_records.Record(0, 1000, b"k", struct.pack(">IIQ", 3, 0, 1000)),
        codec_records.Record(0, 1000, None, struct.pack(">IIQ", 3, 1, 2000) + b"zz"),
        codec_records.Record(0, 1000, None, b"tiny"),
        codec_records.Record(0, 1000, None, struct.pack(">IIQ", 3, 2, 3000), [("h", b"v")]),
    ]
    data = build_batch(recs, base_offset=40)
    (d,) = decode_batches(data)
    assert not d.fast
    assert d.sequences == (1, 2) and d.producer_ids == (3, 3) and d.send_us == (2000, 3000)
    assert d.offsets == (41, 43)
    assert d.foreign == 2  # keyed + too short
    gz = build_batch([(None, struct.pack(">IIQ", 4, 9, 77))], compression=1)
    (dz,) = decode_batches(gz)
    assert (dz.producer_ids, dz.sequences, dz.send_us, dz.foreign) == ((4,), (9,), (77,), 0)
    garbage = bytearray(build_batch([(None, b"y" * 30)]))
    garbage[61] = 0x7F  # record length no longer matches; then fix the CRC
    struct.pack_into(">I", garbage, 17, crc32c(bytes(garbage[21:])))
    (dg,) = decode_batches(bytes(garbage))
    assert dg.crc_ok and dg.foreign == 1 and dg.sequences == ()


def test_same_sized_foreign_batch_with_different_framing_is_not_misread():
    # Same total size as our layout but a different record framing (value 1 byte larger in
    # one record, 1 byte smaller in another): the framing check must reject the fast path.
    vals = [b"\x00" * 8 + b"A" * 24, b"\x00" * 8 + b"B" * 25, b"\x00" * 8 + b"C" * 23]
    data = build_batch([(None, v) for v in vals])
    if len(data) == batch_layout(32, 3).size:
        (d,) = decode_batches(data)
        assert not d.fast
