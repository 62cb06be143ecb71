"""One asyncio Kafka-protocol connection, built for measuring.

* An ``asyncio.Protocol`` (no streams layer): bytes are framed in ``data_received``; a complete
  frame that arrived in one read is handed on as a zero-copy memoryview of the received bytes,
  a frame spread over reads is assembled into one preallocated buffer (no quadratic growth for
  multi-megabyte fetch responses).
* Pipelining: any number of requests may be in flight; Kafka answers in request order on a
  connection, so pending requests sit in a deque and each response must carry the correlation id
  of the oldest one, else the connection is unusable and is closed (what real clients do).
* Latency: the time from handing the frame to the transport to the moment its response frame is
  complete, taken in ``data_received`` (before the waiting coroutine is even woken, so event-loop
  scheduling of the caller is not charged to the broker), in microseconds into a
  :class:`~workloads.latency.LatencyRecorder` per API key (or one the caller passes).
* :func:`new_event_loop` picks uvloop when it is installed (the fastest shape measured;
  docs/architecture.md, "Measuring on a small VM").
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from time import perf_counter_ns
from typing import Any, TypeVar

from brokers.core.allocator import pin_mmap_threshold
from brokers.core.errors import FrameTooLarge, ProtocolViolation, UnsupportedVersion
from brokers.core.protocol.api import decode_response
from brokers.core.protocol.schema import Message
from brokers.core.security.client import ClientSecurity, SaslClientExchange
from workloads import wire
from workloads.latency import LatencyRecorder

__all__ = [
    "BrokerConnection",
    "ConnectionClosed",
    "ConnectionConfig",
    "new_event_loop",
    "run",
]

T = TypeVar("T")
_SIZE = struct.Struct(">i")
_CORR = struct.Struct(">i")


def new_event_loop() -> asyncio.AbstractEventLoop:
    """uvloop's loop when available (fastest on this VM), else asyncio's default. Pins the
    allocator's mmap threshold first: a client's TLS reads pay what a broker's would
    (brokers/core/allocator.py)."""
    pin_mmap_threshold()
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency, but stay usable without it
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


def run(main: Awaitable[T] | Callable[[], Awaitable[T]]) -> T:
    """Run a coroutine to completion on a fresh loop from :func:`new_event_loop`."""
    with asyncio.Runner(loop_factory=new_event_loop) as runner:
        coro = main() if callable(main) else main
        # Runner.run is typed for coroutines; it runs any awaitable a caller passes here.
        return runner.run(coro)  # type: ignore[arg-type]


class ConnectionClosed(ConnectionError):
    """The connection died; every request still in flight fails with this."""


@dataclass(frozen=True)
class ConnectionConfig:
    # Sent in every request header; brokers log it.
    client_id: str = "twinbench"
    # Refuse response frames larger than this (checked before allocating).
    max_frame_bytes: int = 512 * 1024 * 1024
    # Give up opening a TCP connection after this long.
    connect_timeout_s: float = 10.0
    # A request not answered within this long fails the whole connection (a hung broker must
    # end a measurement, not freeze it). None waits forever.
    request_timeout_s: float | None = 60.0
    # A secured listener: TLS and/or SASL done when the connection opens (None: PLAINTEXT).
    security: ClientSecurity | None = None


class BrokerConnection(asyncio.Protocol):
    """The load client's connection to one broker (the broker's end is
    ``brokers.core.server.ServerConnection``). Use :meth:`open`; then :meth:`request` /
    :meth:`send_frame` return futures of the response frame (a memoryview starting at the
    correlation id; body at offset 4)."""

    def __init__(self, host: str, port: int, config: ConnectionConfig) -> None:
        self.host = host
        self.port = port
        self.config = config
        self.client_id = config.client_id.encode()
        self.loop = asyncio.get_running_loop()
        self.transport: asyncio.Transport | None = None
        # (correlation id, future, latency recorder, send time ns), oldest first.
        self._pending: deque[tuple[int, asyncio.Future, LatencyRecorder, int]] = deque()
        self._corr = 0
        # Framing state: partial size prefix, or the frame body being assembled.
        self._head = b""
        self._body: bytearray | None = None
        self._fill = 0
        self._closed: BaseException | None = None
        self._can_write: asyncio.Future | None = None
        # API key -> (min, max) version the broker supports (from ApiVersions).
        self.api_versions: dict[int, tuple[int, int]] = {}
        # API key -> latency of this connection's requests (µs).
        self.latency: dict[int, LatencyRecorder] = {}
        self._timeout_handle: asyncio.TimerHandle | None = None

    # -- life cycle ---------------------------------------------------------------------------
    @classmethod
    async def open(
        cls, host: str, port: int, config: ConnectionConfig | None = None, *, handshake: bool = True
    ) -> BrokerConnection:
        config = config or ConnectionConfig()
        loop = asyncio.get_running_loop()
        proto = cls(host, port, config)
        security = config.security
        ctx = security.ssl_context() if security is not None else None
        await asyncio.wait_for(
            loop.create_connection(lambda: proto, host, port, ssl=ctx,
                                   server_hostname=host if ctx is not None else None),
            config.connect_timeout_s,
        )
        try:
            if handshake:
                await proto.handshake()
            if security is not None and security.protocol.sasl:
                await proto.authenticate(security)
        except BaseException:
            proto.close()
            raise
        return proto

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses; they quack the same.
        self.transport = transport  # type: ignore[assignment]

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail(ConnectionClosed(f"{self.host}:{self.port}: connection lost ({exc})"))

    def close(self) -> None:
        self._fail(ConnectionClosed(f"{self.host}:{self.port}: closed by client"))

    @property
    def closed(self) -> bool:
        return self._closed is not None

    @property
    def in_flight(self) -> int:
        return len(self._pending)

    def _fail(self, exc: BaseException) -> None:
        if self._closed is None:
            self._closed = exc
        if self.transport is not None:
            self.transport.close()
        if self._timeout_handle is not None:
            self._timeout_handle.cancel()
            self._timeout_handle = None
        while self._pending:
            fut = self._pending.popleft()[1]
            if not fut.done():
                fut.set_exception(exc)
        # Wake writers; writable() then raises the stored exception.
        if self._can_write is not None and not self._can_write.done():
            self._can_write.set_result(None)
        self._can_write = None

    # -- flow control (large writes with the default loop collapse without it) ----------------
    def pause_writing(self) -> None:
        if self._can_write is None:
            self._can_write = self.loop.create_future()

    def resume_writing(self) -> None:
        if self._can_write is not None and not self._can_write.done():
            self._can_write.set_result(None)
        self._can_write = None

    @property
    def write_paused(self) -> bool:
        """True while the transport's buffer is above its high-water mark."""
        return self._can_write is not None

    async def writable(self) -> None:
        """Wait while the transport's write buffer is above its high-water mark."""
        while self._can_write is not None:
            await asyncio.shield(self._can_write)
        if self._closed is not None:
            raise self._closed

    # -- sending ------------------------------------------------------------------------------
    def next_correlation_id(self) -> int:
        self._corr = (self._corr + 1) & 0x7FFFFFFF
        return self._corr

    def _recorder(self, api_key: int) -> LatencyRecorder:
        rec = self.latency.get(api_key)
        if rec is None:
            rec = self.latency[api_key] = LatencyRecorder(f"api{api_key}")
        return rec

    def send_frame(
        self,
        frame: Any,
        api_key: int,
        recorder: LatencyRecorder | None = None,
        *,
        expect_response: bool = True,
    ) -> asyncio.Future:
        """Send a complete frame whose correlation id field (offset 8) we fill in here.

        ``frame`` must be a writable buffer (bytearray or a memoryview of one). The caller may
        reuse it once the returned future is done (the broker has then read all of it).
        """
        if self._closed is not None:
            raise self._closed
        corr = self._corr = (self._corr + 1) & 0x7FFFFFFF
        _CORR.pack_into(frame, wire.CORRELATION_OFFSET, corr)
        fut = self.loop.create_future()
        if expect_response:
            if recorder is None:
                recorder = self._recorder(api_key)
            self._pending.append((corr, fut, recorder, perf_counter_ns()))
            self.transport.write(frame)  # type: ignore[union-attr]  # set when connected
            if self._timeout_handle is None:
                self._arm_timeout()
        else:
            self.transport.write(frame)  # type: ignore[union-attr]  # set when connected
            fut.set_result(None)
        return fut

    def request(
        self,
        api_key: int,
        version: int,
        body: bytes | Iterable[Any],
        recorder: LatencyRecorder | None = None,
        *,
        expect_response: bool = True,
    ) -> asyncio.Future:
        """Send header + body (bytes or a list of buffers, as the codec's ``encode`` returns)."""
        if self._closed is not None:
            raise self._closed
        parts = [body] if isinstance(body, bytes | bytearray | memoryview) else list(body)
        size = sum(len(p) for p in parts)
        corr = self.next_correlation_id()
        header = wire.encode_request_header(size, api_key, version, corr, self.client_id)
        fut = self.loop.create_future()
        if expect_response:
            self._pending.append(
                (corr, fut, recorder or self._recorder(api_key), perf_counter_ns())
            )
        self.transport.writelines([header, *parts])  # type: ignore[union-attr]  # connected
        if expect_response:
            self._arm_timeout()
        else:
            fut.set_result(None)
        return fut

    def _arm_timeout(self) -> None:
        t = self.config.request_timeout_s
        if t is not None and self._timeout_handle is None:
            self._timeout_handle = self.loop.call_later(t, self._check_timeout)

    def _check_timeout(self) -> None:
        self._timeout_handle = None
        if not self._pending:
            return
        t = self.config.request_timeout_s
        assert t is not None
        age = (perf_counter_ns() - self._pending[0][3]) / 1e9
        if age >= t:
            self._fail(ConnectionClosed(f"{self.host}:{self.port}: request timed out after {t} s"))
        else:
            self._timeout_handle = self.loop.call_later(t - age, self._check_timeout)

    # -- receiving ----------------------------------------------------------------------------
    def data_received(self, data: bytes) -> None:
        try:
            self._receive(data)
        except ProtocolViolation as exc:
            self._fail(exc)

    def _receive(self, data: bytes) -> None:
        n = len(data)
        pos = 0
        mv = memoryview(data)
        while pos < n:
            body = self._body
            if body is not None:
                take = min(len(body) - self._fill, n - pos)
                body[self._fill : self._fill + take] = mv[pos : pos + take]
                self._fill += take
                pos += take
                if self._fill == len(body):
                    self._body = None
                    self._dispatch(memoryview(body))
                continue
            if self._head or n - pos < 4:
                need = 4 - len(self._head)
                self._head += bytes(mv[pos : pos + need])
                pos += min(need, n - pos)
                if len(self._head) < 4:
                    return
                size = _SIZE.unpack(self._head)[0]
                self._head = b""
            else:
                size = _SIZE.unpack_from(data, pos)[0]
                pos += 4
            if size < 4 or size > self.config.max_frame_bytes:
                if size < 4:
                    raise ProtocolViolation(f"response frame of {size} bytes")
                raise FrameTooLarge(size, self.config.max_frame_bytes)
            if n - pos >= size:
                self._dispatch(mv[pos : pos + size])
                pos += size
            else:
                self._body = bytearray(size)
                self._fill = 0

    def _dispatch(self, frame: memoryview) -> None:
        t1 = perf_counter_ns()
        if not self._pending:
            raise ProtocolViolation("response without a request")
        corr = _CORR.unpack_from(frame, 0)[0]
        expected = self._pending[0][0]
        if corr != expected:
            # Left pending so _fail() fails that request too.
            raise ProtocolViolation(f"correlation id {corr}, expected {expected}")
        _corr, fut, recorder, t0 = self._pending.popleft()
        recorder.record((t1 - t0) // 1000)
        if not fut.done():
            fut.set_result(frame)

    # -- conveniences -------------------------------------------------------------------------
    async def call(self, api_key: int, version: int, body: bytes | Iterable[Any]) -> memoryview:
        """Send and await one request; returns the response body (after the header)."""
        frame = await self.request(api_key, version, body)
        return frame[4:]

    async def handshake(self) -> None:
        """ApiVersions (v2, falling back to v0 as KIP-511 describes)."""
        for version in (2, 0):
            body = await self.call(wire.API_VERSIONS, version, b"")
            err, ranges = wire.decode_api_versions_response(body)
            if err == 0:
                self.api_versions = ranges
                return
            if err != UnsupportedVersion.code:
                break
        raise ProtocolViolation(f"{self.host}:{self.port}: ApiVersions failed with error {err}")

    async def authenticate(self, security: ClientSecurity) -> None:
        """The SASL exchange (SaslHandshake v1, SaslAuthenticate v1), before any other request
        than ApiVersions; AuthenticationError when the broker refuses."""
        exchange = SaslClientExchange(security)
        step: tuple[int, int, Message] | None = exchange.first()
        while step is not None:
            api_key, version, request = step
            body = await self.call(api_key, version, request.encode(version))
            step = exchange.next(decode_response(api_key, version, body))

    def pick_version(self, api_key: int, lo: int, hi: int) -> int:
        """Highest version in both our [lo, hi] and the broker's advertised range."""
        theirs = self.api_versions.get(api_key)
        if theirs is None:
            raise UnsupportedVersion(f"broker does not support API key {api_key}")
        v = min(hi, theirs[1])
        if v < max(lo, theirs[0]):
            raise UnsupportedVersion(
                f"API key {api_key}: we speak {lo}-{hi}, broker {theirs[0]}-{theirs[1]}"
            )
        return v

    async def aclose(self) -> None:
        self.close()
        with contextlib.suppress(Exception):
            await asyncio.sleep(0)
