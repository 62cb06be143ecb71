"""The one place where kazoo's threads meet the asyncio event loop.

kazoo runs a connection thread and a callback thread. Everything it hands back arrives on one of
them: async results (``*_async`` calls), watch callbacks and connection-state changes. Nothing
else in ``brokers.zk_broker`` may touch the loop from those threads, or the broker's state could
be mutated concurrently with the handlers reading it. The rules here:

* requests use kazoo's ``*_async`` methods; the ``IAsyncResult`` is linked to an asyncio future
  and the result crosses over with ``call_soon_threadsafe`` (no thread pool per request);
* watch callbacks and state listeners are wrapped so that the real callback runs *on the loop*;
* the few truly blocking kazoo calls (``start``, ``stop``, ``close``) run in the default
  executor.

The bridge also counts what this broker asks of ZooKeeper (``counters()``), because the whole
point of the benchmark is what coordination costs.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Callable
from typing import Any, TypeVar

from kazoo.client import KazooClient, KazooState, TransactionRequest
from kazoo.protocol.states import WatchedEvent

log = logging.getLogger(__name__)
T = TypeVar("T")

# kazoo method -> counter bucket. A multi (transaction) is one request on the wire.
_READS = {"get", "get_children", "exists"}
_WRITES = {"create", "set", "delete"}


class BridgeTimeout(Exception):
    """A ZooKeeper request did not complete within the bridge's request timeout."""


class KazooBridge:
    """Runs kazoo requests for coroutines and delivers kazoo callbacks onto ``loop``."""

    def __init__(
        self, client: KazooClient, loop: asyncio.AbstractEventLoop, request_timeout_s: float
    ) -> None:
        self.client = client
        self.loop = loop
        self.request_timeout_s = request_timeout_s
        self.stats: Counter[str] = Counter()
        # Stable thread-side wrappers, one per loop-side callback. kazoo keeps watchers in a set
        # per path; the same wrapper object registered twice is one watcher, so re-reading a
        # znode after every event does not pile up duplicate notifications.
        self._watchers: dict[Callable[[WatchedEvent], None], Callable[[WatchedEvent], None]] = {}

    # --- crossing from kazoo threads to the loop -----------------------------------------------
    def _post(self, fn: Callable[..., Any], *args: Any) -> None:
        """Schedule ``fn(*args)`` on the loop from any thread; a closed loop drops it."""
        try:
            self.loop.call_soon_threadsafe(fn, *args)
        except RuntimeError:
            # The loop is closed: the coordinator is gone, nobody is left to tell.
            log.debug("dropping a kazoo callback after the event loop closed")

    def watcher(self, fn: Callable[[WatchedEvent], None]) -> Callable[[WatchedEvent], None]:
        """A kazoo watch callback that runs ``fn(event)`` on the loop."""
        wrapped = self._watchers.get(fn)
        if wrapped is None:

            def wrapped(event: WatchedEvent) -> None:
                self._post(self._count_event, fn, event)

            self._watchers[fn] = wrapped
        return wrapped

    def _count_event(self, fn: Callable[[WatchedEvent], None], event: WatchedEvent) -> None:
        self.stats["zk_watch_events"] += 1
        fn(event)

    def add_state_listener(self, fn: Callable[[KazooState], None]) -> None:
        """Run ``fn(state)`` on the loop for every SUSPENDED/LOST/CONNECTED transition."""

        def listener(state: KazooState) -> bool:
            self._post(fn, state)
            return False  # True would unregister the listener

        self.client.add_listener(listener)

    # --- requests ------------------------------------------------------------------------------
    async def _await(self, async_result: Any) -> Any:
        fut: asyncio.Future[Any] = self.loop.create_future()

        def settle(value: Any, exc: BaseException | None) -> None:
            if fut.done():  # cancelled or timed out meanwhile
                return
            if exc is not None:
                fut.set_exception(exc)
            else:
                fut.set_result(value)

        def done(result: Any) -> None:  # runs on a kazoo thread
            try:
                value = result.get_nowait()
            except Exception as exc:
                self._post(settle, None, exc)
            else:
                self._post(settle, value, None)

        async_result.rawlink(done)
        try:
            return await asyncio.wait_for(fut, self.request_timeout_s)
        except TimeoutError:
            self.stats["zk_request_timeouts"] += 1
            raise BridgeTimeout(
                f"ZooKeeper request took longer than {self.request_timeout_s:.1f} s"
            ) from None

    async def call(self, op: str, *args: Any, **kwargs: Any) -> Any:
        """``client.<op>_async(*args, **kwargs)`` awaited on the loop; kazoo's exceptions
        (NoNodeError, NodeExistsError, BadVersionError, ConnectionLoss...) propagate."""
        self.count(op)
        return await self._await(getattr(self.client, f"{op}_async")(*args, **kwargs))

    def count(self, op: str, *, direct: bool = False) -> None:
        """Count one request named like kazoo's method, also for those that do not go
        through kazoo (``direct``: the data-path session of ``direct.py``), so that
        ``zk_requests`` is every request this broker made whichever client carried it."""
        self.stats["zk_requests"] += 1
        self.stats[
            "zk_reads" if op in _READS else "zk_writes" if op in _WRITES else "zk_other"
        ] += 1
        if direct:
            self.stats["zk_direct_requests"] += 1

    def transaction(self) -> TransactionRequest:
        return self.client.transaction()

    async def commit(self, txn: TransactionRequest, *, counted_as: str | None = None
                     ) -> list[Any]:
        """Commit a multi; returns kazoo's per-operation results (exceptions included).
        ``counted_as``: the one request it stands for (a fenced commit's multi is its
        ``set``, so the tallies do not depend on the fence), else a multi."""
        if counted_as is not None:
            self.count(counted_as)
        else:
            self.stats["zk_requests"] += 1
            self.stats["zk_multi"] += 1
        return await self._await(txn.commit_async())

    async def run_blocking(self, fn: Callable[..., T], *args: Any) -> T:
        """A blocking kazoo call (start/stop/close) in the default executor."""
        return await self.loop.run_in_executor(None, fn, *args)

    def counters(self) -> dict[str, int]:
        """The request tally, keyed by brokers.zk_broker.counters.ZkCounters's names."""
        return dict(self.stats)
