"""The Raft codec: every message survives encode/decode, and any other bytes (random, cut
short, damaged) decode to some message or are refused with RaftDecodeError alone, without
allocating more than the input implies."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brokers.raft_broker.raft import messages as m
from tests.unit.brokers.raft_broker.raft.strategies import messages

ALL = messages()


def _decodes_or_refuses(data: bytes) -> None:
    try:
        got = m.decode(data)
    except m.RaftDecodeError:
        return
    # Whatever decodes is a message that encodes back to the same frame (the codec is
    # canonical: one frame per message).
    assert m.encode(got) == data


@given(ALL)
def test_a_message_survives_its_codec(msg: m.Message) -> None:
    assert m.decode(m.encode(msg)) == msg


def test_every_kind_has_its_own_kind_byte() -> None:
    samples: list[m.Message] = [
        m.RequestVote(1, 2, 3, 4, 5, True),
        m.VoteResponse(1, 2, 3, True, False),
        m.Append(1, 2, 3, 4, 5, (m.Entry(5, 5, b"x"),), 6, 7),
        m.AppendResponse(1, 2, 3, False, 4, 5, 6),
        m.InstallSnapshot(1, 2, 3, 4, 5, b"snap", 6),
        m.SnapshotResponse(1, 2, 3, 4, 5),
    ]
    assert len({m.encode(s)[0] for s in samples}) == len(samples)
    for s in samples:
        assert m.decode(m.encode(s)) == s


@settings(max_examples=300)
@given(st.binary(max_size=120))
def test_random_bytes_decode_or_are_refused(data: bytes) -> None:
    _decodes_or_refuses(data)


@settings(max_examples=300)
@given(ALL, st.data())
def test_a_damaged_frame_decodes_or_is_refused(msg: m.Message, data: st.DataObject) -> None:
    raw = m.encode(msg)
    cut = data.draw(st.integers(0, len(raw)))
    at = data.draw(st.integers(0, len(raw) - 1))
    flip = data.draw(st.integers(1, 255))
    damaged = bytearray(raw)
    damaged[at] ^= flip
    extra = data.draw(st.binary(min_size=1, max_size=8))
    for variant in (raw[:cut], bytes(damaged), raw + extra):
        _decodes_or_refuses(variant)


def test_a_frame_claiming_more_entries_than_it_holds_is_refused_before_allocating() -> None:
    head = struct.pack(">BIIQ", 3, 1, 2, 7) + struct.pack(">QQQQI", 0, 0, 0, 0, 0xFFFF_FFFF)
    with pytest.raises(m.RaftDecodeError, match="cannot fit"):
        m.decode(head + bytes(24))


def test_an_entry_or_a_snapshot_longer_than_the_frame_is_refused() -> None:
    entry = struct.pack(">QI", 1, 0xFFFF_FFFF)
    head = struct.pack(">BIIQ", 3, 1, 2, 7) + struct.pack(">QQQQI", 0, 0, 0, 0, 1)
    with pytest.raises(m.RaftDecodeError, match="past the frame"):
        m.decode(head + entry + b"abc")
    snap = struct.pack(">BIIQ", 5, 1, 2, 7) + struct.pack(">QQQI", 9, 2, 0, 1000)
    with pytest.raises(m.RaftDecodeError, match="snapshot"):
        m.decode(snap + b"short")


@pytest.mark.parametrize("data, reason", [
    (b"", "truncated"),
    (bytes([9]) + bytes(16), "unknown message kind"),
    (m.encode(m.VoteResponse(1, 2, 3, True)) + b"\0", "trailing"),
    (m.encode(m.VoteResponse(1, 2, 3, True))[:-1] + b"\2", "boolean"),
    (struct.pack(">BIIQ", 3, 1, 2, 7) + struct.pack(">QQQQI", m.MAX_U64, 0, 0, 0, 1)
     + struct.pack(">QI", 1, 0), "overflow"),
])
def test_malformed_frames_are_refused_with_the_reason(data: bytes, reason: str) -> None:
    with pytest.raises(m.RaftDecodeError, match=reason):
        m.decode(data)


def test_the_decode_error_is_a_value_error() -> None:
    assert issubclass(m.RaftDecodeError, ValueError)


def test_encode_refuses_entries_whose_indexes_do_not_follow_prev_index() -> None:
    bad = m.Append(1, 2, 3, 10, 2, (m.Entry(3, 12, b""),), 0)
    with pytest.raises(ValueError, match="index 12 where 11 follows"):
        m.encode(bad)


def test_decode_takes_any_bytes_like_input() -> None:
    raw = m.encode(m.SnapshotResponse(1, 2, 3, 4, 5))
    assert m.decode(bytearray(raw)) == m.decode(memoryview(raw)) == m.decode(raw)


def test_entries_whose_data_leaves_no_room_for_the_next_entry_are_refused() -> None:
    # Found by the damaged-frame property: the count fits the frame's fixed parts, but the
    # first entry's data takes the room the second entry's header needed.
    frame = bytearray(m.encode(m.Append(0, 0, 0, 0, 0, (m.Entry(0, 1, b"abcdefghijkl"),
                                                        m.Entry(0, 2, b"")), 0)))
    count_at = 17 + 32
    frame[count_at:count_at + 4] = (3).to_bytes(4, "big")
    with pytest.raises(m.RaftDecodeError, match="truncated"):
        m.decode(bytes(frame))
