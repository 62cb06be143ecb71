"""The quorum transport's frames (sans-IO): what a connection accepts and what closes it."""

from __future__ import annotations

import contextlib
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from brokers.raft_broker.transport import (
    HEADER,
    MAGIC,
    MAX_MESSAGE_BYTES,
    TAG_BYTES,
    FrameError,
    FrameReader,
    FrameWriter,
)

KEY = b"k" * 32
NONCE = b"n" * 16


@given(st.lists(st.binary(max_size=200), max_size=8), st.integers(1, 50),
       st.sampled_from([KEY, None]))
def test_messages_arrive_whole_however_the_bytes_are_split(messages: list[bytes], chunk: int,
                                                           key: bytes | None) -> None:
    writer, reader = FrameWriter(7, NONCE, key), FrameReader(NONCE, key)
    stream = b"".join(writer.frame(m) for m in messages)
    got = []
    for i in range(0, len(stream), chunk):
        got += reader.feed(stream[i:i + chunk])
    assert got == [(7, m) for m in messages]


def test_a_frame_under_another_key_or_nonce_is_refused() -> None:
    frame = FrameWriter(1, NONCE, KEY).frame(b"append")
    with pytest.raises(FrameError, match="tag"):
        FrameReader(NONCE, b"x" * 32).feed(frame)
    with pytest.raises(FrameError, match="tag"):  # recorded on another connection
        FrameReader(b"m" * 16, KEY).feed(frame)
    with pytest.raises(FrameError, match="without the cluster key"):
        FrameReader(NONCE, KEY).feed(FrameWriter(1, NONCE, None).frame(b"append"))
    with pytest.raises(FrameError, match="no cluster key"):
        FrameReader(NONCE, None).feed(frame)


def test_a_replayed_frame_or_another_sender_closes_the_connection() -> None:
    writer, reader = FrameWriter(1, NONCE, KEY), FrameReader(NONCE, KEY)
    first = writer.frame(b"a")
    assert reader.feed(first) == [(1, b"a")]
    with pytest.raises(FrameError, match="replayed"):
        reader.feed(first)
    reader = FrameReader(NONCE, KEY)
    reader.feed(FrameWriter(1, NONCE, KEY).frame(b"a"))
    other = FrameWriter(2, NONCE, KEY)
    other.frame(b"skip")  # its seq 2 passes the replay check; its sender does not
    with pytest.raises(FrameError, match="speaking on node 1"):
        reader.feed(other.frame(b"b"))


def test_garbage_and_oversized_lengths_close_before_any_allocation() -> None:
    with pytest.raises(FrameError, match="not a Raft frame"):
        FrameReader(NONCE, None).feed(b"GET / HTTP/1.1\r\n\r\n")
    huge = HEADER.pack(MAGIC, 1, 0, MAX_MESSAGE_BYTES + 1, 1, 1)
    with pytest.raises(FrameError, match="over"):
        FrameReader(NONCE, None).feed(huge)
    with pytest.raises(FrameError, match="over"):
        FrameWriter(1, NONCE, None).frame(b"x" * (MAX_MESSAGE_BYTES + 1))
    # A partial frame waits for the rest, holding only what arrived.
    reader = FrameReader(NONCE, KEY)
    frame = FrameWriter(1, NONCE, KEY).frame(b"abc")
    assert reader.feed(frame[:-TAG_BYTES]) == []
    assert reader.feed(frame[-TAG_BYTES:]) == [(1, b"abc")]
    assert struct.calcsize(">HBBIIQ") == HEADER.size


@given(st.binary(max_size=100))
def test_random_bytes_yield_frames_or_one_error(data: bytes) -> None:
    with contextlib.suppress(FrameError):
        FrameReader(NONCE, KEY).feed(data)
