"""The control channel's codec: every message survives it, and any bytes are one
ControlDecodeError at worst (a peer's bug never stops a broker)."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from brokers.raft_broker import control

answers = st.builds(
    control.Answer, st.sampled_from([control.OK, control.NOT_LEADER, control.LOST, control.BAD]),
    st.none() | st.integers(0, 2**31), st.integers(0, 2**62), st.booleans(), st.text(),
    st.none() | st.integers(0, 2**62), st.none() | st.integers(0, 2**62))


@given(st.sampled_from(sorted(control.KINDS)), st.integers(0, 2**64 - 1), st.binary())
def test_a_message_comes_back_as_sent(kind: int, rid: int, body: bytes) -> None:
    assert control.decode(control.encode(kind, rid, body)) == (kind, rid, body)


@given(answers)
def test_an_answer_comes_back_as_sent(answer: control.Answer) -> None:
    assert control.read_answer(control.answer_body(answer)) == answer


@given(st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1))
def test_a_heartbeat_comes_back_as_sent(epoch: int, applied: int) -> None:
    assert control.read_heartbeat(control.heartbeat_body(epoch, applied)) == (epoch, applied)


@given(st.binary())
def test_any_bytes_decode_or_fail_in_one_error(data: bytes) -> None:
    for read in (control.decode, control.read_answer, control.read_heartbeat):
        with contextlib.suppress(control.ControlDecodeError):
            read(data)


@pytest.mark.parametrize("body, why", [
    (b'["ok", null, -1, true, "", null, null]', "index"),
    (b'["maybe", null, 0, true, "", null, null]', "status"),
    (b'["ok", null, 0]', "shape"),
    (b'["ok", "x", 0, true, "", null, null]', "integer"),
    (b"{", "JSON"),
])
def test_malformed_answers_say_what_is_wrong(body: bytes, why: str) -> None:
    with pytest.raises(control.ControlDecodeError, match=why):
        control.read_answer(body)


def test_an_unknown_kind_or_a_short_message_is_refused() -> None:
    with pytest.raises(control.ControlDecodeError, match="kind 9"):
        control.decode(bytes([9]) + bytes(8))
    with pytest.raises(control.ControlDecodeError, match="3 bytes"):
        control.decode(b"abc")
