"""The quorum's transport: Raft messages between nodes over TCP, authenticated by the cluster key.

Raft asks little of its network: messages may be lost, delayed, duplicated or reordered, and
the algorithm stays safe; what it must not get is a forged message. So a node sends each peer
its messages over one outbound connection of its own (and receives over the connections its
peers open), drops what it cannot send now rather than queueing without bound, and never
blocks the caller: ``send`` returns at once, and a message that does not fit the peer's queue
(``QUEUE_FRAMES``), or finds the peer unreachable, is lost, as a datagram would be. Raft's own
retries (heartbeats, Append retries) carry what matters.

Framing and authentication are sans-IO (``FrameWriter``, ``FrameReader``), the sockets at the
edge (``Transport``):

* the accepting side speaks first: a 16-byte random nonce for this connection and the 8-byte
  mark of its cluster id (``cluster_mark``); the connecting side answers with its own mark.
  Either side closes a connection whose marks differ, logs why once per streak and counts it:
  a node given another cluster's id (KRaft's INCONSISTENT_CLUSTER_ID) never joins the quorum,
  whatever key it holds. The coordinator names the last refusal when it cannot register;
* every frame is ``magic u16 | version u8 | flags u8 | length u32 | src u32 | seq u64`` then
  ``length`` bytes of message, then, when the cluster has a key, a 16-byte tag:
  HMAC-SHA256(key, nonce + header + message) truncated to 128 bits, as the DSBS gossip's tag
  (brokers/dsbs_broker/packets/auth.py says why 128 bits suffice);
* ``seq`` counts up from 1 on each connection and must only grow: a frame replayed from this
  connection is refused, and one from another connection fails its tag (another nonce);
* ``src`` is the sender's node id, bound to the connection by its first frame: a node cannot
  speak for another.

Anything else (a wrong magic, an oversized length, a bad tag, a seq that does not grow, a
``src`` that changes) closes that connection and is counted; the node goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import logging
import os
import socket
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass

MAGIC = 0x5241  # "RA"
VERSION = 1
FLAG_TAG = 0x01
HEADER = struct.Struct(">HBBIIQ")
_PREFIX = struct.Struct(">HB")
NONCE_BYTES = 16
MARK_BYTES = 8
TAG_BYTES = 16
# The largest message a frame may carry: an Append of max_append_entries metadata records or an
# InstallSnapshot chunk fits well inside; a length above it is an error, not an allocation.
MAX_MESSAGE_BYTES = 8 * 1024 * 1024
# Frames waiting for one peer's connection; beyond it a message is dropped (Raft retries).
QUEUE_FRAMES = 1024
# A peer that cannot be reached is tried again after this long, doubling up to the maximum.
RECONNECT_S = 0.05
RECONNECT_MAX_S = 1.0
# A connection attempt (and the peer's nonce) given up after this long: a SYN dropped by a
# partition would otherwise wait the kernel's retries out (minutes).
CONNECT_TIMEOUT_S = 1.0
# An outbound connection whose sent bytes stay unacknowledged this long is dropped by the
# kernel (TCP_USER_TIMEOUT), and a new one is made. Without it a one-sided cut leaves the
# connection retransmitting with an exponential backoff: after the heal the peer would hear
# nothing from this node for up to minutes while the other direction works.
USER_TIMEOUT_MS = 2000
# A connection that cannot take more bytes for this long (the peer stopped reading) is given
# up and made again.
STALL_TIMEOUT_S = 2.0


class FrameError(ValueError):
    """A frame that must close its connection."""


def cluster_mark(cluster_id: str) -> bytes:
    """What a connection's ends exchange to tell one cluster from another: a digest of the id,
    so the handshake has a fixed length whatever the id."""
    return hashlib.sha256(cluster_id.encode("utf-8")).digest()[:MARK_BYTES]


class FrameWriter:
    """Frames one connection's outgoing messages (sans-IO)."""

    def __init__(self, src: int, nonce: bytes, key: bytes | None) -> None:
        self._src = src
        self._nonce = nonce
        self._key = key
        self._seq = 0

    def frame(self, message: bytes) -> bytes:
        if len(message) > MAX_MESSAGE_BYTES:
            raise FrameError(f"a message of {len(message)} bytes is over {MAX_MESSAGE_BYTES}")
        self._seq += 1
        flags = FLAG_TAG if self._key is not None else 0
        head = HEADER.pack(MAGIC, VERSION, flags, len(message), self._src, self._seq)
        if self._key is None:
            return head + message
        tag = hmac.digest(self._key, self._nonce + head + message, "sha256")[:TAG_BYTES]
        return head + message + tag


class FrameReader:
    """Checks one connection's incoming frames (sans-IO): ``feed`` bytes as they come, get
    ``(src, message)`` pairs; FrameError for anything that must close the connection."""

    def __init__(self, nonce: bytes, key: bytes | None) -> None:
        self._nonce = nonce
        self._key = key
        self._buf = bytearray()
        self._seq = 0
        self.src: int | None = None

    def feed(self, data: bytes) -> list[tuple[int, bytes]]:
        self._buf += data
        out = []
        while len(self._buf) >= _PREFIX.size:
            # Checked as soon as it arrives, so that a stranger's bytes (an HTTP probe, a
            # Kafka client at the wrong port) close the connection at once.
            magic, version = _PREFIX.unpack_from(self._buf)
            if magic != MAGIC or version != VERSION:
                raise FrameError(f"not a Raft frame (magic {magic:#x}, version {version})")
            if len(self._buf) < HEADER.size:
                break
            _, _, flags, length, src, seq = HEADER.unpack_from(self._buf)
            if length > MAX_MESSAGE_BYTES:
                raise FrameError(f"a frame of {length} bytes is over {MAX_MESSAGE_BYTES}")
            tagged = self._key is not None
            if bool(flags & FLAG_TAG) != tagged:
                raise FrameError("a frame without the cluster key's tag" if tagged
                                 else "a tagged frame, but this node has no cluster key")
            end = HEADER.size + length + (TAG_BYTES if tagged else 0)
            if len(self._buf) < end:
                break
            frame = bytes(self._buf[:end])
            del self._buf[:end]
            message = frame[HEADER.size:HEADER.size + length]
            if self._key is not None:
                expected = hmac.digest(self._key, self._nonce + frame[:-TAG_BYTES],
                                       "sha256")[:TAG_BYTES]
                if not hmac.compare_digest(expected, frame[-TAG_BYTES:]):
                    raise FrameError("a frame whose tag the cluster key does not make")
            if seq <= self._seq:
                raise FrameError(f"frame {seq} after frame {self._seq}: replayed or reordered")
            if self.src is not None and src != self.src:
                raise FrameError(f"node {src} speaking on node {self.src}'s connection")
            self._seq = seq
            self.src = src
            out.append((src, message))
        return out


@dataclass
class TransportCounters:
    frames_sent: int = 0
    bytes_sent: int = 0
    frames_received: int = 0
    bytes_received: int = 0
    # Messages lost on the way out: the peer's queue was full or its connection down.
    dropped: int = 0
    # Inbound connections closed for a bad frame (wrong key, replay, garbage).
    refused: int = 0


def _bound_unacknowledged(writer: asyncio.StreamWriter) -> None:
    """Set TCP_USER_TIMEOUT on the connection where the platform has it (Linux)."""
    sock = writer.get_extra_info("socket")
    option = getattr(socket, "TCP_USER_TIMEOUT", None)
    if sock is not None and option is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, option, USER_TIMEOUT_MS)


log = logging.getLogger("twinbench.raft.transport")


class _Peer:
    """The outbound connection to one peer and its queue."""

    def __init__(self, transport: Transport, node_id: int, addr: tuple[str, int]) -> None:
        self.t = transport
        self.node_id = node_id
        self.addr = addr
        self.queue: asyncio.Queue[bytes] = asyncio.Queue(QUEUE_FRAMES)
        self.task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self.task = asyncio.get_running_loop().create_task(
            self._run(), name=f"raft-peer-{self.t.node_id}->{self.node_id}")

    async def _run(self) -> None:
        delay = RECONNECT_S
        failing = False  # logged once per streak of failed attempts, not per attempt
        while True:
            try:
                # asyncio.timeout, not wait_for: on 3.11 a wait_for whose timeout fires as the
                # task is cancelled raises TimeoutError, and the cancellation (close()) would
                # be swallowed below, leaving close() waiting for this task forever.
                async with asyncio.timeout(CONNECT_TIMEOUT_S):
                    reader, writer = await asyncio.open_connection(*self.addr)
            except (OSError, TimeoutError) as exc:
                if not failing:
                    log.info("node %d: cannot reach node %d at %s:%d (%s); retrying",
                             self.t.node_id, self.node_id, *self.addr, str(exc) or "timed out")
                    failing = True
                await asyncio.sleep(delay)  # a backoff between attempts, not a wait for a state
                delay = min(delay * 2, RECONNECT_MAX_S)
                continue
            delay = RECONNECT_S
            failing = False
            _bound_unacknowledged(writer)
            log.info("node %d: connected to node %d", self.t.node_id, self.node_id)
            try:
                async with asyncio.timeout(CONNECT_TIMEOUT_S):
                    nonce = await reader.readexactly(NONCE_BYTES)
                    mark = await reader.readexactly(MARK_BYTES)
                if mark != self.t.mark:
                    self.t.refused(f"node {self.node_id} at {self.addr[0]}:{self.addr[1]} belongs "
                                   f"to another cluster than {self.t.cluster_id!r} (its cluster "
                                   "id differs)")
                    await asyncio.sleep(RECONNECT_MAX_S)  # not again at once: it will not change
                    raise ConnectionRefusedError("another cluster")
                writer.write(self.t.mark)
                framer = FrameWriter(self.t.node_id, nonce, self.t.key)
                while True:
                    message = await self.queue.get()
                    if writer.is_closing():
                        # Lost while idle (the kernel gave up on it, the peer reset it): a
                        # write now would raise RuntimeError on uvloop, and must not end this
                        # task. The message is lost, as any sent on a dying connection.
                        raise ConnectionResetError("the connection was closed")
                    data = framer.frame(message)
                    writer.write(data)
                    self.t.counters.frames_sent += 1
                    self.t.counters.bytes_sent += len(data)
                    async with asyncio.timeout(STALL_TIMEOUT_S):
                        await writer.drain()
            except (OSError, TimeoutError, RuntimeError, asyncio.IncompleteReadError,
                    FrameError) as exc:
                log.info("node %d: connection to node %d lost (%s)", self.t.node_id,
                         self.node_id, str(exc) or type(exc).__name__)
            finally:
                # Abort, not close: a graceful close waits to flush what a dead peer will never
                # take, and this task would wait with it instead of connecting again.
                writer.transport.abort()


class Transport:
    """One node's end of the quorum's network: a listener for its peers' connections and an
    outbound connection per peer. ``on_message(src, message)`` is called on the loop for
    every authenticated message; what it raises is the caller's bug, not the peer's."""

    def __init__(self, node_id: int, listen: tuple[str, int],
                 peers: Mapping[int, tuple[str, int]], key: bytes | None,
                 on_message: Callable[[int, bytes], None], *,
                 cluster_id: str = "twinbench") -> None:
        self.node_id = node_id
        self.listen = listen
        self.key = key
        self.cluster_id = cluster_id
        self.mark = cluster_mark(cluster_id)
        # Why the last connection was refused (another cluster's mark, a bad frame), for the
        # one line a broker prints when it cannot join; None until one is.
        self.last_refusal: str | None = None
        self._refusals_logged: set[str] = set()
        self.on_message = on_message
        self.counters = TransportCounters()
        self._peers = {n: _Peer(self, n, a) for n, a in peers.items() if n != node_id}
        self._server: asyncio.Server | None = None
        self._inbound: set[asyncio.Task[None]] = set()

    @property
    def port(self) -> int:
        """The port listened on (the one asked for, or the one the OS chose for 0)."""
        assert self._server is not None and self._server.sockets
        port: int = self._server.sockets[0].getsockname()[1]
        return port

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, *self.listen)
        for peer in self._peers.values():
            peer.start()

    def set_peer(self, node_id: int, addr: tuple[str, int]) -> None:
        """Reach ``node_id`` at ``addr`` from now on (its port became known)."""
        old = self._peers.get(node_id)
        if old is not None and old.task is not None:
            old.task.cancel()
        peer = self._peers[node_id] = _Peer(self, node_id, addr)
        if self._server is not None:
            peer.start()

    def send(self, dst: int, message: bytes) -> None:
        """Queue ``message`` for ``dst``; dropped (counted) when it cannot go now."""
        peer = self._peers.get(dst)
        if peer is None:
            self.counters.dropped += 1
            return
        try:
            peer.queue.put_nowait(message)
        except asyncio.QueueFull:
            self.counters.dropped += 1

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._inbound.add(task)
        nonce = os.urandom(NONCE_BYTES)
        frames = FrameReader(nonce, self.key)
        try:
            writer.write(nonce + self.mark)
            await writer.drain()
            async with asyncio.timeout(CONNECT_TIMEOUT_S):
                mark = await reader.readexactly(MARK_BYTES)
            if mark != self.mark:
                self.refused(f"a node at {writer.get_extra_info('peername')} belongs to another "
                             f"cluster than {self.cluster_id!r} (its cluster id differs)")
                return
            while data := await reader.read(65536):
                for src, message in frames.feed(data):
                    self.counters.frames_received += 1
                    self.counters.bytes_received += len(message)
                    self.on_message(src, message)
        except FrameError as exc:
            self.refused(f"a connection from {writer.get_extra_info('peername')}: {exc}")
        except (OSError, TimeoutError, asyncio.IncompleteReadError, asyncio.CancelledError):
            # Cancelled by close(): asyncio's stream callback reads the handler's exception,
            # and a cancellation raised there is logged as an error at every shutdown.
            pass
        finally:
            self._inbound.discard(task)
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    def refused(self, why: str) -> None:
        """A connection closed for what its peer sent: counted, remembered, logged once."""
        self.counters.refused += 1
        self.last_refusal = why
        if why not in self._refusals_logged:
            self._refusals_logged.add(why)
            log.warning("node %d refused %s", self.node_id, why)

    async def close(self) -> None:
        tasks = [p.task for p in self._peers.values() if p.task is not None]
        tasks += list(self._inbound)
        if self._server is not None:
            self._server.close()
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._server is not None:
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
