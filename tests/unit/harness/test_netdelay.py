"""The delay line's sans-IO parts: the netfilter-queue codec (harness/netdelay/nfqueue.py)
against messages laid out as the kernel lays them out, and the DelayLine state machine."""

from __future__ import annotations

import contextlib
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.netdelay import nfqueue
from harness.netdelay.control import GATEWAY, PEERS, check_rtt, one_way_delays_ms, rules
from harness.netdelay.line import DelayLine
from twinbench_common.errors import UserError


def _attr(kind: int, payload: bytes) -> bytes:
    size = 4 + len(payload)
    return struct.pack("=HH", size, kind) + payload + b"\0" * (-size % 4)


def kernel_packet(queue: int, packet_id: int, extra: list[bytes] | None = None,
                  first: bool = True) -> bytes:
    """A packet notice as nfnetlink_queue sends it: nlmsghdr, nfgenmsg, then attributes (the
    packet header first, as the kernel puts it, unless ``first`` is False)."""
    hdr = _attr(nfqueue.ATTR_PACKET_HDR, struct.pack(">IHB", packet_id, 0x0800, 0))
    attrs = [hdr, *(extra or [])] if first else [*(extra or []), hdr]
    body = bytes((2, 0)) + queue.to_bytes(2, "big") + b"".join(attrs)
    return struct.pack("=IHHII", 16 + len(body), 3 << 8 | nfqueue.MSG_PACKET, 0, 0, 0) + body


def kernel_ack(sequence: int, errno: int) -> bytes:
    body = struct.pack("=i", -errno) + struct.pack("=IHHII", 16, 0, 0, sequence, 0)
    return struct.pack("=IHHII", 16 + len(body), nfqueue.NLMSG_ERROR, 0, sequence, 0) + body


@given(st.lists(st.tuples(st.integers(0, 0xFFFF), st.integers(0, 0xFFFFFFFF)), min_size=1,
                max_size=20),
       st.lists(st.binary(max_size=13), max_size=3), st.booleans())
def test_packets_of_a_datagram_parse_in_order(packets, extras, first) -> None:
    extra = [_attr(9, e) for e in extras]  # NFQA_IFINDEX_INDEV and the like: skipped
    data = b"".join(kernel_packet(q, i, extra, first) for q, i in packets)
    got = list(nfqueue.parse(data))
    assert got == [nfqueue.Packet(q, i) for q, i in packets]


def test_acknowledgements_carry_their_sequence_and_errno() -> None:
    got = list(nfqueue.parse(kernel_ack(7, 0) + kernel_ack(8, 1)))
    assert got == [nfqueue.Ack(7, 0), nfqueue.Ack(8, 1)]


@given(st.binary(max_size=200))
def test_garbage_is_an_nfqueue_error_or_nothing(data: bytes) -> None:
    with contextlib.suppress(nfqueue.NfqueueError):
        list(nfqueue.parse(data))


@given(st.integers(0, 0xFFFF), st.integers(0, 0xFFFFFFFF), st.integers(1, 80))
def test_a_truncated_notice_never_passes_for_a_packet(queue, packet_id, cut) -> None:
    data = kernel_packet(queue, packet_id)
    with pytest.raises(nfqueue.NfqueueError):
        list(nfqueue.parse(data[:-cut] if cut < len(data) - 16 else
                           struct.pack("=IHHII", len(data), 3 << 8, 0, 0, 0)))


def test_verdict_batch_accepts_everything_up_to_an_id() -> None:
    msg = nfqueue.verdict_batch(513, 0xFFFFFFFF)
    length, kind, flags, _seq, _port = struct.unpack_from("=IHHII", msg)
    assert length == len(msg) and kind == 3 << 8 | nfqueue.MSG_VERDICT_BATCH
    assert flags == nfqueue.NLM_F_REQUEST
    assert msg[18:20] == (513).to_bytes(2, "big")
    size, attr = struct.unpack_from("=HH", msg, 20)
    assert (size, attr) == (12, nfqueue.ATTR_VERDICT_HDR)
    assert struct.unpack_from(">II", msg, 24) == (nfqueue.NF_ACCEPT, 0xFFFFFFFF)


def test_bind_asks_for_metadata_only_fail_open_and_acknowledgements() -> None:
    bind, config = nfqueue.bind_messages(5, 1000, first_sequence=3)
    for msg, seq in ((bind, 3), (config, 4)):
        _len, _kind, flags, sequence, _port = struct.unpack_from("=IHHII", msg)
        assert flags == nfqueue.NLM_F_REQUEST | nfqueue.NLM_F_ACK and sequence == seq
    assert struct.unpack_from("=HHBBH", bind, 20) == (8, nfqueue.CFG_CMD, nfqueue.CMD_BIND, 0, 0)
    assert struct.unpack_from(">IB", config, 24) == (0, nfqueue.COPY_META)
    with pytest.raises(ValueError, match="65535"):
        nfqueue.bind_messages(70000, 10, 1)


def test_line_releases_in_order_when_due_and_keeps_stats() -> None:
    line = DelayLine({0: 0.5, 1: 1.0})
    line.hold(0, 10, now=0.0)
    line.hold(1, 3, now=0.1)
    line.hold(0, 11, now=0.2)
    assert line.next_due() == 0.5
    assert line.release(0.49) == []
    assert line.release(0.6) == [(0, 10)]
    assert line.release(1.2) == [(0, 11), (1, 3)]
    assert line.waiting() == 0 and line.next_due() is None
    s = line.stats()[0]
    assert s.packets == 2 and s.held_s == pytest.approx(0.6 + 1.0)
    assert s.late_s == pytest.approx(0.1 + 0.5) and s.max_late_s == pytest.approx(0.5)


def test_a_shorter_delay_never_overtakes_packets_already_waiting() -> None:
    line = DelayLine({0: 1.0})
    line.hold(0, 1, now=0.0)
    line.set_delays({0: 0.0})
    line.hold(0, 2, now=0.1)
    assert line.next_due() == 1.0
    assert line.release(0.5) == []
    assert line.release(1.0) == [(0, 2)]


def test_gaps_in_packet_ids_count_as_bypassed_and_close_releases_all() -> None:
    line = DelayLine({0: 5.0})
    for i in (1, 2, 5, 6):
        line.hold(0, i, now=0.0)
    line.hold(0, 0xFFFFFFFF, now=0.0)  # far back in sequence space: not a gap of 4 billion
    assert line.stats()[0].bypassed == 2
    assert line.release(0.0, everything=True) == [(0, 0xFFFFFFFF)]


def test_negative_delay_is_refused() -> None:
    with pytest.raises(ValueError, match=">= 0"):
        DelayLine({0: -0.1})


def test_rtt_splits_into_one_way_waits_and_rules_per_source() -> None:
    assert one_way_delays_ms(4.0) == {PEERS: 2.0, GATEWAY: 4.0}
    gateway, peers = rules("198.18.3.1")
    assert gateway[gateway.index("-s") + 1] == "198.18.3.1" and gateway[-1] == str(GATEWAY)
    assert "-s" not in peers and peers[-1] == str(PEERS)
    assert all("--queue-bypass" in r and "PREROUTING" in r for r in (gateway, peers))
    assert check_rtt(0) == 0.0
    for bad in (-1, 1000.5):
        with pytest.raises(UserError, match="between 0 and 1000"):
            check_rtt(bad)
