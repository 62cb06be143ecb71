"""The kernel's netfilter queue protocol (nfnetlink_queue), as far as a delay line needs it.

Sans-IO: functions that build the messages the delay line sends and a parser for what the
kernel sends back; the socket is the daemon's business (daemon.py).

What a delay line needs of it:

* bind a queue number (``bind_messages``): copy mode META, so the kernel sends each queued
  packet's metadata (its id) and keeps the packet itself; a large queue; GSO packets queued
  whole; and FAIL_OPEN, so a packet the queue cannot hold passes undelayed instead of being
  dropped (a gap in the packet ids, which the line counts);
* read the packets queued (``parse``): ids increase by one per packet and queue;
* release them (``verdict_batch``): one message accepts every packet of the queue up to an id.
  All packets of a queue wait the same time, so they leave in arrival order and one message per
  wake-up releases all that are due, however many.

Layouts from the kernel's uapi headers (linux/netlink.h, linux/netfilter/nfnetlink.h,
linux/netfilter/nfnetlink_queue.h): host byte order in the netlink header and attribute
headers, network byte order inside nfnetlink attributes.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

NETLINK_NETFILTER = 12
SUBSYS_QUEUE = 3
MSG_PACKET = 0
MSG_CONFIG = 2
MSG_VERDICT_BATCH = 3
NLMSG_ERROR = 2
NLM_F_REQUEST = 0x1
NLM_F_ACK = 0x4
# Config attributes and values.
CFG_CMD = 1
CFG_PARAMS = 2
CFG_QUEUE_MAXLEN = 3
CFG_MASK = 4
CFG_FLAGS = 5
CMD_BIND = 1
COPY_META = 1
FLAG_FAIL_OPEN = 0x1
FLAG_GSO = 0x4
# Packet and verdict attributes.
ATTR_PACKET_HDR = 1
ATTR_VERDICT_HDR = 2
NF_ACCEPT = 1

_NLMSGHDR = struct.Struct("=IHHII")  # length, type, flags, sequence, port id
_NFGENMSG_SIZE = 4  # family, version, resource id (the queue number, big-endian)
_NLATTR = struct.Struct("=HH")  # length, type
# Attribute types carry two flag bits (nested, network byte order) above the type number.
_ATTR_TYPE_MASK = 0x3FFF


class NfqueueError(ValueError):
    """A message from the kernel that does not parse."""


@dataclass(frozen=True)
class Packet:
    # The queue (--queue-num) the packet waits in.
    queue: int
    # Its id: one more than the previous packet's in that queue.
    packet_id: int


@dataclass(frozen=True)
class Ack:
    # The sequence number of the request answered.
    sequence: int
    # 0 = done; otherwise the (positive) errno the kernel refused it with.
    errno: int


def _attr(kind: int, payload: bytes) -> bytes:
    size = _NLATTR.size + len(payload)
    return _NLATTR.pack(size, kind) + payload + b"\0" * (-size % 4)


def _message(kind: int, queue: int, attrs: list[bytes], flags: int, sequence: int) -> bytes:
    # nfgenmsg: family AF_UNSPEC, version 0, the queue number big-endian.
    body = bytes((0, 0)) + queue.to_bytes(2, "big") + b"".join(attrs)
    return _NLMSGHDR.pack(_NLMSGHDR.size + len(body), SUBSYS_QUEUE << 8 | kind, flags,
                          sequence, 0) + body


def _check_queue(queue: int) -> None:
    if not 0 <= queue <= 0xFFFF:
        raise ValueError(f"queue number {queue} is not in 0..65535")


def bind_messages(queue: int, maxlen: int, first_sequence: int) -> list[bytes]:
    """Bind ``queue`` and configure it (copy metadata only, ``maxlen`` packets, GSO whole,
    fail open); each message asks for an acknowledgement with sequence numbers from
    ``first_sequence``."""
    _check_queue(queue)
    flags = NLM_F_REQUEST | NLM_F_ACK
    bind = _attr(CFG_CMD, struct.pack("=BBH", CMD_BIND, 0, 0))
    config = [
        _attr(CFG_PARAMS, struct.pack(">IB", 0, COPY_META)),
        _attr(CFG_QUEUE_MAXLEN, struct.pack(">I", maxlen)),
        _attr(CFG_MASK, struct.pack(">I", FLAG_FAIL_OPEN | FLAG_GSO)),
        _attr(CFG_FLAGS, struct.pack(">I", FLAG_FAIL_OPEN | FLAG_GSO)),
    ]
    return [_message(MSG_CONFIG, queue, [bind], flags, first_sequence),
            _message(MSG_CONFIG, queue, config, flags, first_sequence + 1)]


def verdict_batch(queue: int, last_id: int) -> bytes:
    """Accept every packet waiting in ``queue`` whose id is at most ``last_id``."""
    _check_queue(queue)
    hdr = _attr(ATTR_VERDICT_HDR, struct.pack(">II", NF_ACCEPT, last_id & 0xFFFFFFFF))
    return _message(MSG_VERDICT_BATCH, queue, [hdr], NLM_F_REQUEST, 0)


def parse(data: bytes) -> Iterator[Packet | Ack]:
    """The messages of one datagram from the kernel: queued packets and acknowledgements
    (anything else, such as a message of another subsystem, is skipped)."""
    offset = 0
    while offset + _NLMSGHDR.size <= len(data):
        length, kind, _flags, sequence, _port = _NLMSGHDR.unpack_from(data, offset)
        if length < _NLMSGHDR.size or offset + length > len(data):
            raise NfqueueError(f"netlink message of length {length} at {offset} overruns "
                               f"the {len(data)}-byte datagram")
        body = offset + _NLMSGHDR.size
        end = offset + length
        if kind == NLMSG_ERROR:
            if end - body < 4:
                raise NfqueueError("truncated netlink error message")
            (code,) = struct.unpack_from("=i", data, body)
            yield Ack(sequence, -code)
        elif kind == SUBSYS_QUEUE << 8 | MSG_PACKET:
            yield _packet(data, body, end)
        offset += (length + 3) & ~3


def _packet(data: bytes, body: int, end: int) -> Packet:
    if end - body < _NFGENMSG_SIZE:
        raise NfqueueError("truncated nfqueue packet message")
    queue = int.from_bytes(data[body + 2:body + 4], "big")
    at = body + _NFGENMSG_SIZE
    while at + _NLATTR.size <= end:
        size, kind = _NLATTR.unpack_from(data, at)
        if size < _NLATTR.size or at + size > end:
            raise NfqueueError(f"attribute of length {size} overruns its message")
        if kind & _ATTR_TYPE_MASK == ATTR_PACKET_HDR:
            if size < _NLATTR.size + 4:
                raise NfqueueError("truncated packet header attribute")
            (packet_id,) = struct.unpack_from(">I", data, at + _NLATTR.size)
            return Packet(queue, packet_id)
        at += (size + 3) & ~3
    raise NfqueueError("nfqueue packet message without a packet header")
