"""The thin UDP adapter: drives a sans-IO ``SwimNode`` with an asyncio datagram socket and the
loop's clock.

``GossipSocket`` is the socket's protocol: received datagrams wait in a queue capped at
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
from collections import deque
from collections.abc import Callable

from brokers.core.errors import UserError
from brokers.dsbs_broker.swim import Addr, SwimNode

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


class GossipSocket(asyncio.DatagramProtocol):
    """The bound gossip socket: a bounded receive queue and a non-blocking send."""

    def __init__(self, max_queued: int) -> None:
        self.queue: deque[tuple[bytes, Addr]] = deque()
        self.max_queued = max_queued
        self.dropped = 0  # datagrams refused because the queue was full
        self.errors = 0  # errors the socket reported (ICMP unreachable and such)
        self.closed = False
        self.transport: asyncio.DatagramTransport | None = None
        self._waiter: asyncio.Future[None] | None = None

    # --- asyncio.DatagramProtocol -----------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def datagram_received(self, data: bytes, addr: tuple) -> None:
        if len(self.queue) >= self.max_queued:
            self.dropped += 1
            return
        self.queue.append((data, (addr[0], addr[1])))
        self._wake()

    def error_received(self, exc: Exception) -> None:
        self.errors += 1

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._wake()

    # --- for the driver ---------------------------------------------------------------------
    @property
    def sockname(self) -> tuple:
        assert self.transport is not None
        return self.transport.get_extra_info("sockname")

    def _wake(self) -> None:
        w = self._waiter
        if w is not None and not w.done():
            w.set_result(None)

    async def readable(self) -> None:
        """Return once a datagram is queued or the socket is closed."""
        if self.queue or self.closed:
            return
        self._waiter = asyncio.get_running_loop().create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None

    def sendto(self, data: bytes, addr: Addr) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.sendto(data, addr)

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()
        self.closed = True
        self._wake()


async def bind(host: str, port: int, *, max_queued: int = 1024) -> GossipSocket:
    loop = asyncio.get_running_loop()
    _, proto = await loop.create_datagram_endpoint(lambda: GossipSocket(max_queued),
                                                   local_addr=(host, port))
    return proto


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
            await sock.readable()
            n = 0
            while sock.queue and n < _SLICE:
                data, addr = sock.queue.popleft()
                n += 1
                try:
                    node.receive(data, addr, self._loop.time())
                except Exception:
                    self._failed("receive_errors", f"receive from {addr!r}")
            self._after()
            if self._deadline() < self._wake_at:
                self._wake_timer()
            if sock.queue:
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
