"""The delay line process: ``python -m harness.netdelay.daemon --netns NS ... --queue Q ...``.

One process serves every namespace of a cluster: for each it enters the namespace just long
enough to open a netfilter-queue socket there (a socket stays in the namespace it was made in),
binds the queues, and goes back. Then one loop: ``select`` on the sockets until the next packet
is due, read every queued packet's id, hand due ones back to the kernel in one batch verdict per
queue (nfqueue.py, line.py). The packets themselves never leave the kernel.

Control, the way the brokers are controlled (no stdin, no sockets of its own):

* ``--config FILE`` (JSON ``{"generation": G, "delays_ms": {"Q": ms, ...}}``) is read at start
  and again on SIGHUP; the next stats file carries its generation, which is how the harness
  knows the change is in force;
* SIGUSR1 writes ``--stats FILE``: ``written_unix_ns``, ``generation``, per queue the packets
  released, seconds held and late, packets that bypassed the line (QueueStats);
* SIGTERM or SIGINT releases everything still waiting and exits 0.

It prints ``ready=<sockets>`` once every queue is bound. Timer slack is set to 1 ns (prctl), so
a wake-up is not rounded up by the 50 us the kernel grants ordinary processes.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import errno
import json
import os
import select
import signal
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from harness.netdelay import nfqueue
from harness.netdelay.line import DelayLine, QueueStats

CLONE_NEWNET = 0x40000000
PR_SET_TIMERSLACK = 29
SO_RCVBUFFORCE = 33
# Kernel-side queue length (packets waiting per queue); beyond it packets pass undelayed.
QUEUE_MAXLEN = 65536
# Receive buffer for packet notices (~100 bytes each): room for a burst of tens of thousands.
RCVBUF_BYTES = 16 << 20
NETNS_DIR = Path("/run/netns")

_libc = ctypes.CDLL(None, use_errno=True)


class DaemonError(RuntimeError):
    """The line cannot run (no such namespace, the kernel refused a queue)."""


@contextlib.contextmanager
def _in_namespace(name: str) -> Iterator[None]:
    """This thread inside network namespace ``name`` for the block, then back."""
    with open("/proc/self/ns/net", "rb") as home, open(NETNS_DIR / name, "rb") as there:
        if _libc.setns(there.fileno(), CLONE_NEWNET) != 0:
            raise DaemonError(f"cannot enter namespace {name}: "
                              f"{os.strerror(ctypes.get_errno())}")
        try:
            yield
        finally:
            if _libc.setns(home.fileno(), CLONE_NEWNET) != 0:
                raise DaemonError("cannot return to the original network namespace")


def _open(namespace: str, queues: list[int]) -> socket.socket:
    with _in_namespace(namespace):
        sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, nfqueue.NETLINK_NETFILTER)
    try:
        sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, RCVBUF_BYTES)
        sock.bind((0, 0))
        sequence = 1
        for queue in queues:
            for message in nfqueue.bind_messages(queue, QUEUE_MAXLEN, sequence):
                sock.send(message)
                _await_ack(sock, sequence, f"{namespace} queue {queue}")
                sequence += 1
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock


def _await_ack(sock: socket.socket, sequence: int, what: str) -> None:
    sock.settimeout(5.0)
    while True:
        for event in nfqueue.parse(sock.recv(65536)):
            if isinstance(event, nfqueue.Ack) and event.sequence == sequence:
                if event.errno:
                    raise DaemonError(f"{what}: the kernel refused the queue: "
                                      f"{os.strerror(event.errno)}")
                return


def read_config(path: Path) -> tuple[int, dict[int, float]]:
    """(generation, queue -> delay in seconds)."""
    doc = json.loads(path.read_text("utf-8"))
    delays = {int(q): float(ms) / 1000.0 for q, ms in doc["delays_ms"].items()}
    return int(doc["generation"]), delays


def _write_stats(path: Path, generation: int, lines: dict[str, DelayLine]) -> None:
    per_queue: dict[int, QueueStats] = {}
    for line in lines.values():
        for queue, stats in line.stats().items():
            total = per_queue.setdefault(queue, QueueStats())
            total.packets += stats.packets
            total.held_s += stats.held_s
            total.late_s += stats.late_s
            total.max_late_s = max(total.max_late_s, stats.max_late_s)
            total.bypassed += stats.bypassed
    doc = {"written_unix_ns": time.time_ns(), "generation": generation,
           "queues": {str(q): s.as_json() for q, s in sorted(per_queue.items())}}
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(doc) + "\n", "utf-8")
    os.replace(tmp, path)


class _Loop:
    def __init__(self, socks: dict[str, socket.socket], config: Path, stats: Path) -> None:
        self.socks = socks
        self.config = config
        self.stats_path = stats
        self.generation, delays = read_config(config)
        self.lines = {ns: DelayLine(delays) for ns in socks}
        self.by_fd = {s.fileno(): ns for ns, s in socks.items()}
        self.signals: list[int] = []
        self.wake_r, self.wake_w = socket.socketpair()
        self.wake_r.setblocking(False)
        self.wake_w.setblocking(False)

    def catch_signals(self) -> None:
        """Take over the signals; done before ``ready=`` is printed, since the harness may
        signal as soon as it reads that line and SIGUSR1's default action ends the process."""
        signal.set_wakeup_fd(self.wake_w.fileno(), warn_on_full_buffer=False)
        for sig in (signal.SIGHUP, signal.SIGUSR1, signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda n, _f: self.signals.append(n))

    def run(self) -> None:
        watched = [*self.socks.values(), self.wake_r]
        while True:
            due = min((d for line in self.lines.values()
                       if (d := line.next_due()) is not None), default=None)
            timeout = None if due is None else max(0.0, due - time.monotonic())
            ready, _, _ = select.select(watched, [], [], timeout)
            now = time.monotonic()
            for sock in ready:
                if sock is self.wake_r:
                    with contextlib.suppress(BlockingIOError):
                        self.wake_r.recv(4096)
                else:
                    self._drain(sock, now)
            if self.signals and self._handle_signals():
                return
            self._release(time.monotonic())

    def _drain(self, sock: socket.socket, now: float) -> None:
        line = self.lines[self.by_fd[sock.fileno()]]
        while True:
            try:
                data = sock.recv(65536)
            except BlockingIOError:
                return
            except OSError as exc:
                if exc.errno == errno.ENOBUFS:  # notices lost; their packets failed open
                    continue
                raise
            for event in nfqueue.parse(data):
                if isinstance(event, nfqueue.Packet):
                    line.hold(event.queue, event.packet_id, now)

    def _release(self, now: float, everything: bool = False) -> None:
        for ns, line in self.lines.items():
            for queue, last in line.release(now, everything):
                self.socks[ns].send(nfqueue.verdict_batch(queue, last))

    def _handle_signals(self) -> bool:
        """True when the loop should end."""
        pending, self.signals = self.signals, []
        for sig in pending:
            if sig == signal.SIGHUP:
                self.generation, delays = read_config(self.config)
                for line in self.lines.values():
                    line.set_delays(delays)
            elif sig == signal.SIGUSR1:
                _write_stats(self.stats_path, self.generation, self.lines)
        if signal.SIGTERM in pending or signal.SIGINT in pending:
            self._release(time.monotonic(), everything=True)
            return True
        return False


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.netdelay.daemon",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--netns", action="append", required=True,
                        help="network namespace to serve (repeatable)")
    parser.add_argument("--queue", action="append", type=int, required=True,
                        help="queue number bound in every namespace (repeatable)")
    parser.add_argument("--config", type=Path, required=True)
    parser.add_argument("--stats", type=Path, required=True)
    args = parser.parse_args(argv)
    _libc.prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0)
    socks: dict[str, socket.socket] = {}
    try:
        for ns in args.netns:
            socks[ns] = _open(ns, args.queue)
        loop = _Loop(socks, args.config, args.stats)
        loop.catch_signals()
        print(f"ready={len(socks)}", flush=True)
        loop.run()
    except (DaemonError, OSError, ValueError, KeyError) as exc:
        print(f"netdelay: error: {exc}", file=sys.stderr, flush=True)
        return 1
    finally:
        for sock in socks.values():
            sock.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
