"""An asyncio-native ZooKeeper session for the per-request data path.

Why it exists: kazoo hands every reply from its connection thread to its callback thread and
only then to the event loop. On this project's 2-core machine that costs far more than the
request itself: a ``getData`` takes 593 µs through kazoo against 134 µs on a plain asyncio
socket, and a ``setData`` 742 µs against 320 µs (3 concurrent callers, ZooKeeper 3.8 on
loopback; ``python -m harness.bench.perf_zk`` measures both side by side). Under the paper's
policies a broker issues one of these per produce and two per fetch, so without this module
most of what the benchmark charged to "ZooKeeper" was Python thread hand-offs that a Kafka
broker (Java's client, no GIL) never pays.

Scope, on purpose narrow: reads and writes of plain persistent znodes with no watch - the
leadership ``getData`` of ``metadata_check=per_request`` and the offset ``setData``/``getData``
of commits (a commit's setData goes out in one multi with its group's fence check,
``group_znodes.py``). The broker's registration, ephemerals, watches and other multis stay on
the kazoo session (``bridge.py``); this session owns nothing that dies with it, so losing it
is harmless: callers fall back to kazoo while it reconnects.

Consistency: ZooKeeper orders requests per session, and this is a second session. Against one
server (the benchmark's default) every acknowledged write is visible to both sessions. Against
an ensemble the two sessions may sit on different servers, and a read here can lag a write made
through kazoo by the replication delay - the same staleness any other broker's session sees.

Layout:
    ZkWire          sans-IO: connect handshake, request frames with xids, replies and pongs out
                    of received bytes (the jute records are kazoo's own serializers)
    DirectSession   asyncio: one TCP connection, handshake, pings, reconnect with back-off
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, cast

from kazoo.exceptions import (
    EXCEPTIONS,
    ConnectionLoss,
    OperationTimeoutError,
    SessionExpiredError,
    ZookeeperError,
)
from kazoo.protocol.serialization import (
    Auth,
    CheckVersion,
    Close,
    Connect,
    Exists,
    GetData,
    ReplyHeader,
    SetData,
    Transaction,
    int_int_struct,
    int_struct,
)

from brokers.core.protocol.framing import FrameDecoder

log = logging.getLogger(__name__)

# Reserved xids of ZooKeeper's client protocol.
_XID_WATCH_EVENT = -1
_XID_PING = -2
_XID_AUTH = -4
# Jute frames of the data path are small; anything beyond ZooKeeper's own 1 MiB jute.maxbuffer
# (plus headroom) is a broken stream, not a reply.
_MAX_FRAME = 4 * 1024 * 1024
_PING_FRAME = int_struct.pack(8) + int_int_struct.pack(_XID_PING, 11)


class JuteRequest(Protocol):
    """What kazoo's serializers have in common: an op code, a body, a reply decoder."""

    type: int

    def serialize(self) -> bytes | bytearray: ...

    @classmethod
    def deserialize(cls, bytes: Any, offset: int) -> Any: ...


# ------------------------------------------------------------------------------------------------
# sans-IO
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Handshake:
    """The server accepted the session (or, with ``timeout_ms <= 0``, refused to resume it)."""

    session_id: int
    timeout_ms: int


@dataclass(frozen=True)
class Reply:
    xid: int
    zxid: int
    err: int  # 0 = success; otherwise a ZooKeeper error code (kazoo.exceptions.EXCEPTIONS)
    body: bytes


@dataclass(frozen=True)
class Pong:
    pass


@dataclass(frozen=True)
class AuthReply:
    err: int  # 0: the credential was accepted (else the server closes the connection)


Event = Handshake | Reply | Pong | AuthReply


class ZkWire:
    """Bytes in, events out; frames to send are returned, never written."""

    def __init__(self) -> None:
        self._frames = FrameDecoder(_MAX_FRAME)
        self._xids = itertools.count(1)
        self._handshaken = False

    def connect(self, timeout_ms: int) -> bytes:
        # protocol 0, no zxid seen, a new session (id 0, empty password), not read-only.
        body = bytes(Connect(0, 0, timeout_ms, 0, b"\0" * 16, False).serialize())
        return int_struct.pack(len(body)) + body

    def request(self, req: JuteRequest) -> tuple[int, bytes]:
        """``(xid, frame)``: the xid the reply will carry, and the bytes to send."""
        xid = next(self._xids)
        body = int_int_struct.pack(xid, req.type) + bytes(req.serialize())
        return xid, int_struct.pack(len(body)) + body

    @staticmethod
    def ping() -> bytes:
        return _PING_FRAME

    @staticmethod
    def add_auth(scheme: str, credential: str) -> bytes:
        """An ``addauth`` request (its reply carries the reserved auth xid)."""
        body = int_int_struct.pack(_XID_AUTH, Auth.type) + bytes(
            Auth(0, scheme, credential).serialize())
        return int_struct.pack(len(body)) + body

    def close(self) -> bytes:
        return self.request(Close())[1]

    def receive(self, data: bytes) -> list[Event]:
        """Events in ``data`` (which may hold part of a frame, or several)."""
        out: list[Event] = []
        for view in self._frames.feed(data):
            frame = bytes(view)
            if not self._handshaken:
                self._handshaken = True
                connected, _ = Connect.deserialize(frame, 0)
                out.append(Handshake(connected.session_id, connected.time_out))
                continue
            header, offset = ReplyHeader.deserialize(frame, 0)
            if header.xid == _XID_PING:
                out.append(Pong())
            elif header.xid == _XID_AUTH:
                out.append(AuthReply(header.err))
            elif header.xid == _XID_WATCH_EVENT:
                continue  # this session sets no watches
            else:
                out.append(Reply(header.xid, header.zxid, header.err, frame[offset:]))
        return out


def decode_reply(req: JuteRequest, reply: Reply) -> Any:
    """kazoo's result for ``req`` (e.g. ``(data, ZnodeStat)`` for a GetData), or raise kazoo's
    exception for the reply's error code, exactly as a ``kazoo`` call would."""
    if reply.err:
        if reply.err == -101 and isinstance(req, Exists):  # NONODE: exists() says None
            return None
        try:
            error = EXCEPTIONS[reply.err]
        except RuntimeError:  # kazoo's table raises for codes it does not know
            raise ZookeeperError(f"ZooKeeper answered unknown error code {reply.err}") from None
        raise error()
    return req.deserialize(reply.body, 0)


# ------------------------------------------------------------------------------------------------
# asyncio
# ------------------------------------------------------------------------------------------------
class _Connection(asyncio.Protocol):
    """One TCP connection of a DirectSession. A new one per reconnect, so a late
    ``connection_lost`` of an old socket can never tear down its successor."""

    def __init__(self, session: DirectSession) -> None:
        self.session = session
        self.wire = ZkWire()
        self.transport: asyncio.Transport | None = None
        self.pending: dict[int, tuple[JuteRequest, asyncio.Future[Any]]] = {}
        self.handshake: asyncio.Future[Handshake] = asyncio.get_running_loop().create_future()
        # A failed handshake nobody awaits any more must not be reported as never retrieved.
        self.handshake.add_done_callback(lambda f: f.cancelled() or f.exception())
        self.authenticated: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self.authenticated.add_done_callback(lambda f: f.cancelled() or f.exception())
        self.last_heard = time.monotonic()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses, only duck-typed alike.
        self.transport = cast(asyncio.Transport, transport)
        self.transport.write(self.wire.connect(self.session.session_timeout_ms))

    def data_received(self, data: bytes) -> None:
        self.last_heard = time.monotonic()
        try:
            events = self.wire.receive(data)
        except Exception as exc:  # a corrupt stream: drop the connection, reconnect
            log.warning("direct ZooKeeper session: bad reply stream (%s), reconnecting", exc)
            self.abort(f"bad reply stream: {exc}")
            return
        for event in events:
            if isinstance(event, Reply):
                entry = self.pending.pop(event.xid, None)
                if entry is None or entry[1].done():
                    continue  # its caller timed out
                req, fut = entry
                try:
                    fut.set_result(decode_reply(req, event))
                except Exception as exc:
                    fut.set_exception(exc)
            elif isinstance(event, Handshake) and not self.handshake.done():
                self.handshake.set_result(event)
            elif isinstance(event, AuthReply) and not self.authenticated.done():
                self.authenticated.set_result(event.err)

    def connection_lost(self, exc: Exception | None) -> None:
        self.fail(f"connection lost: {exc!r}" if exc else "connection closed by the server")

    def abort(self, why: str) -> None:
        if self.transport is not None:
            self.transport.abort()
        self.fail(why)

    def fail(self, why: str) -> None:
        """Fail everything in flight; tell the session once."""
        if not self.handshake.done():
            self.handshake.set_exception(ConnectionLoss(why))
        if not self.authenticated.done():
            self.authenticated.set_exception(ConnectionLoss(why))
        pending, self.pending = self.pending, {}
        for _, fut in pending.values():
            if not fut.done():
                fut.set_exception(ConnectionLoss(why))
        self.session._connection_failed(self)


class DirectSession:
    """One ZooKeeper session on the event loop, reconnecting by itself until ``close()``.

    ``call(request)`` raises ``ConnectionLoss`` at once while the session is down (the data
    path then goes through kazoo), and fails every in-flight request with ``ConnectionLoss``
    when the connection drops. Each reconnect opens a new session: this one owns no
    ephemerals or watches, so there is nothing to resume.
    """

    def __init__(
        self,
        hosts: Sequence[tuple[str, int]],
        *,
        session_timeout_ms: int,
        connect_timeout_s: float,
        request_timeout_s: float,
        reconnect_max_delay_s: float,
        auth: tuple[str, str] | None = None,
    ) -> None:
        """``auth``: (scheme, credential) sent as ``addauth`` on every connection, and waited
        for, before the session counts as up."""
        if not hosts:
            raise ValueError("DirectSession needs at least one ZooKeeper address")
        self.hosts = tuple(hosts)
        self.session_timeout_ms = session_timeout_ms
        self.connect_timeout_s = connect_timeout_s
        self.request_timeout_s = request_timeout_s
        self.reconnect_max_delay_s = reconnect_max_delay_s
        self._auth = auth
        self.stats = {"zk_direct_connects": 0, "zk_direct_disconnects": 0}
        self._conn: _Connection | None = None  # set only while the session is usable
        self._negotiated_s = session_timeout_ms / 1000
        self._closed = False
        self._runner: asyncio.Task[None] | None = None
        self._lost = asyncio.Event()

    @property
    def connected(self) -> bool:
        return self._conn is not None

    # --- lifecycle -------------------------------------------------------------------------------
    async def start(self) -> bool:
        """Try to connect once, then keep the session alive (or keep trying) in the
        background. False if the first attempt failed: callers use kazoo meanwhile."""
        try:
            await self._connect_any()
        except ConnectionLoss as exc:
            log.warning("direct ZooKeeper session not up yet (%s); using kazoo meanwhile", exc)
        self._runner = asyncio.get_running_loop().create_task(self._run())
        return self.connected

    async def close(self) -> None:
        self._closed = True
        if self._runner is not None:
            self._runner.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._runner
        conn, self._conn = self._conn, None
        if conn is not None and conn.transport is not None:
            # Close the session explicitly so the server frees it now, not at its timeout.
            conn.transport.write(conn.wire.close())
            conn.transport.close()
            conn.fail("session closed")

    async def _run(self) -> None:
        """Ping while up; reconnect with back-off while down."""
        delay = 0.05
        while not self._closed:
            conn = self._conn
            if conn is not None:
                period = self._negotiated_s / 3
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._lost.wait(), period)
                if conn is not self._conn or conn.transport is None:
                    continue
                if time.monotonic() - conn.last_heard > 2 * period:
                    log.warning("direct ZooKeeper session: server silent, reconnecting")
                    conn.abort("server silent")
                else:
                    conn.transport.write(conn.wire.ping())
                continue
            try:
                await self._connect_any()
                delay = 0.05
            except ConnectionLoss:
                await asyncio.sleep(delay * (1 + random.random() / 2))
                delay = min(delay * 2, self.reconnect_max_delay_s)

    async def _connect_any(self) -> None:
        loop = asyncio.get_running_loop()
        last: BaseException | None = None
        for host, port in self.hosts:
            conn = _Connection(self)

            def protocol(c: _Connection = conn) -> _Connection:
                return c

            try:
                await asyncio.wait_for(
                    loop.create_connection(protocol, host, port), self.connect_timeout_s
                )
                hs = await asyncio.wait_for(conn.handshake, self.connect_timeout_s)
                if self._auth is not None and hs.timeout_ms > 0 and conn.transport is not None:
                    conn.transport.write(conn.wire.add_auth(*self._auth))
                    if await asyncio.wait_for(conn.authenticated, self.connect_timeout_s):
                        raise ConnectionLoss("ZooKeeper refused the session's credential")
            except (OSError, TimeoutError, ConnectionLoss) as exc:
                last = exc
                conn.abort(f"connect to {host}:{port} failed")
                continue
            if hs.timeout_ms <= 0:
                last = SessionExpiredError()
                conn.abort("session refused")
                continue
            if self._closed:
                conn.abort("session closed")
                break
            self._negotiated_s = hs.timeout_ms / 1000
            self._lost.clear()
            self._conn = conn
            self.stats["zk_direct_connects"] += 1
            return
        raise ConnectionLoss(f"no ZooKeeper server answered the direct session: {last!r}")

    def _connection_failed(self, conn: _Connection) -> None:
        if conn is self._conn:
            self._conn = None
            self.stats["zk_direct_disconnects"] += 1
            self._lost.set()

    # --- requests --------------------------------------------------------------------------------
    async def call(self, req: JuteRequest) -> Any:
        conn = self._conn
        if conn is None or conn.transport is None:
            raise ConnectionLoss("direct ZooKeeper session is down")
        xid, frame = conn.wire.request(req)
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[Any] = loop.create_future()
        conn.pending[xid] = (req, fut)
        conn.transport.write(frame)
        # A bare timer rather than asyncio.wait_for: this is the hot path, and wait_for costs
        # a waiter future and callbacks per request.
        timer = loop.call_later(self.request_timeout_s, _expire, fut, self.request_timeout_s)
        try:
            return await fut
        finally:
            timer.cancel()
            conn.pending.pop(xid, None)

    async def get(self, path: str) -> Any:
        """``(data, ZnodeStat)``, as kazoo's ``get``."""
        return await self.call(GetData(path, None))

    async def set(self, path: str, data: bytes, version: int = -1) -> Any:
        """The new ``ZnodeStat``, as kazoo's ``set``."""
        return await self.call(SetData(path, data, version))

    async def checked_set(self, check_path: str, version: int, path: str, data: bytes
                          ) -> list[Any]:
        """One multi: ``check_path`` still at ``version``, then setData ``path``. kazoo's
        per-operation results (exceptions in place of failed ones), as a kazoo multi."""
        return cast(list[Any], await self.call(
            Transaction([CheckVersion(check_path, version), SetData(path, data, -1)])))


def _expire(fut: asyncio.Future[Any], timeout_s: float) -> None:
    if not fut.done():
        fut.set_exception(
            OperationTimeoutError(f"ZooKeeper request took longer than {timeout_s:.1f} s")
        )
