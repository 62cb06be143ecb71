"""Child processes the harness starts: brokers, ZooKeeper, load generators.

Every child is started in its own process group, announces readiness with a line on stdout
(``listening=HOST:PORT``), and is stopped by PID: SIGTERM, a grace period, then SIGKILL. The
harness never sleeps for a fixed time to "let it start": it waits for the line, with a deadline,
and reports the child's log tail when the deadline passes or the child dies first.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from brokers.core.errors import UserError


class ProcessError(UserError):
    """A child failed to start or announce itself; the message carries its log tail."""


class ManagedProcess:
    def __init__(
        self,
        argv: Sequence[str],
        *,
        name: str,
        log_path: Path,
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
    ) -> None:
        self.argv = list(argv)
        self.name = name
        self.log_path = log_path
        self._env = env
        self._cwd = cwd
        self._proc: subprocess.Popen[bytes] | None = None
        self._pending = b""

    @property
    def pid(self) -> int:
        assert self._proc is not None, "not started"
        return self._proc.pid

    def start(self) -> ManagedProcess:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            self._proc = subprocess.Popen(
                self.argv, stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL,
                env=self._env, cwd=self._cwd, start_new_session=True,
            )
        return self

    def wait_for_line(self, prefix: str, timeout_s: float) -> str:
        """Block until the child prints a stdout line starting with ``prefix``; return it."""
        assert self._proc is not None and self._proc.stdout is not None
        stream = self._proc.stdout
        deadline = time.monotonic() + timeout_s
        with selectors.DefaultSelector() as sel:
            sel.register(stream, selectors.EVENT_READ)
            while True:
                while b"\n" in self._pending:
                    line, self._pending = self._pending.split(b"\n", 1)
                    text = line.decode(errors="replace").strip()
                    if text.startswith(prefix):
                        return text
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise ProcessError(
                        f"{self.name} did not print {prefix!r} within {timeout_s:.0f} s"
                        f"{self._tail()}"
                    )
                if sel.select(min(remaining, 0.5)):
                    chunk = os.read(stream.fileno(), 65536)
                    if not chunk:
                        code = self._proc.wait(timeout=5)
                        raise ProcessError(
                            f"{self.name} exited with code {code} before printing "
                            f"{prefix!r}{self._tail()}"
                        )
                    self._pending += chunk

    def _tail(self, lines: int = 8) -> str:
        try:
            text = self.log_path.read_text(errors="replace").strip().splitlines()[-lines:]
        except OSError:
            return ""
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
        return proc.returncode

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
