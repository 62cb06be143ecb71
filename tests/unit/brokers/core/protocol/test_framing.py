"""Framing, header and primitive tests for brokers.core.protocol (sans-IO, no sockets)."""

from __future__ import annotations

import struct
import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brokers.core.errors import FrameTooLarge, ProtocolViolation
from brokers.core.protocol.framing import FrameDecoder, frame
from brokers.core.protocol.header import (
    RequestHeader,
    decode_response_header,
    encode_response_header,
    peek_header,
)
from brokers.core.protocol.primitives import Reader, Writer, join, zigzag_varint


def framed(*bodies: bytes) -> bytes:
    return b"".join(join(frame([b])) for b in bodies)


def test_whole_frames_in_one_feed_are_zero_copy_views() -> None:
    data = framed(b"abc", b"", b"defgh")
    frames = FrameDecoder(100).feed(data)
    assert [bytes(f) for f in frames] == [b"abc", b"", b"defgh"]
    assert all(f.obj is data for f in frames)  # views into the fed bytes, nothing copied


def test_frame_split_at_every_byte() -> None:
    data = framed(b"hello", b"world!")
    for cut in range(len(data) + 1):
        d = FrameDecoder(100)
        got = d.feed(data[:cut]) + d.feed(data[cut:])
        assert [bytes(f) for f in got] == [b"hello", b"world!"]
        assert d.buffered == 0


def test_byte_at_a_time() -> None:
    data = framed(b"x" * 50, b"y")
    d = FrameDecoder(100)
    got = []
    for i in range(len(data)):
        got += d.feed(data[i : i + 1])
    assert [bytes(f) for f in got] == [b"x" * 50, b"y"]


def test_truncated_frame_stays_buffered() -> None:
    d = FrameDecoder(100)
    assert d.feed(framed(b"abcdef")[:-2]) == []
    assert d.buffered == 8
    assert d.feed(b"") == []


def test_negative_length_is_a_protocol_violation() -> None:
    with pytest.raises(ProtocolViolation):
        FrameDecoder(100).feed(struct.pack(">i", -1) + b"abc")
    d = FrameDecoder(100)
    d.feed(b"\xff\xff")
    with pytest.raises(ProtocolViolation):
        d.feed(b"\xff\xfe")


def test_too_large_prefix_rejected_before_allocating() -> None:
    prefix = struct.pack(">i", 2**31 - 1)
    tracemalloc.start()
    try:
        d = FrameDecoder(1 << 20)
        with pytest.raises(FrameTooLarge) as info:
            d.feed(prefix)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert info.value.size == 2**31 - 1
    assert peak < 1 << 20
    # Also when the prefix arrives in pieces, and when body bytes follow it.
    d = FrameDecoder(1 << 20)
    assert d.feed(prefix[:3]) == []
    with pytest.raises(FrameTooLarge):
        d.feed(prefix[3:] + b"x" * 100)
    with pytest.raises(FrameTooLarge):
        FrameDecoder(10).feed(framed(b"x" * 11))
    assert [bytes(f) for f in FrameDecoder(11).feed(framed(b"x" * 11))] == [b"x" * 11]


def assert_chunking_invisible(data: bytes, cuts: list[int], max_frame: int) -> None:
    """Feeding ``data`` cut at ``cuts`` must give what feeding it whole gives."""

    def run(chunks: list[bytes]) -> tuple[list[bytes], str | None]:
        d = FrameDecoder(max_frame)
        out: list[bytes] = []
        try:
            for c in chunks:
                out += [bytes(f) for f in d.feed(c)]
        except ProtocolViolation as exc:
            # On error the connection is closed; frames decoded earlier in the failing feed
            # are discarded, so only the error itself is compared.
            return [], type(exc).__name__
        return out, None

    points = sorted({min(c, len(data)) for c in cuts})
    chunks = [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]
    assert run(chunks) == run([data])


@settings(max_examples=200, deadline=None)
@given(bodies=st.lists(st.binary(max_size=40), max_size=6),
       tail=st.binary(max_size=10), cuts=st.lists(st.integers(0, 400), max_size=10))
def test_chunking_never_changes_the_frames(bodies: list[bytes], tail: bytes,
                                           cuts: list[int]) -> None:
    data = framed(*bodies) + tail
    assert_chunking_invisible(data, cuts, 64)


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=300), cuts=st.lists(st.integers(0, 300), max_size=8))
def test_arbitrary_bytes_any_chunking(data: bytes, cuts: list[int]) -> None:
    assert_chunking_invisible(data, cuts, 50)


def test_frame_prepends_length_without_joining() -> None:
    big = memoryview(b"z" * 1000)
    parts = frame([b"ab", big])
    assert parts[0] == struct.pack(">i", 1002)
    assert parts[2] is big


def test_request_header_v1_round_trip_and_bytes() -> None:
    h = RequestHeader(3, 5, 42, "cli")
    raw = h.encode()
    assert raw == b"\x00\x03\x00\x05\x00\x00\x00\x2a\x00\x03cli"
    assert RequestHeader.decode(raw + b"BODY") == (h, len(raw))
    null = RequestHeader(3, 5, 42, None)
    assert RequestHeader.decode(null.encode()) == (null, 10)
    assert peek_header(raw) == (3, 5, 42)


def test_request_header_v2_for_api_versions_v3_skips_tagged_fields() -> None:
    # ApiVersions v3 as librdkafka sends it: header v2 = v1 + tagged fields (here one tag).
    raw = b"\x00\x12\x00\x03\x00\x00\x00\x07\x00\x02rk" + b"\x01\x00\x02ab" + b"BODY"
    h, off = RequestHeader.decode(raw)
    assert (h.api_key, h.api_version, h.correlation_id, h.client_id) == (18, 3, 7, "rk")
    assert raw[off:] == b"BODY"


@pytest.mark.parametrize("raw", [b"", b"\x00\x12\x00", b"\x00\x03\x00\x01\x00\x00\x00\x01\x00",
                                 b"\x00\x03\x00\x01\x00\x00\x00\x01\x00\x05ab",
                                 b"\x00\x12\x00\x03\x00\x00\x00\x07\xff\xff\x05"])
def test_truncated_headers(raw: bytes) -> None:
    with pytest.raises(ProtocolViolation):
        RequestHeader.decode(raw)


def test_request_header_v2_for_every_flexible_version() -> None:
    h = RequestHeader(0, 9, 5, "cli")  # Produce v9 is flexible
    raw = h.encode()
    assert raw == b"\x00\x00\x00\x09\x00\x00\x00\x05\x00\x03cli\x00"
    assert RequestHeader.decode(raw + b"BODY") == (h, len(raw))
    assert RequestHeader(0, 8, 5, "cli").encode() == raw[:3] + b"\x08" + raw[4:-1]  # v1


def test_response_header_v1() -> None:
    assert encode_response_header(9, True) == b"\x00\x00\x00\x09\x00"
    assert decode_response_header(b"\x00\x00\x00\x09\x01\x00\x01zrest", True) == (9, 8)


def test_response_header_v0() -> None:
    assert encode_response_header(9) == b"\x00\x00\x00\x09"
    assert decode_response_header(b"\x00\x00\x00\x09rest") == (9, 4)
    with pytest.raises(ProtocolViolation):
        decode_response_header(b"\x00")


@pytest.mark.parametrize(("value", "encoded"), [
    (0, b"\x00"), (-1, b"\x01"), (1, b"\x02"), (-64, b"\x7f"), (64, b"\x80\x01"),
    (300, b"\xd8\x04"), (2**31 - 1, b"\xfe\xff\xff\xff\x0f"), (-(2**31), b"\xff\xff\xff\xff\x0f"),
])
def test_zigzag_varint_vectors(value: int, encoded: bytes) -> None:
    assert zigzag_varint(value) == encoded
    w = Writer()
    w.varint(value)
    assert bytes(w.cur) == encoded
    assert Reader(encoded).varint() == value


@given(st.integers(-(2**63), 2**63 - 1))
def test_varlong_round_trip(v: int) -> None:
    w = Writer()
    w.varlong(v)
    assert Reader(bytes(w.cur)).varlong() == v
    assert zigzag_varint(v, 64) == bytes(w.cur)


def test_reader_rejects_lengths_beyond_the_buffer() -> None:
    with pytest.raises(ProtocolViolation):
        Reader(b"\x7f\xff\xff\xff").array(lambda: 0)
    with pytest.raises(ProtocolViolation):
        Reader(b"\x00\x05ab").string()
    with pytest.raises(ProtocolViolation):
        Reader(b"\x00\x00\x00\x05ab").nullable_bytes()
    with pytest.raises(ProtocolViolation):
        Reader(b"\xff\xff").string()
    with pytest.raises(ProtocolViolation):
        Reader(b"\x80\x80\x80\x80\x80\x80").varint()
    with pytest.raises(ProtocolViolation):
        Reader(b"\x00\x02\xff\xfe").string()  # not UTF-8
    assert Reader(b"\xff\xff\xff\xff").nullable_array(lambda: 0) is None


def test_writer_passes_large_buffers_by_reference() -> None:
    big = b"r" * 4096
    w = Writer()
    w.int32(1)
    w.nullable_bytes(big)
    w.int16(2)
    parts = w.finish()
    assert any(p is big for p in parts)
    assert join(parts) == b"\x00\x00\x00\x01\x00\x00\x10\x00" + big + b"\x00\x02"
