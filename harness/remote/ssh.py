"""The driver's side of a multi-host run: one SSH connection per host, the hosts as
``harness.cluster.machines.Machine`` objects, and their processes as ``ChildProcess`` objects.

Threading. asyncssh is asyncio; the cluster code (``ProcessCluster``, the ZooKeeper ensemble,
the counters) is synchronous, as it is for local processes. So the connections live on an event
loop of their own, in a daemon thread (``SshFleet``): synchronous callers block on
``SshFleet.call`` with a timeout, asynchronous ones (the load parts, harness/remote/part.py)
await ``SshFleet.submit``. Heartbeats keep flowing while the main thread waits on a broker.

Processes. Each service runs under ``python -m harness.remote.keeper`` in a session of its own:
readiness lines come back on the session's stdout, the keeper's replies on its stderr, requests
(signal, stat, stop) go down its stdin, and the keeper stops the service by PID when told, when
the session ends (this process died: sshd closes it) or when the heartbeats stop (this host or
the link vanished: harness/remote/channel.py).

A host that vanishes. asyncssh sends a keepalive every ``keepalive_s`` (hosts file) and drops
the connection after ``keepalive_count`` unanswered; the fleet then records ``HostLost`` (one
line naming the host) and calls its listeners, which end the run. Nothing waits on that host
any longer: every call to it fails at once with the same error, and its processes are left to
their keepers' watchdogs (``watchdog_s``), which stop them there.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import queue
import secrets
import shlex
import signal
import subprocess
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

import asyncssh

from brokers.core.errors import UserError
from harness.cluster.processes import ProcessError
from harness.hosts import (
    Host,
    HostLost,
    HostsFile,
    HostStatus,
    end_session,
    local_version,
    login,
    probe,
)
from harness.remote.channel import HEARTBEAT_S, decode, encode

T = TypeVar("T")

# How long one request to a host (a file, a signal, a stat) may take before it is an error.
CALL_TIMEOUT_S = 30.0
# How long a keeper may take to start its service and say its PID.
START_TIMEOUT_S = 60.0
# Beyond a stop's grace period: how long the keeper may take to report the exit.
STOP_MARGIN_S = 10.0


class Stoppable(Protocol):
    def stop(self) -> object: ...


class SshFleet:
    """One SSH connection per host of a hosts file, on an event loop in a thread of its own.
    ``open()`` logs into every host (refusing, in one line, one that is not ready), ``close()``
    stops whatever is still running on them and closes the connections."""

    def __init__(self, hosts: HostsFile) -> None:
        self.hosts = hosts
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="ssh-fleet",
                                        daemon=True)
        self.machines: dict[str, RemoteMachine] = {}
        # The first host that vanished (None while all answer).
        self.lost: HostLost | None = None
        self._listeners: list[Callable[[HostLost], object]] = []
        # Hosts whose connection dropped while open() was still checking them: why.
        self._dropped: dict[str, str] = {}
        self._closing = False
        # Everything started on the hosts and not stopped yet (close() stops them).
        self.processes: list[Stoppable] = []
        # Tasks of the sessions (heartbeats, readers) on the fleet's loop.
        self.tasks: set[asyncio.Task[None]] = set()

    def spawn(self, coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        """A task of a session on the fleet's loop (from inside it), cancelled by close()."""
        task = self.loop.create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return task

    # --- lifecycle ---------------------------------------------------------------------------
    def open(self, hosts: Sequence[Host] | None = None) -> SshFleet:
        """Log into ``hosts`` (default: all of the file's) and check each as `twinbench hosts
        check` does; UserError naming the first host that is not ready."""
        self._thread.start()
        wanted = list(hosts if hosts is not None else self.hosts.hosts)
        try:
            results = self.call(self._open_all(wanted), timeout_s=CALL_TIMEOUT_S * 2)
        except BaseException:
            self.close()
            raise
        bad = [r for r in results if isinstance(r, HostStatus)]
        if bad:
            self.close()  # the logins that worked are closed too
            raise UserError(f"{self.hosts.path.name}: host {bad[0].line()} (`twinbench hosts "
                            f"check {self.hosts.path}` checks every host)")
        if self.lost is not None:  # a host checked early dropped while the others logged in
            lost = self.lost
            self.close()
            raise lost
        return self

    async def _open_all(self, hosts: list[Host]) -> list[RemoteMachine | HostStatus]:
        expected = local_version()
        return list(await asyncio.gather(*(self._open_one(h, expected) for h in hosts)))

    async def _open_one(self, host: Host, expected: str) -> RemoteMachine | HostStatus:
        conn = await login(self.hosts, host, keepalive_interval=self.hosts.keepalive_s,
                           keepalive_count_max=self.hosts.keepalive_count,
                           client_factory=lambda: _Client(self, host))
        if isinstance(conn, HostStatus):
            return conn
        status = await probe(self.hosts, conn, host, expected)
        if host.name in self._dropped:
            return HostStatus(host, False, f"the SSH connection dropped during the check "
                                           f"({self._dropped[host.name]})")
        if not status.ok:
            conn.close()
            return status
        assert status.clock_offset_s is not None and status.rtt_s is not None
        machine = RemoteMachine(self, host, conn, status.detail, status.clock_offset_s,
                                status.rtt_s)
        # Known to connection_lost() from here on, in the loop that calls it.
        self.machines[machine.name] = machine
        return machine

    def close(self) -> None:
        """Stop every process still running on the hosts (by PID, through its keeper), then
        close the connections and the loop. Idempotent."""
        if self._closing:
            return
        self._closing = True
        for process in list(self.processes):
            with contextlib.suppress(Exception):
                process.stop()
        if self._thread.is_alive():
            with contextlib.suppress(Exception):
                self.call(self._close_all(), timeout_s=10.0)
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout=10.0)
        if not self._thread.is_alive():
            self.loop.close()

    async def _close_all(self) -> None:
        # Heartbeats and readers of the sessions still open.
        tasks = list(self.tasks)
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for m in self.machines.values():
            m.conn.close()
        for m in self.machines.values():
            with contextlib.suppress(Exception):
                await asyncio.wait_for(m.conn.wait_closed(), 5.0)

    def __enter__(self) -> SshFleet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def client_machines(self) -> list[RemoteMachine]:
        """The client hosts, in the hosts file's order (load part k runs on the k-th)."""
        return [self.machines[h.name] for h in self.hosts.with_role("client")
                if h.name in self.machines]

    # --- a host vanishing --------------------------------------------------------------------
    def on_lost(self, listener: Callable[[HostLost], object]) -> None:
        """Call ``listener`` (in the fleet's thread) when a host is lost."""
        self._listeners.append(listener)
        if self.lost is not None:
            listener(self.lost)

    def connection_lost(self, host: Host, exc: Exception | None) -> None:
        machine = self.machines.get(host.name)
        why = (str(exc) or type(exc).__name__) if exc is not None else "the connection closed"
        if machine is None:
            self._dropped[host.name] = why
            return
        machine.lost = True
        if self._closing or self.lost is not None:
            return
        self.lost = HostLost(
            f"host {host.name} ({host.address}) vanished: {why} (no SSH answer for "
            f"~{self.hosts.detection_s:g} s); stopping the run, its processes stop "
            f"themselves within {self.hosts.watchdog_s:g} s")
        for listener in self._listeners:
            with contextlib.suppress(Exception):
                listener(self.lost)

    # --- calling into the loop ---------------------------------------------------------------
    def call(self, coro: Coroutine[Any, Any, T], timeout_s: float = CALL_TIMEOUT_S) -> T:
        """Run ``coro`` on the fleet's loop and wait for it (from any other thread)."""
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result(timeout_s)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TimeoutError(f"no answer from the hosts within {timeout_s:g} s") from None

    def submit(self, coro: Coroutine[Any, Any, T]) -> Awaitable[T]:
        """``coro`` on the fleet's loop, awaitable from the caller's loop."""
        return asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self.loop))


async def heartbeat(session: asyncssh.SSHClientProcess[bytes], alive: Callable[[], bool]
                    ) -> None:
    """A ping down ``session`` every HEARTBEAT_S while ``alive()``: what keeps the remote
    program's watchdog from stopping it (harness/remote/channel.py)."""
    ping = encode({"op": "ping"})
    with contextlib.suppress(asyncssh.Error, OSError, BrokenPipeError):
        while alive():
            session.stdin.write(ping)
            await asyncio.sleep(HEARTBEAT_S)


class _Client(asyncssh.SSHClient):
    def __init__(self, fleet: SshFleet, host: Host) -> None:
        self.fleet = fleet
        self.host = host

    def connection_lost(self, exc: Exception | None) -> None:
        self.fleet.connection_lost(self.host, exc)


class RemoteMachine:
    """A host of the hosts file as a ``harness.cluster.machines.Machine``."""

    def __init__(self, fleet: SshFleet, host: Host, conn: asyncssh.SSHClientConnection,
                 version: str, clock_offset_s: float, rtt_s: float) -> None:
        self.fleet = fleet
        self.host = host
        self.conn = conn
        self.name = host.name
        self.address = host.address
        self.python = fleet.hosts.remote_python
        self.cpus = host.cpus
        self.version = version
        # Its clock minus ours, and the round trip that was read in (hosts.measure_clock).
        self.clock_offset_s = clock_offset_s
        self.rtt_s = rtt_s
        self.lost = False
        self._sftp: asyncssh.SFTPClient | None = None

    @property
    def local(self) -> bool:
        return False

    def manifest(self) -> dict[str, Any]:
        h = self.host
        return {"name": h.name, "address": h.address, "roles": list(h.roles),
                "cpus": list(h.cpus) if h.cpus is not None else None, "version": self.version,
                "clock_offset_ms": round(self.clock_offset_s * 1000, 3),
                "rtt_ms": round(self.rtt_s * 1000, 3)}

    def _check(self) -> None:
        if self.lost:
            raise self.fleet.lost or HostLost(f"host {self.name} ({self.address}) is gone")

    def call(self, coro: Coroutine[Any, Any, T], timeout_s: float = CALL_TIMEOUT_S) -> T:
        self._check()
        try:
            return self.fleet.call(coro, timeout_s)
        except (asyncssh.Error, OSError, TimeoutError) as exc:
            self._check()
            raise OSError(f"{self.name}: {exc}") from exc

    def command(self, module: str, *args: str) -> str:
        return self.fleet.hosts.module_command(module, *args)

    async def _run(self, command: str) -> asyncssh.SSHCompletedProcess:
        return await self.conn.run(command, check=False)

    def run(self, command: str, timeout_s: float = CALL_TIMEOUT_S) -> tuple[int, str, str]:
        """A shell command there: (exit status, stdout, stderr)."""
        done = self.call(self._run(command), timeout_s)
        return (done.exit_status if done.exit_status is not None else -1, str(done.stdout),
                str(done.stderr))

    async def sftp(self) -> asyncssh.SFTPClient:
        if self._sftp is None:
            self._sftp = await self.conn.start_sftp_client()
        return self._sftp

    # --- Machine ---------------------------------------------------------------------------
    def process(self, argv: Sequence[str], *, name: str, log_path: Path,
                cwd: Path | None = None, stdout_to_log: bool = False,
                tail_lines: int = 8) -> RemoteProcess:
        return RemoteProcess(self, argv, name=name, log_path=log_path, cwd=cwd,
                             stdout_to_log=stdout_to_log, tail_lines=tail_lines)

    def read_text(self, path: Path) -> str:
        async def read() -> str:
            sftp = await self.sftp()
            try:
                async with sftp.open(str(path), "rb") as f:
                    data = await f.read()
            except asyncssh.SFTPError as exc:
                raise FileNotFoundError(f"{self.name}:{path}: {exc.reason}") from None
            raw: bytes = data if isinstance(data, bytes) else str(data).encode()
            return raw.decode("utf-8", "replace")

        return self.call(read())

    def write_text(self, path: Path, text: str, mode: int = 0o644) -> None:
        async def write() -> None:
            sftp = await self.sftp()
            await sftp.makedirs(str(path.parent), exist_ok=True)
            attrs = asyncssh.SFTPAttrs(permissions=mode)
            async with sftp.open(str(path), "wb", attrs) as f:
                await f.write(text.encode())
            await sftp.chmod(str(path), mode)

        self.call(write())

    def makedirs(self, path: Path) -> None:
        async def makedirs() -> None:
            await (await self.sftp()).makedirs(str(path), exist_ok=True)

        self.call(makedirs())

    def remove_tree(self, path: Path) -> None:
        with contextlib.suppress(OSError, UserError):
            self.run(f"rm -rf -- {shlex.quote(str(path))}")

    def fetch(self, path: Path, dest: Path) -> bool:
        async def get() -> bool:
            sftp = await self.sftp()
            if not await sftp.exists(str(path)):
                return False
            dest.parent.mkdir(parents=True, exist_ok=True)
            await sftp.get(str(path), str(dest))
            return True

        return self.call(get(), timeout_s=CALL_TIMEOUT_S * 4)

    def free_ports(self, n: int) -> list[int]:
        code, out, err = self.run(self.command("harness.remote.probe", "ports", str(n),
                                               self.address))
        if code != 0:
            raise UserError(f"{self.name}: cannot find free ports ({err.strip() or code})")
        ports: list[int] = json.loads(out)
        return ports

    def cluster_root(self, local_root: Path) -> Path:
        return self.fleet.hosts.workdir / f"{local_root.name}-{secrets.token_hex(4)}"

    def find_zookeeper(self, java: str | None = None, home: Path | None = None
                       ) -> tuple[str, list[Path]]:
        """The java and ZooKeeper jars on this host (harness/remote/probe.py); explicit
        choices of this machine's configuration do not apply there."""
        from harness.services.zookeeper.errors import ZooKeeperUnavailable

        code, out, err = self.run(self.command("harness.remote.probe", "zookeeper"))
        answer = json.loads(out) if code == 0 and out.strip() else {"error": err.strip()}
        if "error" in answer:
            raise ZooKeeperUnavailable(f"host {self.name} cannot run ZooKeeper: "
                                       f"{answer['error']}")
        return str(answer["java"]), [Path(p) for p in answer["classpath"]]


_EOF = object()


class RemoteProcess:
    """A service on a host, run by a keeper (harness/remote/keeper.py): the ``ChildProcess``
    of harness/cluster/processes.py, over SSH."""

    def __init__(self, machine: RemoteMachine, argv: Sequence[str], *, name: str,
                 log_path: Path, cwd: Path | None = None, stdout_to_log: bool = False,
                 tail_lines: int = 8) -> None:
        self.machine = machine
        self.argv = list(argv)
        self.name = f"{name} on {machine.name}"
        self.log_path = log_path
        self._cwd = cwd
        self._stdout_to_log = stdout_to_log
        self._tail_lines = tail_lines
        self._session: asyncssh.SSHClientProcess[bytes] | None = None
        self._pid: int | None = None
        self._code: int | None = None
        self._lines: queue.Queue[object] = queue.Queue()
        # Outstanding stat requests by id.
        self._stats: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._next_id = 0
        self._exited: asyncio.Event | None = None
        self._tasks: list[asyncio.Task[None]] = []

    # --- starting ----------------------------------------------------------------------------
    def _keeper_command(self) -> str:
        args = ["--name", self.name, "--log", str(self.log_path),
                "--watchdog-s", f"{self.machine.fleet.hosts.watchdog_s:g}"]
        if self._cwd is not None:
            args += ["--cwd", str(self._cwd)]
        if self._stdout_to_log:
            args.append("--stdout-to-log")
        if self.machine.cpus:
            args += ["--cpus", ",".join(map(str, self.machine.cpus))]
        return self.machine.command("harness.remote.keeper", *args, "--", *self.argv)

    def start(self) -> RemoteProcess:
        self._pid = None
        self._code = None
        self._lines = queue.Queue()
        self.machine.call(self._start(), timeout_s=START_TIMEOUT_S + 5)
        self.machine.fleet.processes.append(self)
        return self

    async def _start(self) -> None:
        self._exited = asyncio.Event()
        session = await self.machine.conn.create_process(self._keeper_command(), encoding=None)
        self._session = session
        said: list[str] = []
        try:
            async with asyncio.timeout(START_TIMEOUT_S):
                while self._pid is None:
                    raw = await session.stderr.readline()
                    if not raw:
                        break
                    try:
                        message = decode(raw)
                    except ValueError:
                        said.append(raw.decode(errors="replace").strip())
                        continue
                    if "error" in message:
                        said.append(str(message["error"]))
                    self._pid = message.get("pid")
        except TimeoutError:
            said.append(f"no PID within {START_TIMEOUT_S:g} s")
        if self._pid is None:
            await end_session(session, 2.0)
            why = "; ".join(said[-3:]) or "the keeper ended"
            raise ProcessError(f"{self.name}: could not start ({why})")
        spawn = self.machine.fleet.spawn
        self._tasks = [spawn(self._read_stdout(session)), spawn(self._read_stderr(session)),
                       spawn(heartbeat(session, lambda: self._code is None))]

    async def _read_stdout(self, session: asyncssh.SSHClientProcess[bytes]) -> None:
        with contextlib.suppress(asyncssh.Error, OSError):
            while raw := await session.stdout.readline():
                self._lines.put(raw.decode(errors="replace").strip())
        self._lines.put(_EOF)

    async def _read_stderr(self, session: asyncssh.SSHClientProcess[bytes]) -> None:
        with contextlib.suppress(asyncssh.Error, OSError):
            while raw := await session.stderr.readline():
                try:
                    message = decode(raw)
                except ValueError:
                    continue
                future = self._stats.pop(message.get("id", -1), None)
                if future is not None and not future.done() and "stat" in message:
                    future.set_result(message["stat"])
                if "exited" in message:
                    code = message["exited"]
                    self._code = int(code) if code is not None else -1
        if self._code is None:
            # The keeper ended without a word: it was killed, or the host is gone.
            self._code = -1 if self.machine.lost else 255
        for future in self._stats.values():
            if not future.done():
                future.set_exception(OSError(f"{self.name} ended"))
        self._stats.clear()
        assert self._exited is not None
        self._exited.set()

    async def _send(self, message: dict[str, Any]) -> None:
        if self._session is not None and self._code is None:
            with contextlib.suppress(asyncssh.Error, OSError, BrokenPipeError):
                self._session.stdin.write(encode(message))

    # --- ChildProcess ------------------------------------------------------------------------
    @property
    def pid(self) -> int:
        assert self._pid is not None, "not started"
        return self._pid

    @property
    def running(self) -> bool:
        return self._pid is not None and self._code is None and not self.machine.lost

    def poll(self) -> int | None:
        return self._code

    def wait_for_line(self, prefix: str, timeout_s: float) -> str:
        deadline = time.monotonic() + timeout_s
        while True:
            self.machine._check()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ProcessError(f"{self.name} did not print {prefix!r} within "
                                   f"{timeout_s:.0f} s{self.tail()}")
            try:
                line = self._lines.get(timeout=min(remaining, 0.5))
            except queue.Empty:
                continue
            if line is _EOF:
                self._lines.put(_EOF)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.wait(5.0)
                raise ProcessError(f"{self.name} exited with code {self._code} before printing "
                                   f"{prefix!r}{self.tail()}")
            assert isinstance(line, str)
            if line.startswith(prefix):
                return line

    def tail(self) -> str:
        try:
            text = self.machine.read_text(self.log_path).strip().splitlines()
        except (OSError, UserError):
            return ""
        text = text[-self._tail_lines:]
        return ("; log tail: " + " | ".join(text)) if text else ""

    async def _wait_exited(self, timeout_s: float) -> bool:
        if self._exited is None:
            return True
        try:
            await asyncio.wait_for(self._exited.wait(), timeout_s)
        except TimeoutError:
            return False
        return True

    def wait(self, timeout_s: float) -> int:
        if not self.machine.fleet.call(self._wait_exited(timeout_s), timeout_s + 5):
            raise subprocess.TimeoutExpired(self.name, timeout_s)
        assert self._code is not None
        return self._code

    def signal(self, sig: int) -> None:
        if self.running:
            self.machine.fleet.call(self._send({"op": "signal", "sig": int(sig)}))

    def stop(self, grace_s: float = 10.0) -> int | None:
        """Through the keeper: SIGTERM, ``grace_s``, SIGKILL. A host that is gone is not waited
        for (its keeper's watchdog stops the service there)."""
        return self._end({"op": "stop", "grace": grace_s}, grace_s)

    def kill(self) -> None:
        self._end({"op": "kill"}, 0.0)

    def _end(self, message: dict[str, Any], grace_s: float) -> int | None:
        if self._pid is None or self.machine.lost:
            self._forget()
            return self._code
        if self._code is None:
            async def end() -> bool:
                await self._send(message)
                return await self._wait_exited(grace_s + STOP_MARGIN_S)

            ended = False
            with contextlib.suppress(TimeoutError, RuntimeError):
                ended = self.machine.fleet.call(end(), grace_s + STOP_MARGIN_S + 5)
            if not ended and not self.machine.lost:
                # The keeper itself is stuck: by PID, the service's whole process group.
                with contextlib.suppress(OSError, UserError):
                    self.machine.run(f"kill -KILL -- -{self._pid} {self._pid}")
        self._forget()
        return self._code

    def _forget(self) -> None:
        with contextlib.suppress(ValueError):
            self.machine.fleet.processes.remove(self)

    def pause(self) -> None:
        self.signal(signal.SIGSTOP)

    def resume(self) -> None:
        self.signal(signal.SIGCONT)

    def _stat(self) -> dict[str, Any]:
        async def ask() -> dict[str, Any]:
            future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
            self._next_id += 1
            self._stats[self._next_id] = future
            await self._send({"op": "stat", "id": self._next_id})
            try:
                return await asyncio.wait_for(future, 10.0)
            finally:
                self._stats.pop(self._next_id, None)

        if not self.running:
            return {}
        try:
            return self.machine.fleet.call(ask(), 15.0)
        except (OSError, TimeoutError, UserError):
            return {}

    def cpu_seconds(self) -> float:
        cpu = self._stat().get("cpu")
        return float(cpu) if cpu is not None else float("nan")

    def rss_bytes(self) -> int | None:
        rss = self._stat().get("rss")
        return int(rss) if rss is not None else None
