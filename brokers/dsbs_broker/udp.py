"""The thin UDP adapter: drives a sans-IO ``SwimNode`` with asyncio-dgram and the loop's clock.

Two tasks: one feeds every received datagram to ``node.receive`` and sends what it produced;
the other sleeps until the node's next deadline (capped at ``tick_s``, and woken early when a
received packet set an earlier one), calls ``tick`` and sends. Socket errors (an ICMP port
unreachable from a dead peer surfaces as an error on the next call) are counted, never fatal.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

import asyncio_dgram

from brokers.dsbs_broker.swim import SwimNode

log = logging.getLogger("twinbench.dsbs.udp")


async def bind(host: str, port: int) -> asyncio_dgram.aio.DatagramServer:
    return await asyncio_dgram.bind((host, port))


class GossipDriver:
    def __init__(
        self,
        node: SwimNode,
        stream: asyncio_dgram.aio.DatagramServer,
        *,
        on_activity: Callable[[], None] = lambda: None,
    ) -> None:
        self.node = node
        self._stream = stream
        self._on_activity = on_activity
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        self._wake_at = float("inf")
        self._tasks: list[asyncio.Task] = []
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
        transport = self._stream._transport  # asyncio-dgram's send() awaits per datagram
        for addr, data in self.node.take_outbox():
            if transport.is_closing():
                return
            try:
                transport.sendto(data, addr)
            except OSError:
                self.node.counters["socket_errors"] += 1

    async def _recv_loop(self) -> None:
        node = self.node
        while True:
            try:
                data, addr = await self._stream.recv()
            except asyncio_dgram.TransportClosed:
                return
            except OSError:
                node.counters["socket_errors"] += 1
                continue
            node.receive(data, (addr[0], addr[1]), self._loop.time())
            self.flush()
            self._on_activity()
            if node.next_deadline() < self._wake_at:
                self._wake.set()

    async def _timer_loop(self) -> None:
        node = self.node
        cap = node.cfg.tick_s
        while True:
            now = self._loop.time()
            node.tick(now)
            self.flush()
            self._on_activity()
            delay = min(max(node.next_deadline() - self._loop.time(), 0.001), cap)
            self._wake_at = self._loop.time() + delay
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), delay)

    async def close(self, *, leave: bool) -> None:
        if self.closed:
            return
        self.closed = True
        if leave:
            self.node.leave(self._loop.time())
            self.flush()
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        self._stream.close()
