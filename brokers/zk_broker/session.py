"""ZkSession: the ZooKeeper session every part of the zk coordinator shares.

It owns the kazoo client and its bridge (``bridge.py``, where kazoo's threads meet the loop),
and, with ``data_path == "direct"``, the data path's own asyncio session (``direct.py``). The
parts of the coordinator (``cache.py``, ``election.py``, ``group_znodes.py``, ``producer_ids.py``,
``topics.py``) reach ZooKeeper only through it:

* ``bridge`` for metadata and registry requests, ``data()`` and ``checked_set()`` for the
  data path's reads and writes (the direct session when it is up, kazoo otherwise);
* ``connected``: a usable session right now. The coordinator's session handling sets it
  (False on SUSPENDED/LOST, True once a reconnection has restored what this broker owns);
* ``require()`` and ``retriable()``: a group or producer-id call fails with
  CoordinatorNotAvailable (retriable) while ZooKeeper cannot answer, rather than pretending.

Which kazoo errors mean "cannot answer right now" is ``UNAVAILABLE``; anything else kazoo raises
(NoNode, BadVersion...) is a real answer the caller handles.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import (
    ConnectionClosedError,
    ConnectionLoss,
    NodeExistsError,
    NoNodeError,
    OperationTimeoutError,
    SessionExpiredError,
    SessionMovedError,
)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.retry import KazooRetry

from brokers.core.coordinator import BrokerInfo
from brokers.core.errors import CoordinatorNotAvailable, KafkaError, UserError
from brokers.zk_broker import paths as fmt
from brokers.zk_broker.acl import SCHEME
from brokers.zk_broker.bridge import BridgeTimeout, KazooBridge
from brokers.zk_broker.config import ZkCoordinatorConfig
from brokers.zk_broker.direct import DirectSession
from brokers.zk_broker.paths import ZkPaths

T = TypeVar("T")

# Errors meaning "ZooKeeper cannot answer right now" (connection loss, expired session, closed
# client, a request past its timeout). Group calls turn them into CoordinatorNotAvailable.
UNAVAILABLE = (
    ConnectionLoss,
    SessionExpiredError,
    SessionMovedError,
    ConnectionClosedError,
    OperationTimeoutError,
    BridgeTimeout,
    KazooTimeoutError,
)


class RunningDeadline:
    """A deadline on the time this process ran. A wait that took far longer than it asked
    for (the process was paused, or starved on a loaded host) moves the deadline on by the
    excess: such a process must not give up the moment it runs again, on time it never had
    to look. Only waits are forgiven; a request is bounded by its own timeout."""

    # How much longer than asked a wait may take before the excess counts as not running.
    SLACK_S = 1.0

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._at = time.monotonic() + seconds

    def passed(self) -> bool:
        return time.monotonic() > self._at

    async def sleep(self, delay_s: float) -> None:
        t0 = time.monotonic()
        await asyncio.sleep(delay_s)
        excess = time.monotonic() - t0 - delay_s
        if excess > self.SLACK_S:
            self._at += excess


class ZooKeeperUnreachable(UserError):
    """ZooKeeper did not answer at start-up; the broker exits non-zero with this message."""


class ZkSession:
    """One broker's session with ZooKeeper; every method runs on the event loop."""

    def __init__(self, config: ZkCoordinatorConfig, node_id: int, paths: ZkPaths) -> None:
        self.config = config
        self.node_id = node_id
        self.paths = paths
        self.client: KazooClient | None = None
        self._bridge: KazooBridge | None = None
        # The data path's own session (config.data_path == "direct"); None = all via kazoo.
        self.direct: DirectSession | None = None
        # The session id our ephemerals belong to: recorded once registration succeeded.
        self.id: int | None = None
        self.connected = False  # a usable session right now
        self.closed = False
        self._ensured: set[str] = set()

    @property
    def bridge(self) -> KazooBridge:
        if self._bridge is None:
            raise CoordinatorNotAvailable("the ZooKeeper coordinator is not started")
        return self._bridge

    # --- lifecycle -----------------------------------------------------------------------------
    async def connect(self, on_state: Callable[[KazooState], None]) -> None:
        """Start kazoo's session; ``on_state`` then gets every state change on the loop."""
        if self.client is not None:
            raise RuntimeError("ZkCoordinator.start() called twice")
        cfg = self.config
        digest = cfg.digest
        self.client = KazooClient(
            hosts=cfg.connect,
            timeout=cfg.session_timeout_ms / 1000,
            # Sent on every (re)connect before any request; every create without an explicit
            # ACL (kazoo's create, ensure_path, transactions) then gets default_acl.
            auth_data=None if digest is None else [(SCHEME, digest.credential)],
            default_acl=None if digest is None else digest.acl(),
            # Retry connecting forever, but never back off beyond reconnect_max_delay_ms.
            connection_retry=KazooRetry(
                max_tries=-1,
                delay=0.05,
                backoff=2,
                max_jitter=0.05,
                max_delay=cfg.reconnect_max_delay_ms / 1000,
            ),
        )
        self._bridge = KazooBridge(
            self.client, asyncio.get_running_loop(), cfg.request_timeout_ms / 1000
        )
        try:
            await self._bridge.run_blocking(self.client.start, cfg.connection_timeout_ms / 1000)
        except KazooTimeoutError:
            self.client = None
            raise ZooKeeperUnreachable(
                f"broker {self.node_id}: cannot reach ZooKeeper at {cfg.connect} within "
                f"{cfg.connection_timeout_ms} ms; is it running? (`twinbench` starts one "
                "itself; otherwise pass --zookeeper HOST:PORT of a running server)"
            ) from None
        self.id = self.current_id()
        self._bridge.add_state_listener(on_state)

    async def start_data_path(self) -> None:
        """Open the direct session when the config asks for one."""
        cfg = self.config
        if cfg.data_path != "direct":
            return
        self.direct = DirectSession(
            cfg.endpoints(),
            session_timeout_ms=cfg.session_timeout_ms,
            connect_timeout_s=cfg.connection_timeout_ms / 1000,
            request_timeout_s=cfg.request_timeout_ms / 1000,
            reconnect_max_delay_s=cfg.reconnect_max_delay_ms / 1000,
            auth=None if cfg.digest is None else (SCHEME, cfg.digest.credential),
        )
        await self.direct.start()

    def client_connected(self) -> bool:
        """kazoo has a session right now (it makes a new one by itself after an expiry)."""
        return self.client is not None and bool(self.client.connected)

    def current_id(self) -> int | None:
        """The id of kazoo's session right now (a new one after an expiry)."""
        client = self.client
        return client.client_id[0] if client is not None and client.client_id else None

    async def close(self) -> None:
        """Close the direct session, then end kazoo's session."""
        direct, self.direct = self.direct, None
        if direct is not None:
            await direct.close()
        client, self.client = self.client, None
        if client is not None and self._bridge is not None:
            # stop() ends the session: ZooKeeper deletes our ephemerals at once, so the others
            # see this broker leave now rather than a session timeout later.
            with contextlib.suppress(Exception):
                await self._bridge.run_blocking(client.stop)
            with contextlib.suppress(Exception):
                await self._bridge.run_blocking(client.close)

    # --- requests ------------------------------------------------------------------------------
    def require(self) -> KazooBridge:
        """The bridge, or CoordinatorNotAvailable while the session is not usable."""
        if not self.connected or self.closed:
            raise CoordinatorNotAvailable("ZooKeeper session is not connected")
        return self.bridge

    @staticmethod
    async def retriable(coro: Awaitable[T]) -> T:
        """Await ``coro``; ZooKeeper being unavailable becomes CoordinatorNotAvailable."""
        try:
            return await coro
        except KafkaError:
            raise
        except UNAVAILABLE as exc:
            raise CoordinatorNotAvailable(f"ZooKeeper: {type(exc).__name__}") from exc

    async def data(self, op: str, path: str, *args: bytes) -> Any:
        """A data-path ``get`` or ``set``: through the direct session when it is up, else
        kazoo. One the direct session loses mid-flight is asked again through kazoo; both are
        idempotent (a read, an unconditional setData of the same bytes)."""
        direct = self.direct
        if direct is not None and direct.connected:
            self.bridge.count(op, direct=True)
            with contextlib.suppress(ConnectionLoss):
                return await getattr(direct, op)(path, *args)
        return await self.bridge.call(op, path, *args)

    async def checked_set(self, check_path: str, version: int, path: str, data: bytes
                          ) -> list[Any]:
        """``data("set", path, data)`` in one multi with a check that ``check_path`` is still
        at ``version``; kazoo's per-operation results. Counted as the setData it carries."""
        direct = self.direct
        if direct is not None and direct.connected:
            self.bridge.count("set", direct=True)
            with contextlib.suppress(ConnectionLoss):
                return await direct.checked_set(check_path, version, path, data)
        txn = self.bridge.transaction()
        txn.check(check_path, version)
        txn.set_data(path, data)
        return await self.bridge.commit(txn, counted_as="set")

    async def ensure_path(self, path: str) -> None:
        """Create a persistent path and its parents if missing (remembered once done)."""
        if path in self._ensured or path == "/":
            return
        try:
            await self.bridge.call("create", path, b"")
        except NodeExistsError:
            pass
        except NoNodeError:
            await self.ensure_path(path.rsplit("/", 1)[0] or "/")
            with contextlib.suppress(NodeExistsError):
                await self.bridge.call("create", path, b"")
        self._ensured.add(path)

    def forget_paths(self, prefix: str) -> None:
        """Paths under ``prefix`` were deleted (a topic's): ``ensure_path`` creates them again."""
        self._ensured = {p for p in self._ensured
                         if p != prefix and not p.startswith(prefix + "/")}

    async def register_broker(self, me: BrokerInfo, session: int | None = None) -> None:
        """Create ephemeral /brokers/ids/<id>, waiting out a previous session's leftover."""
        session = self.id if session is None else session
        b = self.bridge
        path = self.paths.broker(self.node_id)
        data = fmt.encode_broker(me, protocol=self.config.security_protocol)
        # An old session of ours (a crashed process, or this one before LOST) may still hold
        # the node until ZooKeeper expires it: wait that long (Kafka gives up at once), then
        # give up. Only an answer naming another owner ends the wait: ZooKeeper not answering
        # past the deadline is raised as itself, for the caller to wait out on a new session.
        deadline = RunningDeadline(2 * self.config.session_timeout_ms / 1000)
        delay = 0.05
        while True:
            try:
                await b.call("create", path, data, ephemeral=True)
                return
            except NodeExistsError:
                stat = await b.call("exists", path)
                if stat is not None and stat.ephemeralOwner == session:
                    return
                if deadline.passed():
                    raise UserError(
                        f"broker id {self.node_id} is registered in ZooKeeper by another live "
                        "session: is a second broker running with the same node id?"
                    ) from None
            except (BridgeTimeout, ConnectionLoss):
                # A slow or briefly unreachable ZooKeeper (busy expiring sessions, a loaded
                # host): ask again rather than fail the broker's start.
                if deadline.passed():
                    raise
            await deadline.sleep(delay)
            delay = min(delay * 2, 0.5)

    def counters(self) -> dict[str, float]:
        """What this broker asked of ZooKeeper, over kazoo and the direct session."""
        out: dict[str, float] = {}
        if self._bridge is not None:
            out |= self._bridge.counters()
        if self.direct is not None:
            out |= {k: float(v) for k, v in self.direct.stats.items()}
        return out
