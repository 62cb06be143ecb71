"""The TCP server: a thin ``asyncio.Protocol`` between sockets and the request dispatcher.

It knows frames, not APIs: bytes go into the sans-IO ``FrameDecoder``, each complete frame goes
to ``Dispatcher.dispatch``, and replies go back **in request order** (Kafka clients drop the
connection on a correlation-id mismatch). A reply that is ready at once is written at once when
nothing is queued ahead of it; an awaitable reply (long-poll Fetch, JoinGroup, a ZooKeeper
round trip) holds a slot in the queue and everything behind it waits for it.

A broker has one listener or more (``KafkaServer.start`` once per listener): a TLS listener's
sockets are the event loop's TLS transports (the handshake bounded by
``TLS_HANDSHAKE_TIMEOUT_S``), a SASL listener's connections are brokers/core/security's
``SaslServerConnection``; a PLAINTEXT listener's are this module's, untouched.

Garbage never takes the broker down: a framing violation closes that one connection with a log
line, and a handler that fails unexpectedly does the same; every other connection is untouched.

What one client can hold is bounded (``ListenerConfig``):

* connections in all and per client address: one over either limit is closed when accepted;
* bytes in flight per connection: request bytes read and not yet answered, plus answers waiting
  behind an earlier slot. At ``queued_max_request_bytes``, or while the socket's write buffer is
  full (the client is not reading), the connection stops dispatching and stops reading; frames
  already read wait in a queue, and reading resumes once answers have drained. So a client
  pipelining requests whose answers are large (a fetch behind a long poll, many Metadata) holds
  at most the limit plus one answer, and the rest waits in its own socket buffers;
* idle time: a connection owed no answer and without a complete request for
  ``connections_max_idle_ms`` is closed. Bytes of an unfinished frame do not count, so a frame
  trickled byte by byte does not keep a connection alive;
* request bytes broker-wide (``RequestMemory``, ``request_memory_bytes``): the bytes of
  unfinished frames, of frames read and not dispatched, and of requests dispatched and not yet
  answered, over every connection. Per-connection budgets alone let many clients that each
  stall halfway through a large frame take the broker past any bound. At the limit, every
  connection holding more than ``REQUEST_MEMORY_FLOOR`` stops being read (``pause_reading``:
  nothing more arrives from it) until the pool is below 7/8 of the limit; connections holding
  less are still read, so ordinary clients, whose requests are small and answered at once, are
  served meanwhile. Each of those may add one read before the next check, so the pool can pass
  the limit; past 9/8 of it the connection with the most unfinished and undispatched bytes is
  closed (with a log line), which is what bounds it: at most 9/8 of the limit plus one read.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol, cast

from brokers.core.config import ListenerConfig
from brokers.core.errors import ProtocolViolation
from brokers.core.protocol.framing import FrameDecoder

log = logging.getLogger("twinbench.server")

Buffers = Sequence[bytes | bytearray | memoryview]
# What a dispatcher returns for one frame: the complete response frame as buffers, an awaitable
# of them, or None when the request gets no response (Produce with acks=0).
Reply = Buffers | Awaitable[Buffers | None] | None

# The length prefix is not part of a frame as the decoder returns it, but it was read.
_PREFIX = 4
# A flood of refused connections is summarised in one log line per period, not one per accept.
REFUSAL_LOG_PERIOD_S = 10.0
# How long a client may take to finish the TLS handshake on a TLS listener.
TLS_HANDSHAKE_TIMEOUT_S = 10.0


class Dispatcher(Protocol):
    def dispatch(self, frame: memoryview, peer: str) -> Reply:
        """Handle one request frame (without its length prefix). Raise ProtocolViolation to
        close the connection."""


# Builds one listener's connections (SASL listeners: brokers/core/security/connection.py).
ConnectionFactory = Callable[["KafkaServer"], "ServerConnection"]


class _Slot:
    __slots__ = ("buffers", "cost", "done", "request")

    def __init__(self, cost: int) -> None:
        self.buffers: Buffers | None = None
        self.done = False
        self.request = 0  # request bytes it holds until answered (the broker-wide pool's)
        self.cost = cost  # request bytes, plus the answer's once it is ready


def _size(buffers: Buffers) -> int:
    n = 0
    for b in buffers:
        n += len(b)
    return n


# A connection holding at most this many request bytes is still read while the broker-wide
# pool is full: room for any ordinary request (a produce of a few batches, a fetch, metadata).
REQUEST_MEMORY_FLOOR = 64 * 1024


class RequestMemory:
    """The broker-wide pool of request bytes (see the module docstring). Connections report
    what they hold (``charge``); the pool says when to stop reading large holders, when to
    resume, and whom to close past the ceiling."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.resume_at = limit * 7 // 8
        self.ceiling = limit + limit // 8
        self.used = 0
        # Set at the limit, cleared below resume_at: while set, large holders are not read.
        self.full = False
        self.closed_total = 0  # connections closed past the ceiling (a counter for metrics)


class ServerConnection(asyncio.Protocol):
    """The server's end of one client's connection (the load client's end is
    ``workloads.connection.BrokerConnection``)."""

    def __init__(self, server: KafkaServer) -> None:
        self._server = server
        self._dispatcher = server.dispatcher
        self._decoder = FrameDecoder(server.max_frame_bytes)
        self._limit = server.config.queued_max_request_bytes
        self._transport: asyncio.Transport | None = None
        self._peer = "?"
        self.ip = ""
        self._slots: deque[_Slot] = deque()
        # Ordered (dicts as ordered sets, here and in KafkaServer.connections): cancelled and
        # walked in the order made, not of their addresses, so a seeded simulation replays.
        self._tasks: dict[asyncio.Future, None] = {}
        # Frames read but not yet dispatched (only while dispatching is held back).
        self._queued: deque[memoryview] = deque()
        # Request bytes dispatched and not yet answered + answers waiting in slots.
        self._held = 0
        # For the broker-wide pool: bytes of the frames in _queued, of requests dispatched and
        # not answered, and what this connection has charged to the pool (its footprint).
        self._queued_bytes = 0
        self._unanswered = 0
        self._charged = 0
        self._pool = server.memory
        self._write_paused = False
        self._read_paused = False
        self._closing = False
        self.admitted = False
        self.last_active = time.monotonic()

    # --- asyncio.Protocol -------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses; they quack the same.
        self._transport = transport  # type: ignore[assignment]
        peer = transport.get_extra_info("peername")
        if isinstance(peer, tuple):
            self.ip = str(peer[0])
            self._peer = f"{peer[0]}:{peer[1]}"
        else:
            self.ip = self._peer = str(peer)
        if not self._server.admit(self):
            self._closing = True
            transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self._closing = True
        self._uncharge()
        self._server.release(self)
        for task in self._tasks:
            task.cancel()
        self._slots.clear()
        self._queued.clear()

    def pause_writing(self) -> None:
        # The client is not reading its responses: stop producing more (dispatching) and stop
        # reading its requests rather than buffering responses without bound.
        self._write_paused = True
        self._update_reading()

    def resume_writing(self) -> None:
        self._write_paused = False
        self._pump()

    def data_received(self, data: bytes) -> None:
        if self._closing:
            return
        try:
            frames = self._decoder.feed(data)
        except ProtocolViolation as exc:
            self.abort(f"bad framing: {exc}")
            return
        if frames:
            if self._queued or self._write_paused or self._held >= self._limit:
                self._queue(frames)
            else:
                self._dispatch_all(frames)
        self._account()
        self._update_reading()

    # --- dispatching ------------------------------------------------------------------------
    def _dispatch_all(self, frames: list[memoryview]) -> None:
        """The common case: dispatch straight from the decoder's list."""
        for i, frame in enumerate(frames):
            if self._closing:
                return
            if self._write_paused or self._held >= self._limit:
                self._queue(frames[i:])
                return
            self._dispatch(frame)

    def _queue(self, frames: list[memoryview]) -> None:
        self._queued.extend(frames)
        self._queued_bytes += sum(len(f) for f in frames) + _PREFIX * len(frames)

    def _pump(self) -> None:
        """Dispatch queued frames while the connection's budget allows, then read again."""
        queued = self._queued
        while queued and not self._closing and not self._write_paused and (
            self._held < self._limit
        ):
            frame = queued.popleft()
            self._queued_bytes -= len(frame) + _PREFIX
            self._dispatch(frame)
        self._account()
        self._update_reading()

    # --- the broker-wide pool ---------------------------------------------------------------
    def footprint(self) -> int:
        """Request bytes this connection holds: unfinished frame, undispatched, unanswered."""
        return self._decoder.buffered + self._queued_bytes + self._unanswered

    def _account(self) -> None:
        """Report this connection's footprint to the pool, and act on the pool's state."""
        if self._closing:
            return
        now = self.footprint()
        delta = now - self._charged
        if not delta:
            return
        self._charged = now
        pool = self._pool
        pool.used += delta
        if delta > 0:
            if pool.used > pool.ceiling:
                self._server.shed()
            if not pool.full and pool.used >= pool.limit:
                pool.full = True
                self._server.memory_changed()
        elif pool.full and pool.used < pool.resume_at:
            pool.full = False
            self._server.memory_changed()

    def _uncharge(self) -> None:
        self._pool.used -= self._charged
        self._charged = 0
        if self._pool.full and self._pool.used < self._pool.resume_at:
            self._pool.full = False
            self._server.memory_changed()

    def _dispatch(self, frame: memoryview) -> None:
        self.last_active = time.monotonic()
        try:
            reply = self._dispatcher.dispatch(frame, self._peer)
        except ProtocolViolation as exc:
            self.abort(f"bad request: {exc}")
            return
        except Exception:
            log.exception("%s: handler failed; closing the connection", self._peer)
            self.abort("internal error")
            return
        if reply is None:
            return
        if isinstance(reply, list | tuple):
            if self._slots:
                slot = _Slot(len(frame) + _PREFIX + _size(reply))
                slot.buffers, slot.done = reply, True
                self._slots.append(slot)
                self._held += slot.cost
            else:
                # Set by connection_made, before any data arrives.
                self._transport.writelines(reply)  # type: ignore[union-attr]
            return
        slot = _Slot(len(frame) + _PREFIX)
        slot.request = slot.cost
        self._unanswered += slot.request
        self._slots.append(slot)
        self._held += slot.cost
        # Buffers come as a list or tuple (handled above); what is left is their awaitable.
        task = asyncio.ensure_future(cast(Awaitable[Buffers | None], reply))
        self._tasks[task] = None
        task.add_done_callback(lambda t: self._completed(t, slot))

    def _update_reading(self) -> None:
        transport = self._transport
        if transport is None or self._closing:
            return
        hold = (bool(self._queued) or self._write_paused or self._held >= self._limit
                or (self._pool.full and self._charged > REQUEST_MEMORY_FLOOR))
        if hold and not self._read_paused:
            self._read_paused = True
            transport.pause_reading()
        elif not hold and self._read_paused:
            self._read_paused = False
            transport.resume_reading()

    # --- ordering ---------------------------------------------------------------------------
    def _completed(self, task: asyncio.Future, slot: _Slot) -> None:
        self._tasks.pop(task, None)
        if task.cancelled() or self._closing:
            return
        self._unanswered -= slot.request  # answered (or failed): the request is let go
        exc = task.exception()
        if exc is not None:
            if isinstance(exc, ProtocolViolation):
                self.abort(f"bad request: {exc}")
            else:
                log.error("%s: handler failed; closing the connection", self._peer,
                          exc_info=exc)
                self.abort("internal error")
            return
        buffers = task.result()
        slot.buffers, slot.done = buffers, True
        if buffers is not None:
            extra = _size(buffers)
            slot.cost += extra
            self._held += extra
        self._flush()

    def _flush(self) -> None:
        transport = self._transport
        while self._slots and self._slots[0].done:
            slot = self._slots.popleft()
            self._held -= slot.cost
            if slot.buffers is not None and transport is not None:
                transport.writelines(slot.buffers)
        self.last_active = time.monotonic()
        self._pump()

    # --- idleness ---------------------------------------------------------------------------
    def idle_for(self, now: float) -> float:
        """Seconds without a complete request while owed nothing; 0 when an answer is owed."""
        if self._slots or self._queued:
            return 0.0
        return now - self.last_active

    def abort(self, reason: str) -> None:
        log.warning("%s: closing connection: %s", self._peer, reason)
        # Given back now, not at connection_lost: what it held is dropped with it, and the
        # pool must not shed another connection for bytes already let go.
        self._uncharge()
        self._closing = True
        if self._transport is not None:
            self._transport.close()


class KafkaServer:
    """Owns the listening socket and the open connections, and enforces their limits."""

    def __init__(
        self, dispatcher: Dispatcher, max_frame_bytes: int, config: ListenerConfig | None = None
    ) -> None:
        self.dispatcher = dispatcher
        self.max_frame_bytes = max_frame_bytes
        self.config = config or ListenerConfig()
        self._servers: list[asyncio.base_events.Server] = []
        self._idle_task: asyncio.Task[None] | None = None
        self.connections: dict[ServerConnection, None] = {}
        self._per_ip: dict[str, int] = {}
        # Refusals since the last summary line, by reason; and when that line was written.
        self._refused: dict[str, int] = {}
        self._refusal_logged = 0.0
        self.refused_total = 0
        self.memory = RequestMemory(self.config.request_memory_bytes)

    async def start(
        self, host: str, port: int, ssl_context: ssl.SSLContext | None = None,
        connection: ConnectionFactory | None = None,
    ) -> tuple[str, int]:
        """Listen on (host, port); called once per listener. ``ssl_context`` makes it a TLS
        listener; ``connection`` builds its connections (default: ``ServerConnection``)."""
        loop = asyncio.get_running_loop()
        make = connection or ServerConnection
        # Bounded, so a client that stops halfway through a TLS handshake holds nothing.
        server = await loop.create_server(
            lambda: make(self), host, port, reuse_address=True, backlog=1024, ssl=ssl_context,
            ssl_handshake_timeout=TLS_HANDSHAKE_TIMEOUT_S if ssl_context else None,
        )
        self._servers.append(server)
        if self._idle_task is None:
            self._idle_task = loop.create_task(self._close_idle())
        sockname = server.sockets[0].getsockname()
        return sockname[0], sockname[1]

    def in_flight(self) -> int:
        """Requests read and not yet answered, over every connection (for metrics)."""
        return sum(len(conn._slots) for conn in self.connections)

    def queued(self) -> int:
        """Requests read and waiting to be dispatched, held back by their connection's budget
        or a client not reading its answers, over every connection (for metrics: Kafka's
        RequestQueueSize, the requests no handler has taken yet)."""
        return sum(len(conn._queued) for conn in self.connections)

    # --- the broker-wide request pool --------------------------------------------------------
    def memory_changed(self) -> None:
        """The pool filled up or drained: every connection re-decides whether it is read."""
        for conn in list(self.connections):
            conn._update_reading()

    def shed(self) -> None:
        """Past the ceiling: close connections holding the most unfinished and undispatched
        request bytes (those a stalled or hostile client can pile up) until below it."""
        pool = self.memory
        while pool.used > pool.ceiling:
            # Closing ones have given their bytes back already (abort) and stay in the set
            # until their transport reports the loss: never pick one twice.
            victim = max((c for c in self.connections if not c._closing), default=None,
                         key=lambda c: c._decoder.buffered + c._queued_bytes)
            if victim is None or victim._decoder.buffered + victim._queued_bytes == 0:
                return  # only dispatched requests left: they free themselves when answered
            pool.closed_total += 1
            victim.abort(f"broker-wide request memory past {pool.ceiling} bytes "
                         f"(request_memory_bytes={pool.limit}); this connection held the most "
                         f"unfinished or waiting request bytes ({victim.footprint()})")

    # --- connection limits ------------------------------------------------------------------
    def admit(self, conn: ServerConnection) -> bool:
        cfg = self.config
        if len(self.connections) >= cfg.max_connections:
            self._refuse(f"max_connections={cfg.max_connections} reached")
            return False
        count = self._per_ip.get(conn.ip, 0)
        if count >= cfg.max_connections_per_ip:
            self._refuse(f"max_connections_per_ip={cfg.max_connections_per_ip} reached by "
                         f"{conn.ip}")
            return False
        self._per_ip[conn.ip] = count + 1
        self.connections[conn] = None
        conn.admitted = True
        return True

    def release(self, conn: ServerConnection) -> None:
        if not conn.admitted:
            return
        conn.admitted = False
        self.connections.pop(conn, None)
        left = self._per_ip.get(conn.ip, 1) - 1
        if left > 0:
            self._per_ip[conn.ip] = left
        else:
            self._per_ip.pop(conn.ip, None)

    def _refuse(self, reason: str) -> None:
        self.refused_total += 1
        self._refused[reason] = self._refused.get(reason, 0) + 1
        now = time.monotonic()
        if now - self._refusal_logged >= REFUSAL_LOG_PERIOD_S:
            self._refusal_logged = now
            summary = "; ".join(f"{n} x {why}" for why, n in self._refused.items())
            self._refused.clear()
            log.warning("refused connections: %s", summary)

    # --- idle connections -------------------------------------------------------------------
    async def _close_idle(self) -> None:
        limit_s = self.config.connections_max_idle_ms / 1000
        # Checked a few times per limit (at most once a second), so a connection lives at most
        # ~1.25 x the limit idle; the sweep is O(connections) and nothing else.
        period = min(max(limit_s / 4, 0.01), 1.0)
        while True:
            await asyncio.sleep(period)
            now = time.monotonic()
            for conn in [c for c in self.connections if c.idle_for(now) > limit_s]:
                conn.abort(f"idle for more than {self.config.connections_max_idle_ms} ms")

    async def stop(self) -> None:
        if self._idle_task is not None:
            self._idle_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._idle_task
            self._idle_task = None
        if not self._servers:
            return
        for server in self._servers:
            server.close()
        for conn in list(self.connections):
            conn.abort("broker shutting down")
        for server in self._servers:
            await server.wait_closed()
        self._servers.clear()
