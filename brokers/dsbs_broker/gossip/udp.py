"""The thin UDP adapter: drives a sans-IO ``SwimNode`` with an asyncio datagram socket and the
loop's clock.

``GossipSocket`` is an asyncio-dgram ``DatagramServer`` whose protocol caps the receive queue at
``GossipLimits.receive_queue_packets`` (a flood beyond it is dropped and counted, never
buffered without end). ``GossipDriver`` runs two tasks: one feeds queued datagrams to
``node.receive`` and sends what it produced; the other sleeps until the node's next deadline
(capped at ``tick_s``, and woken early when a received packet set an earlier one), calls
``tick`` and sends.

Nothing ends either loop but ``close``: an exception from ``receive``, ``tick``, a send or the
activity callback is counted (``receive_errors``, ``tick_errors``, ``send_errors``,
``activity_errors``) and logged at most once a minute per kind, and the loop goes on. Socket
errors (an ICMP port unreachable from a dead peer surfaces on the socket) are counted too.

The timer sleeps on a plain future rather than ``asyncio.wait_for(event.wait(), ...)``: on
Python 3.11, wait_for returns the inner result and swallows a cancellation that arrives in the
loop iteration after the inner wait completed (a packet had just woken the timer), so the timer
task outlived ``close`` and a broker's shutdown waited for it forever. ``close`` also gives the
tasks a bounded time and never suppresses its caller's own cancellation.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections.abc import Callable
from typing import Any

import asyncio_dgram
import asyncio_dgram.aio

from brokers.core.errors import UserError
from brokers.dsbs_broker.gossip.swim import Addr, SwimNode

log = logging.getLogger("twinbench.dsbs.udp")

# Datagrams handled before the receive task yields to the rest of the loop (Kafka requests).
_SLICE = 64
_LOG_EVERY_S = 60.0


async def resolve(host: str, port: int, *, family: int = 0, what: str) -> Addr:
    """``host`` as an address literal (resolved once, at start); a UserError naming ``what``
    if it does not resolve."""
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, family=family, type=socket.SOCK_DGRAM)
    except (OSError, UnicodeError) as exc:
        raise UserError(f"{what} {host}:{port} does not resolve: {exc}") from None
    if not infos:
        raise UserError(f"{what} {host}:{port} does not resolve")
    return str(infos[0][4][0]), port


def _peer(addr: Any) -> Addr:
    """(host, port) of a datagram's source (an IPv6 address has two more fields)."""
    return addr[0], addr[1]


class _CappedProtocol(asyncio_dgram.aio.Protocol):
    """asyncio-dgram's datagram protocol with a cap on its receive queue: a flood beyond
    ``max_queued`` datagrams is dropped and counted, never buffered without end. Socket errors
    (an ICMP port unreachable from a dead peer) are counted rather than queued: asyncio-dgram
    would raise them from the next ``recv`` and a dead peer is routine for gossip."""

    def __init__(self, recvq: asyncio.Queue, excq: asyncio.Queue, drained: asyncio.Event,
                 max_queued: int) -> None:
        super().__init__(recvq, excq, drained)
        self._queue = recvq  # the queue the base class fills (its own name for it is private)
        self.max_queued = max_queued
        self.dropped = 0
        self.errors = 0

    def datagram_received(self, data: bytes, addr: Any) -> None:
        # Any: asyncio's stubs allow every kind of socket address; a UDP one is (host, port...)
        if self._queue.qsize() >= self.max_queued:
            self.dropped += 1
            return
        super().datagram_received(data, addr)

    def error_received(self, exc: Exception) -> None:
        self.errors += 1


class GossipSocket:
    """The bound gossip socket: an asyncio-dgram ``DatagramServer`` over the capped protocol."""

    def __init__(self, stream: asyncio_dgram.aio.DatagramServer, proto: _CappedProtocol,
                 recvq: asyncio.Queue, transport: asyncio.DatagramTransport) -> None:
        self._stream = stream
        self._transport = transport
        self._proto = proto
        self._recvq = recvq
        self.closed = False

    @property
    def dropped(self) -> int:
        """Datagrams refused because the queue was full."""
        return self._proto.dropped

    @property
    def errors(self) -> int:
        """Errors the socket reported (ICMP unreachable and such)."""
        return self._proto.errors

    @property
    def queued(self) -> int:
        return self._recvq.qsize()

    @property
    def sockname(self) -> tuple:
        return self._stream.sockname

    async def receive(self, limit: int) -> list[tuple[bytes, Addr]]:
        """Wait for a datagram, then take up to ``limit`` queued ones; [] once closed."""
        try:
            data, addr = await self._stream.recv()
        except asyncio_dgram.TransportClosed:
            self.closed = True
            return []
        out = [(data, _peer(addr))]
        while len(out) < limit and not self._recvq.empty():
            data, addr = self._recvq.get_nowait()
            if data is None:  # asyncio-dgram's end-of-stream marker
                self._recvq.put_nowait((None, None))
                break
            out.append((data, _peer(addr)))
        return out

    def sendto(self, data: bytes, addr: Addr) -> None:
        # asyncio-dgram's send is a coroutine only to wait for a drained buffer; datagrams
        # are never buffered by the kernel-side transport, so send on the transport directly.
        transport = self._transport
        if not self.closed and not transport.is_closing():
            transport.sendto(data, addr)

    def close(self) -> None:
        self.closed = True
        self._stream.close()


async def bind(host: str, port: int, *, max_queued: int = 1024) -> GossipSocket:
    loop = asyncio.get_running_loop()
    recvq: asyncio.Queue = asyncio.Queue()
    excq: asyncio.Queue = asyncio.Queue()
    drained = asyncio.Event()
    transport, proto = await loop.create_datagram_endpoint(
        lambda: _CappedProtocol(recvq, excq, drained, max_queued), local_addr=(host, port))
    # asyncio-dgram's stub names the transport parameter's type as a protocol; it is stored and
    # used as the transport (aio.py), which is what we pass.
    stream = asyncio_dgram.aio.DatagramServer(
        transport, recvq, excq, drained)  # type: ignore[arg-type]
    return GossipSocket(stream, proto, recvq, transport)


class GossipDriver:
    def __init__(
        self,
        node: SwimNode,
        sock: GossipSocket,
        *,
        on_activity: Callable[[], None] = lambda: None,
    ) -> None:
        self.node = node
        self._sock = sock
        self._on_activity = on_activity
        self._loop = asyncio.get_running_loop()
        self._timer_waiter: asyncio.Future[None] | None = None
        self._wake_at = float("inf")
        self._tasks: list[asyncio.Task] = []
        self._logged: dict[str, float] = {}
        self.closed = False

    def start(self) -> None:
        self._tasks = [
            asyncio.create_task(self._recv_loop(), name="dsbs-gossip-recv"),
            asyncio.create_task(self._timer_loop(), name="dsbs-gossip-timer"),
        ]

    def now(self) -> float:
        return self._loop.time()

    def flush(self) -> None:
        """Send everything the node queued (sendto does not block for datagrams)."""
        counters = self.node.counters
        for addr, data in self.node.take_outbox():
            try:
                self._sock.sendto(data, addr)
            except OSError:
                counters["socket_errors"] += 1
            except Exception:  # uvloop raises ValueError for a name or another family
                self._failed("send_errors", f"sending to {addr!r}")

    def _failed(self, counter: str, what: str) -> None:
        """Count a failure that must not end a loop; log it at most once a minute per kind."""
        self.node.counters[counter] += 1
        now = time.monotonic()
        if now - self._logged.get(counter, -_LOG_EVERY_S) >= _LOG_EVERY_S:
            self._logged[counter] = now
            log.exception("gossip %s failed (counted as %s; the loop goes on)", what, counter)

    def _after(self) -> None:
        self.flush()
        self.node.counters["dropped_queue_full"] = self._sock.dropped
        self.node.counters["socket_errors_reported"] = self._sock.errors
        try:
            self._on_activity()
        except Exception:
            self._failed("activity_errors", "activity callback")

    async def _recv_loop(self) -> None:
        node, sock = self.node, self._sock
        while not sock.closed:
            for data, addr in await sock.receive(_SLICE):
                try:
                    node.receive(data, addr, self._loop.time())
                except Exception:
                    self._failed("receive_errors", f"receive from {addr!r}")
            self._after()
            if self._deadline() < self._wake_at:
                self._wake_timer()
            if sock.queued:
                await asyncio.sleep(0)  # let Kafka requests in between slices of a burst

    def _deadline(self) -> float:
        try:
            return self.node.next_deadline()
        except Exception:
            self._failed("tick_errors", "next_deadline")
            return self._loop.time() + self.node.cfg.tick_s

    async def _timer_loop(self) -> None:
        node = self.node
        cap = node.cfg.tick_s
        while True:
            try:
                node.tick(self._loop.time())
            except Exception:
                self._failed("tick_errors", "tick")
            self._after()
            delay = min(max(self._deadline() - self._loop.time(), 0.001), cap)
            self._wake_at = self._loop.time() + delay
            await self._sleep(delay)

    async def _sleep(self, delay: float) -> None:
        """Sleep ``delay`` seconds or until woken; a cancellation always propagates."""
        fut = self._loop.create_future()
        handle = self._loop.call_later(delay, _resolve, fut)
        self._timer_waiter = fut
        try:
            await fut
        finally:
            handle.cancel()
            self._timer_waiter = None

    def _wake_timer(self) -> None:
        fut = self._timer_waiter
        if fut is not None:
            _resolve(fut)

    async def close(self, *, leave: bool, timeout_s: float = 5.0) -> None:
        """Stop both tasks (waiting at most ``timeout_s``) and close the socket."""
        if self.closed:
            return
        self.closed = True
        if leave:
            try:
                self.node.leave(self._loop.time())
                self.flush()
            except Exception:
                self._failed("send_errors", "leave notice")
        for t in self._tasks:
            t.cancel()
        if self._tasks:
            done, pending = await asyncio.wait(self._tasks, timeout=timeout_s)
            for t in done:
                if not t.cancelled() and t.exception() is not None:
                    log.error("gossip task %s ended with %r", t.get_name(), t.exception())
            for t in pending:
                log.error("gossip task %s did not stop within %.1fs", t.get_name(), timeout_s)
        self._sock.close()


def _resolve(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)
