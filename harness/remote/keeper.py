"""The keeper: runs one service process (a broker, a ZooKeeper server) on a host for the driver,
and stops it when told to, when the driver goes away, or when the driver's host goes silent.

    python -m harness.remote.keeper --name NAME --log FILE [--stdout-to-log] [--cwd DIR]
        [--cpus 0,1] [--watchdog-s S] -- ARGV...

The service runs as a ``harness.cluster.processes.ManagedProcess`` (own session, log file, stopped
by PID: SIGTERM, grace, SIGKILL), exactly as it would under a local harness. Its stdout lines
(``listening=HOST:PORT`` ...) are copied to the keeper's stdout, which is the SSH session's, so the
driver waits on readiness lines as it does locally. The keeper's own messages go to stderr as JSON
lines (harness/remote/channel.py): ``{"pid": N}`` once started, ``{"stat": {...}}`` per ``stat``
request, ``{"exited": CODE}`` at the end. Requests on stdin: ``ping``, ``signal`` (a signal number),
``stat`` (CPU seconds and RSS), ``stop`` (grace seconds), ``kill``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading
from pathlib import Path
from types import FrameType

from harness.cluster.processes import ManagedProcess
from harness.remote.channel import WATCHDOG_S, Inbox, emit

# How often the keeper looks at its service and its inbox.
TICK_S = 0.2


def _forward(proc: ManagedProcess) -> None:
    """Copy the service's stdout lines to ours until it ends."""
    while True:
        try:
            line = proc.read_line(1.0)
        except (EOFError, OSError, ValueError, AssertionError):
            return
        if line is not None:
            os.write(1, line.encode() + b"\n")


def _serve(proc: ManagedProcess, inbox: Inbox, grace_s: float) -> int | None:
    """Obey the driver until the service exits or must be stopped; its exit status."""
    err = sys.stderr.buffer
    while True:
        code = proc.poll()
        if code is not None:
            return code
        message = inbox.next(TICK_S)
        if inbox.closed or inbox.silent():
            return proc.stop(grace_s)
        if message is None:
            continue
        op = message.get("op")
        if op == "signal":
            proc.signal(int(message["sig"]))
        elif op == "stat":
            emit(err, {"id": message.get("id"), "stat": {"cpu": proc.cpu_seconds(),
                                                         "rss": proc.rss_bytes()}})
        elif op == "stop":
            return proc.stop(float(message.get("grace", grace_s)))
        elif op == "kill":
            proc.kill()
            return proc.poll()


def _exit_on_signal(signum: int, _frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.remote.keeper")
    parser.add_argument("--name", required=True)
    parser.add_argument("--log", type=Path, required=True)
    parser.add_argument("--cwd", type=Path, default=None)
    parser.add_argument("--stdout-to-log", action="store_true")
    parser.add_argument("--cpus", default=None)
    parser.add_argument("--watchdog-s", type=float, default=WATCHDOG_S)
    parser.add_argument("--grace-s", type=float, default=10.0)
    parser.add_argument("argv", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, _exit_on_signal)
    if args.cpus:
        # The service inherits the mask of the thread that starts it.
        os.sched_setaffinity(0, {int(c) for c in args.cpus.split(",")})
    proc = ManagedProcess(command, name=args.name, log_path=args.log, cwd=args.cwd,
                          stdout_to_log=args.stdout_to_log)
    err = sys.stderr.buffer
    try:
        proc.start()
    except OSError as exc:
        emit(err, {"error": f"cannot start {args.name}: {exc}"})
        return 1
    emit(err, {"pid": proc.pid})
    forwarder = None
    if not args.stdout_to_log:
        forwarder = threading.Thread(target=_forward, args=(proc,), daemon=True)
        forwarder.start()
    code: int | None = None
    try:
        code = _serve(proc, Inbox(0, args.watchdog_s), args.grace_s)
    finally:
        code = proc.stop(args.grace_s) if proc.poll() is None else proc.poll()
        if forwarder is not None:
            forwarder.join(timeout=2.0)
        with contextlib.suppress(OSError):  # the session may be gone already
            emit(err, {"exited": code})
    return 0


if __name__ == "__main__":
    sys.exit(main())
