"""The TCP server: a thin ``asyncio.Protocol`` between sockets and the request dispatcher.

It knows frames, not APIs: bytes go into the sans-IO ``FrameDecoder``, each complete frame goes
to ``Dispatcher.dispatch``, and replies go back **in request order** (Kafka clients drop the
connection on a correlation-id mismatch). A reply that is ready at once is written at once when
nothing is queued ahead of it; an awaitable reply (long-poll Fetch, JoinGroup, a ZooKeeper
round trip) holds a slot in the queue and everything behind it waits for it.

Garbage never takes the broker down: a framing violation closes that one connection with a log
line, and a handler that fails unexpectedly does the same; every other connection is untouched.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Sequence
from typing import Protocol

from brokers.core.errors import ProtocolViolation
from brokers.core.protocol.framing import FrameDecoder

log = logging.getLogger("twinbench.server")

Buffers = Sequence[bytes | bytearray | memoryview]
# What a dispatcher returns for one frame: the complete response frame as buffers, an awaitable
# of them, or None when the request gets no response (Produce with acks=0).
Reply = Buffers | Awaitable[Buffers | None] | None


class Dispatcher(Protocol):
    def dispatch(self, frame: memoryview, peer: str) -> Reply:
        """Handle one request frame (without its length prefix). Raise ProtocolViolation to
        close the connection."""


class _Slot:
    __slots__ = ("buffers", "done")

    def __init__(self) -> None:
        self.buffers: Buffers | None = None
        self.done = False


class KafkaConnection(asyncio.Protocol):
    def __init__(self, dispatcher: Dispatcher, max_frame_bytes: int, registry: set) -> None:
        self._dispatcher = dispatcher
        self._decoder = FrameDecoder(max_frame_bytes)
        self._registry = registry
        self._transport: asyncio.Transport | None = None
        self._peer = "?"
        self._slots: deque[_Slot] = deque()
        self._tasks: set[asyncio.Future] = set()
        self._closing = False

    # --- asyncio.Protocol -------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses; they quack the same.
        self._transport = transport  # type: ignore[assignment]
        peer = transport.get_extra_info("peername")
        self._peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        self._registry.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self._closing = True
        self._registry.discard(self)
        for task in self._tasks:
            task.cancel()
        self._slots.clear()

    def pause_writing(self) -> None:
        # The client is not reading its responses: stop reading its requests rather than
        # buffering responses without bound.
        if self._transport is not None:
            self._transport.pause_reading()

    def resume_writing(self) -> None:
        if self._transport is not None and not self._closing:
            self._transport.resume_reading()

    def data_received(self, data: bytes) -> None:
        if self._closing:
            return
        try:
            frames = self._decoder.feed(data)
        except ProtocolViolation as exc:
            self.abort(f"bad framing: {exc}")
            return
        dispatch = self._dispatcher.dispatch
        for frame in frames:
            try:
                reply = dispatch(frame, self._peer)
            except ProtocolViolation as exc:
                self.abort(f"bad request: {exc}")
                return
            except Exception:
                log.exception("%s: handler failed; closing the connection", self._peer)
                self.abort("internal error")
                return
            if reply is None:
                continue
            if isinstance(reply, list | tuple):
                if self._slots:
                    slot = _Slot()
                    slot.buffers, slot.done = reply, True
                    self._slots.append(slot)
                else:
                    self._transport.writelines(reply)  # type: ignore[union-attr]
                continue
            slot = _Slot()
            self._slots.append(slot)
            task = asyncio.ensure_future(reply)
            self._tasks.add(task)
            task.add_done_callback(lambda t, s=slot: self._completed(t, s))

    # --- ordering ---------------------------------------------------------------------------
    def _completed(self, task: asyncio.Future, slot: _Slot) -> None:
        self._tasks.discard(task)
        if task.cancelled() or self._closing:
            return
        exc = task.exception()
        if exc is not None:
            if isinstance(exc, ProtocolViolation):
                self.abort(f"bad request: {exc}")
            else:
                log.error("%s: handler failed; closing the connection", self._peer,
                          exc_info=exc)
                self.abort("internal error")
            return
        slot.buffers, slot.done = task.result(), True
        self._flush()

    def _flush(self) -> None:
        transport = self._transport
        while self._slots and self._slots[0].done:
            slot = self._slots.popleft()
            if slot.buffers is not None and transport is not None:
                transport.writelines(slot.buffers)

    def abort(self, reason: str) -> None:
        log.warning("%s: closing connection: %s", self._peer, reason)
        self._closing = True
        if self._transport is not None:
            self._transport.close()


class KafkaServer:
    """Owns the listening socket and the open connections."""

    def __init__(self, dispatcher: Dispatcher, max_frame_bytes: int) -> None:
        self._dispatcher = dispatcher
        self._max_frame_bytes = max_frame_bytes
        self._server: asyncio.base_events.Server | None = None
        self.connections: set[KafkaConnection] = set()

    async def start(self, host: str, port: int) -> tuple[str, int]:
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            lambda: KafkaConnection(self._dispatcher, self._max_frame_bytes, self.connections),
            host, port, reuse_address=True, backlog=1024,
        )
        sockname = self._server.sockets[0].getsockname()
        return sockname[0], sockname[1]

    async def stop(self) -> None:
        if self._server is None:
            return
        self._server.close()
        for conn in list(self.connections):
            conn.abort("broker shutting down")
        await self._server.wait_closed()
        self._server = None
