"""A load worker on a client host as one part of a session's load (harness/driver/load.py).

``RemotePart`` speaks to ``python -m harness.remote.worker`` over its SSH session (JSON lines,
harness/remote/channel.py) from the fleet's event loop; the driver's loop awaits it through
``SshFleet.submit``. What crosses the wire is ``Job`` and ``PartOutcome`` in their JSON forms,
with times moved between clocks:

    driver perf_counter + delta = worker perf_counter,
    delta = (driver's time.time() - perf_counter()) + clock offset - (worker's, its "anchor")

where the clock offset is the host's, measured when the fleet logged in (the shortest of
several round trips: harness/hosts.py). A result's times come back minus ``delta``; a job's
timeline start goes out plus ``delta``, and its end-to-end cut-off (wall-clock µs) plus the
offset. So every part's phase times are on the driver's clock, within the offset's error.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import Mapping
from typing import Any

import asyncssh

from harness.cluster.external import External
from harness.driver.load import Job, Load, PartOutcome, client_config, share
from harness.remote.channel import decode, encode
from harness.remote.ssh import RemoteMachine, SshFleet, heartbeat
from harness.remote.worker import LINE_LIMIT
from harness.workload import Workload
from workloads.cluster import ClusterClient, ClusterClientConfig

# How long a worker may take to start and open its client connections.
OPEN_TIMEOUT_S = 120.0


class WorkerError(OSError):
    """A load worker failed a request, or ended (its host may be gone)."""


def client_knobs(config: ClusterClientConfig) -> dict[str, Any]:
    """The client settings a worker needs (harness/remote/worker.py ``client_config``)."""
    c = config.connection
    if c.security is not None:
        raise WorkerError("load workers on hosts speak PLAINTEXT only")
    return {"client_id": c.client_id, "connect_timeout_s": c.connect_timeout_s,
            "request_timeout_s": c.request_timeout_s, "retries": config.retries,
            "retry_backoff_ms": config.retry_backoff_ms,
            "retry_backoff_max_ms": config.retry_backoff_max_ms}


class RemotePart:
    """Producers and consumers (by global index) run by a load worker on ``machine``."""

    def __init__(self, machine: RemoteMachine, producers: tuple[int, ...],
                 consumers: tuple[int, ...]) -> None:
        self.machine = machine
        self.fleet = machine.fleet
        self.name = machine.name
        self.producers = producers
        self.consumers = consumers
        self._session: asyncssh.SSHClientProcess[bytes] | None = None
        self.pid: int | None = None
        # The worker's time.time() - perf_counter(), from its latest message.
        self._anchor = 0.0
        self._next_id = 0
        self._replies: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._events: dict[tuple[int, str], asyncio.Future[dict[str, Any]]] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._ended = False
        # The worker's last stderr lines (a traceback says why it ended).
        self._stderr: list[str] = []

    # --- clocks ------------------------------------------------------------------------------
    def _delta(self) -> float:
        """Worker perf_counter minus driver perf_counter, for the same instant."""
        return time.time() - time.perf_counter() + self.machine.clock_offset_s - self._anchor

    def _job(self, job: Job) -> dict[str, Any]:
        moved = job
        if job.timeline_t0 is not None:
            moved = dataclasses.replace(moved, timeline_t0=job.timeline_t0 + self._delta())
        if job.e2e_from_us:
            moved = dataclasses.replace(
                moved, e2e_from_us=job.e2e_from_us + round(self.machine.clock_offset_s * 1e6))
        return moved.to_json()

    def _outcome(self, answer: Mapping[str, Any]) -> PartOutcome:
        return PartOutcome.from_json(answer["result"], shift_s=self._delta())

    # --- the session to the worker (on the fleet's loop) --------------------------------------
    async def _open(self, bootstrap: str, client: dict[str, Any]) -> None:
        args = ["--watchdog-s", f"{self.fleet.hosts.watchdog_s:g}"]
        if self.machine.cpus:
            args += ["--cpus", ",".join(map(str, self.machine.cpus))]
        # asyncssh hands out a partial line once a line fills the receive window: make the
        # window as large as the largest result line.
        session = await self.machine.conn.create_process(
            self.machine.command("harness.remote.worker", *args), encoding=None,
            window=LINE_LIMIT)
        self._session = session
        first = await session.stdout.readline()
        try:
            hello = decode(first)
            self.pid = int(hello["pid"])
            self._anchor = float(hello["anchor"])
        except (ValueError, KeyError):
            err = (await session.stderr.read()).decode(errors="replace").strip().splitlines()
            raise WorkerError(f"load worker on {self.name} did not start: "
                              f"{(err or ['no output'])[-1]}") from None
        spawn = self.fleet.spawn
        self._tasks = [spawn(self._read(session)), spawn(self._read_stderr(session)),
                       spawn(heartbeat(session, lambda: not self._ended))]
        await self._request({"op": "open", "bootstrap": bootstrap, "client": client,
                             "producers": list(self.producers),
                             "consumers": list(self.consumers), "name": self.name})

    async def _read(self, session: asyncssh.SSHClientProcess[bytes]) -> None:
        with contextlib.suppress(asyncssh.Error, OSError):
            while line := await session.stdout.readline():
                try:
                    message = decode(line)
                except ValueError:
                    continue
                self._anchor = float(message.get("anchor", self._anchor))
                rid = int(message.get("id") or 0)
                if "event" in message:
                    if message["event"] == "error":
                        for key in [k for k in self._events if k[0] == rid]:
                            self._fail(self._events.pop(key), str(message["error"]))
                        continue
                    future = self._events.pop((rid, message["event"]), None)
                else:
                    future = self._replies.pop(rid, None)
                if future is None or future.done():
                    continue
                if "error" in message:
                    self._fail(future, str(message["error"]))
                else:
                    future.set_result(message)
        self._ended = True
        lost = self.fleet.lost
        why = str(lost) if lost is not None else f"the load worker on {self.name} ended"
        if lost is None and self._stderr:
            why += f" ({self._stderr[-1]})"
        for future in [*self._replies.values(), *self._events.values()]:
            self._fail(future, why)
        self._replies.clear()
        self._events.clear()

    async def _read_stderr(self, session: asyncssh.SSHClientProcess[bytes]) -> None:
        with contextlib.suppress(asyncssh.Error, OSError):
            while line := await session.stderr.readline():
                self._stderr = [*self._stderr[-19:], line.decode(errors="replace").rstrip()]

    def _fail(self, future: asyncio.Future[dict[str, Any]], why: str) -> None:
        if not future.done():
            future.set_exception(WorkerError(f"{self.name}: {why}"))

    def _send(self, message: dict[str, Any], events: tuple[str, ...] = ()
              ) -> tuple[int, asyncio.Future[dict[str, Any]]]:
        if self._ended or self._session is None:
            raise WorkerError(f"{self.name}: the load worker is gone")
        loop = asyncio.get_running_loop()
        self._next_id += 1
        rid = self._next_id
        future: asyncio.Future[dict[str, Any]] = loop.create_future()
        self._replies[rid] = future
        for event in events:
            self._events[(rid, event)] = loop.create_future()
        self._session.stdin.write(encode({**message, "id": rid}))
        return rid, future

    async def _request(self, message: dict[str, Any]) -> dict[str, Any]:
        _, future = self._send(message)
        return await future

    async def _event(self, rid: int, event: str) -> dict[str, Any]:
        future = self._events.get((rid, event))
        if future is None:
            raise WorkerError(f"{self.name}: no {event} event pending")
        return await future

    # --- LoadPart (awaited from the driver's loop) -------------------------------------------
    async def open(self, bootstrap: str, config: ClusterClientConfig) -> RemotePart:
        await asyncio.wait_for(self.fleet.submit(self._open(bootstrap, client_knobs(config))),
                               OPEN_TIMEOUT_S)
        return self

    async def produce(self, job: Job) -> PartOutcome:
        answer = await self.fleet.submit(self._request({"op": "produce", "job": self._job(job)}))
        return self._outcome(answer)

    async def consume(self, job: Job, expected: Mapping[int, int]) -> PartOutcome:
        answer = await self.fleet.submit(self._request(
            {"op": "consume", "job": self._job(job),
             "expected": {str(k): v for k, v in expected.items()}}))
        return self._outcome(answer)

    async def start(self, job: Job, expected: Mapping[int, int] | None) -> _RemoteRunning:
        message = {"op": "start", "job": self._job(job),
                   "expected": None if expected is None else
                   {str(k): v for k, v in expected.items()}}

        async def start() -> int:
            rid, future = self._send(message, ("produced", "consumed"))
            await future
            return rid

        return _RemoteRunning(self, await self.fleet.submit(start()))

    async def close(self) -> None:
        await asyncio.to_thread(self.stop)

    def stop(self) -> None:
        """Quit the worker; by PID if it does not go (never waits on a host that is gone)."""
        with contextlib.suppress(ValueError):
            self.fleet.processes.remove(self)
        if self._session is None or self.machine.lost:
            return

        async def quit_() -> bool:
            assert self._session is not None
            with contextlib.suppress(asyncssh.Error, OSError, BrokenPipeError):
                self._session.stdin.write(encode({"op": "quit"}))
                self._session.stdin.write_eof()
            try:
                await asyncio.wait_for(self._session.wait_closed(), 10.0)
            except TimeoutError:
                return False
            return True

        done = False
        with contextlib.suppress(Exception):
            done = self.fleet.call(quit_(), 15.0)
        if not done and self.pid is not None and not self.machine.lost:
            with contextlib.suppress(Exception):
                self.machine.run(f"kill -KILL {self.pid}")


class _RemoteRunning:
    def __init__(self, part: RemotePart, rid: int) -> None:
        self.part = part
        self.rid = rid

    async def produced(self) -> PartOutcome:
        return self.part._outcome(await self.part.fleet.submit(
            self.part._event(self.rid, "produced")))

    async def finish(self) -> None:
        await self.part.fleet.submit(self.part._request({"op": "finish", "run": self.rid}))

    async def consumed(self) -> PartOutcome:
        return self.part._outcome(await self.part.fleet.submit(
            self.part._event(self.rid, "consumed")))

    async def abort(self) -> None:
        with contextlib.suppress(Exception):
            await self.part.fleet.submit(self.part._request({"op": "abort", "run": self.rid}))


async def open_remote_load(fleet: SshFleet, bootstrap: str, workload: Workload,
                           external: External | None = None) -> Load:
    """The driver's admin client here, and one load worker per client host holding its share
    of the producers and consumers (client i on client host i mod n)."""
    config = client_config(bootstrap, workload)
    if external is not None:
        config = external.client_config(config)
    machines = fleet.client_machines()
    parts = [RemotePart(m, p, c) for m, p, c in zip(
        machines, share(workload.producers, len(machines)),
        share(workload.consumers, len(machines)), strict=True) if p or c]
    admin = await ClusterClient.open(bootstrap, config)
    try:
        for part in parts:
            fleet.processes.append(part)
        # Every open settles before one failure is raised: none is left running unawaited,
        # to print its own traceback when the loop ends.
        opened = await asyncio.gather(*(part.open(bootstrap, config) for part in parts),
                                      return_exceptions=True)
        for outcome in opened:
            if isinstance(outcome, BaseException):
                raise outcome
    except BaseException:
        await admin.close()
        for part in parts:
            await part.close()
        raise
    return Load(admin, list(parts))
