"""Child processes the harness starts: brokers, ZooKeeper servers, load generators.

Every child is started in its own session (so a Ctrl-C meant for the harness does not reach it
before the harness has stopped what depends on it), appends its output to a log file, and is
stopped by PID: SIGTERM, a grace period, then SIGKILL. The harness never sleeps for a fixed time
to "let it start": it waits, with a deadline, either for the child's readiness line on stdout
(``listening=HOST:PORT``: ``wait_for_line``) or, for a child that announces nothing (ZooKeeper),
for a readiness probe asked from outside to answer (``wait_ready``), and reports the child's log
tail when the deadline passes or the child dies first. An ``atexit`` hook stops every child this
process started and did not stop, so a crashed run leaves no broker or JVM behind on a shared
machine.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Protocol, TypeVar

import psutil

from brokers.core.errors import UserError

T = TypeVar("T")


class ProcessError(UserError):
    """A child failed to start or announce itself; the message carries its log tail."""


class ChildProcess(Protocol):
    """What the harness does with a process it started, wherever it runs: here
    (:class:`ManagedProcess`) or on another host over SSH (``harness.remote.ssh.RemoteProcess``).
    Everything is by PID and bounded in time."""

    name: str
    log_path: Path

    @property
    def pid(self) -> int: ...

    @property
    def running(self) -> bool: ...

    def start(self) -> ChildProcess: ...

    def wait_for_line(self, prefix: str, timeout_s: float) -> str: ...

    def tail(self) -> str: ...

    def poll(self) -> int | None: ...

    def wait(self, timeout_s: float) -> int: ...

    def signal(self, sig: int) -> None: ...

    def stop(self, grace_s: float = 10.0) -> int | None: ...

    def pause(self) -> None: ...

    def resume(self) -> None: ...

    def kill(self) -> None: ...

    def cpu_seconds(self) -> float: ...

    def rss_bytes(self) -> int | None: ...


class ManagedProcess:
    def __init__(
        self,
        argv: Sequence[str],
        *,
        name: str,
        log_path: Path,
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
        stdout_to_log: bool = False,
        tail_lines: int = 8,
    ) -> None:
        """``stdout_to_log``: the child prints no readiness line (ZooKeeper logs to stdout),
        so its stdout goes to the log with stderr and its readiness is a probe
        (``wait_ready``); otherwise stdout is read by ``wait_for_line``. ``tail_lines``: how much
        of the log an error quotes."""
        self.argv = list(argv)
        self.name = name
        self.log_path = log_path
        self._env = env
        self._cwd = cwd
        self._stdout_to_log = stdout_to_log
        self._tail_lines = tail_lines
        self._proc: subprocess.Popen[bytes] | None = None
        self._pending = b""

    @property
    def pid(self) -> int:
        assert self._proc is not None, "not started"
        return self._proc.pid

    @property
    def running(self) -> bool:
        """Started and not (yet) exited."""
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> ManagedProcess:
        """Start the child (again, after it exited: the log is appended to, not replaced)."""
        if self._proc is not None and self._proc.poll() is not None:
            self._forget(self._proc)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            self._proc = subprocess.Popen(
                self.argv,
                stdout=log if self._stdout_to_log else subprocess.PIPE,
                stderr=subprocess.STDOUT if self._stdout_to_log else log,
                stdin=subprocess.DEVNULL, env=self._env, cwd=self._cwd, start_new_session=True,
            )
        self._pending = b""
        with _LIVE_LOCK:
            _LIVE[self._proc.pid] = self
        return self

    def wait_for_line(self, prefix: str, timeout_s: float) -> str:
        """Block until the child prints a stdout line starting with ``prefix``; return it."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                text = self.read_line(max(0.0, deadline - time.monotonic()))
            except EOFError:
                code = self._proc.wait(timeout=5) if self._proc is not None else None
                raise ProcessError(
                    f"{self.name} exited with code {code} before printing "
                    f"{prefix!r}{self.tail()}"
                ) from None
            if text is None:
                raise ProcessError(
                    f"{self.name} did not print {prefix!r} within {timeout_s:.0f} s{self.tail()}"
                )
            if text.startswith(prefix):
                return text

    def read_line(self, timeout_s: float) -> str | None:
        """The child's next stdout line (stripped), None when none came within ``timeout_s``;
        EOFError once its stdout has ended (it exited)."""
        assert self._proc is not None and self._proc.stdout is not None, "stdout is not read"
        stream = self._proc.stdout
        deadline = time.monotonic() + timeout_s
        with selectors.DefaultSelector() as sel:
            sel.register(stream, selectors.EVENT_READ)
            while b"\n" not in self._pending:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not sel.select(min(remaining, 0.5)):
                    if time.monotonic() >= deadline:
                        return None
                    continue
                chunk = os.read(stream.fileno(), 65536)
                if not chunk:
                    raise EOFError(self.name)
                self._pending += chunk
        line, self._pending = self._pending.split(b"\n", 1)
        return line.decode(errors="replace").strip()

    def tail(self) -> str:
        """The end of the child's log as one line, to append to an error message."""
        try:
            text = self.log_path.read_text(errors="replace").strip().splitlines()
        except OSError:
            return ""
        text = text[-self._tail_lines:]
        return ("; log tail: " + " | ".join(text)) if text else ""

    def poll(self) -> int | None:
        return None if self._proc is None else self._proc.poll()

    def wait(self, timeout_s: float) -> int:
        """Wait for the child to exit on its own; raises subprocess.TimeoutExpired."""
        assert self._proc is not None, "not started"
        return self._proc.wait(timeout=timeout_s)

    def signal(self, sig: int) -> None:
        if self._proc is not None and self._proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._proc.pid, sig)

    def stop(self, grace_s: float = 10.0) -> int | None:
        """SIGTERM, wait up to ``grace_s``, then SIGKILL the whole process group."""
        proc = self._proc
        if proc is None:
            return None
        if proc.poll() is None:
            self.signal(signal.SIGTERM)
            # A paused (SIGSTOPped) child would sit on the SIGTERM until the grace period ends.
            self.signal(signal.SIGCONT)
            try:
                proc.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=5)
        if proc.stdout is not None:
            proc.stdout.close()
        self._forget(proc)
        return proc.returncode

    def cpu_seconds(self) -> float:
        """User+system CPU seconds so far (nan when it is not running)."""
        try:
            t = psutil.Process(self.pid).cpu_times()
        except (psutil.Error, AssertionError):
            return float("nan")
        return t.user + t.system

    def rss_bytes(self) -> int | None:
        """Resident set size (None when it is not running)."""
        try:
            return int(psutil.Process(self.pid).memory_info().rss)
        except (psutil.Error, AssertionError):
            return None

    def pause(self) -> None:
        """SIGSTOP: the process stays alive but does nothing (a GC pause, a frozen VM)."""
        self.signal(signal.SIGSTOP)

    def resume(self) -> None:
        self.signal(signal.SIGCONT)

    def kill(self) -> None:
        """SIGKILL, as a crash would (tests of recovery)."""
        if self._proc is not None and self._proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._proc.pid, signal.SIGKILL)
            self._proc.wait(timeout=5)
        if self._proc is not None:
            self._forget(self._proc)

    @staticmethod
    def _forget(proc: subprocess.Popen[bytes]) -> None:
        if proc.returncode is not None:
            with _LIVE_LOCK:
                _LIVE.pop(proc.pid, None)


# Every child started and not stopped, by PID: what the atexit safety net stops.
_LIVE: dict[int, ManagedProcess] = {}
_LIVE_LOCK = threading.Lock()


@atexit.register
def _stop_leftovers() -> None:
    with _LIVE_LOCK:
        leftovers = list(_LIVE.values())
    for process in leftovers:
        process.stop(grace_s=5.0)


def wait_ready(
    probes: Mapping[ChildProcess, Callable[[], T | None]],
    timeout_s: float,
    *,
    what: str,
    agreed: Callable[[list[T]], bool] = lambda answers: True,
    error: type[ProcessError] = ProcessError,
) -> list[T]:
    """Wait until every process's readiness probe answers (not None) in the same round and
    ``agreed`` accepts the answers together (an ensemble: exactly one leader); return them in
    the mapping's order.

    For children that announce nothing on stdout: readiness is a question asked from outside
    (a port that answers, a server's mode). Probes are polled at a growing interval (20 ms up
    to 250 ms); ``error`` is raised, with the log tail, when a process exits first or when the
    deadline passes (naming the first process that has not answered).
    """
    deadline = time.monotonic() + timeout_s
    delay = 0.02
    answers: dict[ChildProcess, T] = {}
    while True:
        for process, probe in probes.items():
            code = process.poll()
            if code is not None:
                raise error(f"{what}: {process.name} exited with code {code} before it was "
                            f"ready{process.tail()}")
            answer = probe()
            if answer is None:
                answers.pop(process, None)
            else:
                answers[process] = answer
        if len(answers) == len(probes):
            ordered = [answers[p] for p in probes]
            if agreed(ordered):
                return ordered
        if time.monotonic() > deadline:
            slow = next((p for p in probes if p not in answers), next(iter(probes)))
            so_far = ", ".join(f"{p.name}: {a}" for p, a in answers.items()) or "none"
            raise error(f"{what}: not ready after {timeout_s:.0f} s (answers so far: "
                        f"{so_far}); {slow.name}{slow.tail()}")
        time.sleep(delay)
        delay = min(delay * 1.5, 0.25)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie still answers kill(0); check its state so "stopped" means gone.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False
