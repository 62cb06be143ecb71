"""The virtual clock, one event loop per simulated process, and the scheduler that steps them.

A ``SimLoop`` is asyncio's selector loop with three changes: its clock is the world's, its
selector never waits (there are no real sockets to wait on), and ``run_in_executor`` runs the
function at once (``asyncio.to_thread`` becomes a plain call, so no thread decides an order).
The ``World`` steps, each time, the loop whose next callback is due first (ties go to the loop
stepped longest ago), after moving the clock to that moment. Same seed, same interleaving.

``virtual_time()`` points ``time.monotonic`` and ``time.time`` (and their ``_ns`` forms) at the
world's clock while a simulation runs: the product reads them directly (lag times, idle
connections, offset stamps), and each process may see its own wall-clock offset.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import itertools
import random
import selectors
import socket
import sys
import threading
import time
import warnings
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, TypeVar

T = TypeVar("T")

# The monotonic clock starts here rather than at 0 (code may treat 0 as "never").
MONOTONIC_BASE = 1_000.0
# And the wall clock here (2023-11-14), so stamps look like stamps.
WALL_BASE = 1_700_000_000.0


class SimStalled(RuntimeError):
    """Nothing is due anywhere and the awaited condition does not hold."""


class _NullSelector(selectors.BaseSelector):
    """Registrations are kept (the loop's self-pipe registers one); nothing is ever ready."""

    def __init__(self) -> None:
        self._map: dict[Any, selectors.SelectorKey] = {}

    def register(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        fd = fileobj if isinstance(fileobj, int) else fileobj.fileno()
        key = selectors.SelectorKey(fileobj, fd, events, data)
        self._map[fileobj] = key
        return key

    def unregister(self, fileobj: Any) -> selectors.SelectorKey:
        return self._map.pop(fileobj)

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        return []

    def get_map(self) -> dict[Any, selectors.SelectorKey]:
        return self._map

    def close(self) -> None:
        self._map.clear()


class SimLoop(asyncio.SelectorEventLoop):
    """The event loop of one simulated process (``name``) in ``world``."""

    def __init__(self, world: World, name: str) -> None:
        super().__init__(_NullSelector())
        self.world = world
        self.name = name
        self.alive = True
        self.last_step = 0  # the world's step count when this loop last ran (fair ties)
        self.busy_until = 0.0  # its last iteration's CPU time ends here

    def time(self) -> float:
        return self.world.now + MONOTONIC_BASE

    def run_in_executor(  # type: ignore[override]
        self, executor: Any, func: Callable[..., T], *args: Any
    ) -> asyncio.Future[T]:
        fut: asyncio.Future[T] = self.create_future()
        try:
            fut.set_result(func(*args))
        except BaseException as exc:  # handed to the awaiting code, as a thread would hand it
            fut.set_exception(exc)
        return fut

    # --- networking: the world's network -----------------------------------------------------
    async def create_server(self, protocol_factory: Callable[[], asyncio.BaseProtocol],
                            host: Any = None, port: Any = None, **kwargs: Any) -> Any:
        return self.world.net.listen(self, protocol_factory, str(host), int(port))

    async def create_connection(self, protocol_factory: Callable[[], asyncio.BaseProtocol],
                                host: Any = None, port: Any = None, **kwargs: Any) -> Any:
        return await self.world.net.connect(self, protocol_factory, str(host), int(port))

    async def create_datagram_endpoint(self, protocol_factory: Callable[[], Any],
                                       local_addr: Any = None, remote_addr: Any = None,
                                       **kwargs: Any) -> Any:
        return self.world.net.bind_datagram(self, protocol_factory, local_addr)

    async def getaddrinfo(self, host: Any, port: Any, *, family: int = 0, type: int = 0,
                          proto: int = 0, flags: int = 0) -> list[Any]:
        return [(socket.AF_INET, type or socket.SOCK_STREAM, proto, "", (str(host), port))]

    # --- stepping ----------------------------------------------------------------------------
    def due(self) -> float | None:
        """When this loop next has something to run (None: nothing scheduled at all)."""
        free = max(self.world.now, self.busy_until)
        if self._ready:  # type: ignore[attr-defined]
            return free
        scheduled = self._scheduled  # type: ignore[attr-defined]
        if scheduled:
            return max(free, scheduled[0]._when - MONOTONIC_BASE)
        return None

    def step(self) -> None:
        """One iteration: due timers become ready, and everything ready runs."""
        self._thread_id = threading.get_ident()
        asyncio.events._set_running_loop(self)
        try:
            self._run_once()  # type: ignore[attr-defined]
        finally:
            asyncio.events._set_running_loop(None)
            self._thread_id = None  # type: ignore[assignment]


class World:
    """The scheduler: every process's loop, the clock, who is paused, the network."""

    def __init__(self, net_factory: Callable[[World], Any], *, seed: int = 0,
                 cpu_s: tuple[float, float] = (0.0, 0.0)) -> None:
        self.now = 0.0
        # What one loop iteration costs its process, drawn per iteration: the process runs
        # nothing else meanwhile (other processes do: each has a core of its own). Without it
        # a broker answers in no time, and the windows a fault must hit (a batch appended and
        # not yet copied) shrink to the network's latency.
        self.cpu_s = cpu_s
        self._rng = random.Random(seed)
        self.loops: dict[str, SimLoop] = {}
        self.paused: set[str] = set()
        self.current: str | None = None  # the process whose loop is running
        self.clock_offsets: dict[str, float] = {}  # wall-clock steps per process
        self._steps = itertools.count(1)
        self._dead: list[SimLoop] = []  # abandoned loops, closed when the world is
        self.net = net_factory(self)

    def spawn(self, name: str) -> SimLoop:
        """A fresh process named ``name`` (a restart replaces a killed one's loop)."""
        old = self.loops.get(name)
        if old is not None and old.alive:
            raise RuntimeError(f"{name} is still running")
        loop = SimLoop(self, name)
        self.loops[name] = loop
        self.paused.discard(name)
        return loop

    def kill(self, name: str) -> None:
        """SIGKILL: the loop never runs again; the network ends its connections."""
        loop = self.loops[name]
        loop.alive = False
        self.paused.discard(name)
        self._dead.append(loop)
        self.net.died(name)

    def pause(self, name: str) -> None:
        self.paused.add(name)

    def resume(self, name: str) -> None:
        self.paused.discard(name)

    def alive(self, name: str) -> bool:
        loop = self.loops.get(name)
        return loop is not None and loop.alive

    def wall_time(self) -> float:
        offset = self.clock_offsets.get(self.current, 0.0) if self.current else 0.0
        return WALL_BASE + self.now + offset

    # --- running -----------------------------------------------------------------------------
    def _next(self) -> tuple[float, SimLoop] | None:
        best: tuple[float, int, SimLoop] | None = None
        for name, loop in self.loops.items():
            if not loop.alive or name in self.paused:
                continue
            due = loop.due()
            if due is not None and (best is None or (due, loop.last_step) < best[:2]):
                best = (due, loop.last_step, loop)
        return None if best is None else (best[0], best[2])

    def step_until(self, deadline: float) -> bool:
        """Run one loop iteration due at or before ``deadline``; False when none is (the clock
        then moves to the deadline)."""
        nxt = self._next()
        if nxt is None or nxt[0] > deadline:
            self.now = max(self.now, deadline)
            return False
        due, loop = nxt
        self.now = max(self.now, due)
        loop.last_step = next(self._steps)
        self.current = loop.name
        try:
            loop.step()
        finally:
            self.current = None
        lo, hi = self.cpu_s
        if hi > 0:
            loop.busy_until = self.now + self._rng.uniform(lo, hi)
        return True

    def advance(self, seconds: float) -> None:
        """Let ``seconds`` of virtual time pass."""
        deadline = self.now + seconds
        while self.step_until(deadline):
            pass

    def run_until(self, condition: Callable[[], bool], timeout_s: float,
                  what: str = "the condition") -> None:
        """Step until ``condition()`` holds; SimStalled after ``timeout_s`` of virtual time."""
        deadline = self.now + timeout_s
        while not condition():
            if not self.step_until(deadline) and self.now >= deadline:
                raise SimStalled(f"{what} did not hold within {timeout_s:g} s of virtual time")

    def start(self, name: str, coro: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
        """Run ``coro`` as a task of process ``name``."""
        return self.loops[name].create_task(coro)

    def run(self, name: str, coro: Coroutine[Any, Any, T], timeout_s: float = 60.0) -> T:
        """Run ``coro`` in process ``name`` to its end, everything else running meanwhile."""
        task = self.start(name, coro)
        self.run_until(task.done, timeout_s, f"{getattr(coro, '__name__', coro)} on {name}")
        return task.result()

    def close(self) -> None:
        """Drop every process without running it again. Their coroutines are closed by the
        garbage collector here, not at some later moment inside another simulation; what
        their ``finally`` blocks fail to do on a dead loop is swallowed (it is not news)."""
        loops = [*self._dead, *self.loops.values()]
        self._dead.clear()
        self.loops.clear()
        saved = sys.unraisablehook
        sys.unraisablehook = lambda _: None
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # coroutines never awaited: they died with it
                for loop in loops:
                    for task in asyncio.all_tasks(loop):
                        task._log_destroy_pending = False  # type: ignore[attr-defined]
                    for handle in [*loop._ready, *loop._scheduled]:  # type: ignore[attr-defined]
                        handle.cancel()
                    loop._ready.clear()  # type: ignore[attr-defined]
                    loop._scheduled.clear()  # type: ignore[attr-defined]
                    with contextlib.suppress(Exception):
                        loop.close()
                # Every name bound to a loop goes before the collection (the for loops' own
                # too), or that loop's coroutines are collected later, outside this hook.
                loops = loop = task = handle = None  # type: ignore[assignment]
                gc.collect()
        finally:
            sys.unraisablehook = saved


@contextlib.contextmanager
def virtual_time(world: World) -> Iterator[None]:
    """``time.monotonic``/``time.time`` read ``world``'s clock until the block ends."""
    saved = (time.monotonic, time.monotonic_ns, time.time, time.time_ns)

    def monotonic() -> float:
        return world.now + MONOTONIC_BASE

    def wall() -> float:
        return world.wall_time()

    time.monotonic = monotonic
    time.monotonic_ns = lambda: int(monotonic() * 1e9)
    time.time = wall
    time.time_ns = lambda: int(wall() * 1e9)
    try:
        yield
    finally:
        time.monotonic, time.monotonic_ns, time.time, time.time_ns = saved


def later(loop: asyncio.AbstractEventLoop, at: float, fn: Callable[..., Any], *args: Any) -> None:
    """Run ``fn(*args)`` on ``loop`` at world time ``at`` (runs when the loop is next stepped
    from then on: a paused process gets it on resume)."""
    loop.call_at(at + MONOTONIC_BASE, fn, *args)


__all__ = ["SimLoop", "SimStalled", "World", "later", "virtual_time"]
