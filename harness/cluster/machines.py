"""Where a process runs and where its files are: this machine, or a host of a hosts file.

A cluster is laid out on machines: each ZooKeeper server and each broker on one. Everything
the harness does there (start a process, write a config file, read a counters file, fetch a
log, find free ports) goes through the ``Machine`` seam, so ``ProcessCluster`` and the
ZooKeeper ensemble have one code path whether the process is a child of this one
(``LocalMachine``) or runs on another host over SSH (``harness.remote.ssh.RemoteMachine``).
A run on one machine is the degenerate layout: every slot on ``LOCAL``.
"""

from __future__ import annotations

import os
import random
import shutil
import socket
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from harness.cluster.processes import ChildProcess, ManagedProcess

LOOPBACK = "127.0.0.1"


class Machine(Protocol):
    # "local", or the host's name in the hosts file.
    name: str
    # The address other processes (brokers, clients, the driver) reach it at.
    address: str
    # The Python that runs the project there.
    python: str
    # CPUs what runs there may use (the hosts file's ``cpus``); None: all.
    cpus: tuple[int, ...] | None

    @property
    def local(self) -> bool:
        """This machine (its processes are our children, its files our files)."""
        ...

    def process(self, argv: Sequence[str], *, name: str, log_path: Path,
                cwd: Path | None = None, stdout_to_log: bool = False,
                tail_lines: int = 8) -> ChildProcess:
        """A process to run there (not started yet: ``.start()``)."""
        ...

    def read_text(self, path: Path) -> str:
        """A file's text there; OSError when it cannot be read."""
        ...

    def write_text(self, path: Path, text: str, mode: int = 0o644) -> None:
        """Create or replace a file there (parents created), with ``mode`` from the start."""
        ...

    def makedirs(self, path: Path) -> None: ...

    def remove_tree(self, path: Path) -> None:
        """Remove a directory there and everything in it; never raises."""
        ...

    def fetch(self, path: Path, dest: Path) -> bool:
        """Copy a file from there to ``dest`` here; False when it does not exist."""
        ...

    def free_ports(self, n: int) -> list[int]:
        """``n`` distinct TCP ports free there now."""
        ...

    def cluster_root(self, local_root: Path) -> Path:
        """The directory a cluster whose local directory is ``local_root`` uses there."""
        ...

    def find_zookeeper(self, java: str | None, home: Path | None) -> tuple[str, list[Path]]:
        """The java executable and ZooKeeper jars there (``java`` and ``home``: explicit
        choices, honoured on this machine); ZooKeeperUnavailable when there are none."""
        ...


class LocalMachine:
    """This machine: processes are ``ManagedProcess`` children, files are local files."""

    name = "local"
    address = LOOPBACK
    python = sys.executable
    cpus: tuple[int, ...] | None = None

    @property
    def local(self) -> bool:
        return True

    def process(self, argv: Sequence[str], *, name: str, log_path: Path,
                cwd: Path | None = None, stdout_to_log: bool = False,
                tail_lines: int = 8) -> ChildProcess:
        return ManagedProcess(argv, name=name, log_path=log_path, cwd=cwd,
                              stdout_to_log=stdout_to_log, tail_lines=tail_lines)

    def read_text(self, path: Path) -> str:
        return path.read_text("utf-8")

    def write_text(self, path: Path, text: str, mode: int = 0o644) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)

    def makedirs(self, path: Path) -> None:
        path.mkdir(parents=True, exist_ok=True)

    def remove_tree(self, path: Path) -> None:
        shutil.rmtree(path, ignore_errors=True)

    def fetch(self, path: Path, dest: Path) -> bool:
        if not path.exists():
            return False
        if path.resolve() != dest.resolve():
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, dest)
        return True

    def free_ports(self, n: int) -> list[int]:
        return free_ports(n)

    def cluster_root(self, local_root: Path) -> Path:
        return local_root

    def find_zookeeper(self, java: str | None, home: Path | None) -> tuple[str, list[Path]]:
        from harness.services.zookeeper.discovery import find_classpath, find_java
        from harness.services.zookeeper.errors import HOW_TO_GET_ZOOKEEPER, ZooKeeperUnavailable

        found, classpath = find_java(java), find_classpath(home)
        if found is None or classpath is None:
            missing = "java" if found is None else "the ZooKeeper jars"
            raise ZooKeeperUnavailable(
                f"cannot start a local ZooKeeper ({missing} not found); " + HOW_TO_GET_ZOOKEEPER)
        return found, classpath


# The lowest port handed out: below it sit well-known services (and ZooKeeper's 2181).
_LOWEST_PORT = 10000
# The range the kernel draws ephemeral ports from, where /proc cannot tell it (not Linux).
_DEFAULT_EPHEMERAL = (32768, 60999)


def _ephemeral_range() -> tuple[int, int]:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range", encoding="ascii") as f:
            low, high = (int(x) for x in f.read().split())
        return low, high
    except (OSError, ValueError):
        return _DEFAULT_EPHEMERAL


def _claim(host: str, port: int) -> list[socket.socket] | None:
    """Sockets holding ``port`` for TCP and for UDP, or None when either is taken."""
    held: list[socket.socket] = []
    try:
        for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
            s = socket.socket(socket.AF_INET, kind)
            held.append(s)
            s.bind((host, port))
        return held
    except OSError:
        for s in held:
            s.close()
        return None


def free_ports(n: int, host: str = LOOPBACK) -> list[int]:
    """``n`` distinct ports free for both TCP and UDP, outside the kernel's ephemeral range.

    Why outside it: a port found by binding port 0 is an ephemeral port, and once it is closed
    the kernel may give it to any outgoing connection or unbound UDP socket on the machine before
    the broker binds it (CI lost a DSBS gossip port that way). Ports below the ephemeral range
    are never handed out implicitly, so only another caller of this function could take one;
    ports are drawn at random so two concurrent callers rarely draw the same one. Both protocols
    are checked because a DSBS broker gossips over UDP on the port it is given. Every socket
    stays open until all ``n`` are chosen, so the same port is never returned twice.
    """
    low, _high = _ephemeral_range()
    pool = list(range(_LOWEST_PORT, low)) if low - _LOWEST_PORT >= 4 * n + 1000 else []
    random.SystemRandom().shuffle(pool)
    held: list[socket.socket] = []
    ports: list[int] = []
    try:
        for port in pool:
            if len(ports) == n:
                break
            claimed = _claim(host, port)
            if claimed is not None:
                held.extend(claimed)
                ports.append(port)
        while len(ports) < n:
            # No room below the ephemeral range (a tuned kernel): fall back to the kernel's choice.
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            held.append(s)
            s.bind((host, 0))
            ports.append(s.getsockname()[1])
        return ports
    finally:
        for s in held:
            s.close()


LOCAL = LocalMachine()
