"""ZkWire, the sans-IO half of the direct ZooKeeper session: bytes in, events out, no sockets.

Replies are built here from ZooKeeper's wire layout (int32 length, then xid, zxid, err, body),
so these tests pin the format independently of the code under test.
"""

from __future__ import annotations

import itertools
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kazoo.exceptions import BadVersionError, NoNodeError, ZookeeperError
from kazoo.protocol.serialization import Exists, GetData, SetData
from kazoo.protocol.states import ZnodeStat

from brokers.zk_broker.direct import Handshake, Pong, Reply, ZkWire, decode_reply

STAT = (1, 2, 3, 4, 5, 6, 7, 0, 9, 0, 11)


def frame(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


def handshake(session_id: int = 0x1234, timeout_ms: int = 6000) -> bytes:
    # protocolVersion, timeOut, sessionId, passwd (buffer), readOnly
    return frame(struct.pack(">iiq", 0, timeout_ms, session_id) + struct.pack(">i", 16)
                 + b"p" * 16 + b"\0")


def reply(xid: int, err: int, body: bytes = b"", zxid: int = 77) -> bytes:
    return frame(struct.pack(">iqi", xid, zxid, err) + body)


def get_data_body(data: bytes) -> bytes:
    return struct.pack(">i", len(data)) + data + struct.pack(">qqqqiiiqiiq", *STAT)


def connected_wire() -> ZkWire:
    wire = ZkWire()
    assert wire.receive(handshake()) == [Handshake(0x1234, 6000)]
    return wire


def test_connect_request_asks_for_a_new_session_with_the_timeout() -> None:
    data = ZkWire().connect(4000)
    (size,) = struct.unpack_from(">i", data)
    assert size == len(data) - 4
    proto, last_zxid, timeout, session = struct.unpack_from(">iqiq", data, 4)
    assert (proto, last_zxid, timeout, session) == (0, 0, 4000, 0)


def test_requests_get_increasing_xids_and_their_op_code() -> None:
    wire = connected_wire()
    xid1, f1 = wire.request(GetData("/a", None))
    xid2, f2 = wire.request(SetData("/a", b"x", -1))
    assert xid2 == xid1 + 1 and xid1 > 0
    assert struct.unpack_from(">iii", f1) == (len(f1) - 4, xid1, 4)
    assert struct.unpack_from(">iii", f2) == (len(f2) - 4, xid2, 5)
    # The path follows as a jute string.
    assert f1[12:12 + 4 + 2] == struct.pack(">i", 2) + b"/a"


def test_a_reply_is_matched_by_xid_and_decoded_as_kazoo_would() -> None:
    wire = connected_wire()
    req = GetData("/a", None)
    xid, _ = wire.request(req)
    (event,) = wire.receive(reply(xid, 0, get_data_body(b"hello")))
    assert isinstance(event, Reply) and event.xid == xid and event.zxid == 77
    data, stat = decode_reply(req, event)
    assert data == b"hello" and stat == ZnodeStat(*STAT)


def test_error_codes_raise_kazoos_exceptions() -> None:
    wire = connected_wire()
    (no_node,) = wire.receive(reply(1, -101))
    with pytest.raises(NoNodeError):
        decode_reply(GetData("/a", None), no_node)
    (bad_version,) = wire.receive(reply(2, -103))
    with pytest.raises(BadVersionError):
        decode_reply(SetData("/a", b"", 3), bad_version)
    # exists() answers None for a missing node instead of raising, like kazoo.
    assert decode_reply(Exists("/a", None), no_node) is None
    # A code newer than kazoo's table is still a ZooKeeper error, named by its number.
    (unknown,) = wire.receive(reply(3, -999))
    with pytest.raises(ZookeeperError, match="-999"):
        decode_reply(GetData("/a", None), unknown)


def test_pings_pongs_and_stray_notifications() -> None:
    wire = connected_wire()
    assert struct.unpack(">iii", ZkWire.ping()) == (8, -2, 11)
    events = wire.receive(reply(-2, 0) + reply(-1, 0, b"\0" * 12) + reply(5, 0))
    # The watch notification (xid -1) is dropped: this session never sets watches.
    assert events == [Pong(), Reply(5, 77, 0, b"")]


def test_close_is_op_minus_eleven() -> None:
    wire = connected_wire()
    data = wire.close()
    assert struct.unpack_from(">ii", data, 4)[1] == -11


@given(
    st.lists(st.binary(max_size=40), min_size=1, max_size=6),
    st.lists(st.integers(min_value=0, max_value=400), max_size=8),
)
def test_any_chunking_of_the_stream_gives_the_same_events(
    payloads: list[bytes], cuts: list[int]
) -> None:
    stream = handshake() + b"".join(
        reply(i + 1, 0, get_data_body(p)) for i, p in enumerate(payloads)
    )
    whole = ZkWire().receive(stream)
    bounds = sorted({0, len(stream), *(c % (len(stream) + 1) for c in cuts)})
    wire = ZkWire()
    pieces = []
    for a, b in itertools.pairwise(bounds):
        pieces += wire.receive(stream[a:b])
    assert pieces == whole
    assert [decode_reply(GetData("/x", None), e)[0] for e in whole[1:]] == payloads
