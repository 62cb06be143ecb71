"""Local ZooKeeper servers: one standalone server, or an ensemble of them on loopback.

Each member is a ``harness.processes.ManagedProcess`` running QuorumPeerMain on its own
``zoo.cfg`` (own session, stopped by PID, log tail in errors, stopped at exit if forgotten).
ZooKeeper prints no readiness line, so readiness is its four-letter-word probe: every member
reports a serving mode, and an ensemble has exactly one leader.
"""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path
from types import TracebackType

from brokers.core.errors import UserError
from harness.processes import ManagedProcess, wait_ready
from harness.zookeeper.config import LOOPBACK, Member, ZooKeeperConfig, render_config
from harness.zookeeper.discovery import MAIN_CLASS, find_classpath, find_java
from harness.zookeeper.errors import (
    HOW_TO_GET_ZOOKEEPER,
    ZooKeeperStartError,
    ZooKeeperUnavailable,
)
from harness.zookeeper.four_letter import server_mode

# Log lines a start-up error quotes: a JVM's reason to exit is often a dozen lines of trace.
_TAIL_LINES = 30


def free_ports(n: int, host: str = LOOPBACK) -> list[int]:
    """``n`` distinct free TCP ports, found by binding port 0.

    All sockets stay open until every port is chosen, so the kernel cannot hand the same port
    out twice; the (tiny) window between closing them and ZooKeeper binding is unavoidable.
    """
    socks: list[socket.socket] = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((host, 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


class _Server:
    """One member: its directory (zoo.cfg, data, log) and its QuorumPeerMain process."""

    def __init__(
        self,
        cfg: ZooKeeperConfig,
        java: str,
        classpath: list[Path],
        member: Member,
        members: list[Member],
        root: Path,
    ) -> None:
        self.cfg = cfg
        self.member = member
        data_dir = root / "data"
        config_path = root / "zoo.cfg"
        root.mkdir(parents=True, exist_ok=True)
        data_dir.mkdir(exist_ok=True)
        if len(members) > 1:
            (data_dir / "myid").write_text(f"{member.sid}\n")
        config_path.write_text(render_config(cfg, member, members, data_dir))
        argv = [
            java,
            f"-Xmx{cfg.heap_mb}m",
            # Serial GC: fewer JVM threads on a 2-core machine that also runs the brokers.
            "-XX:+UseSerialGC",
            "-Djava.net.preferIPv4Stack=true",
            "-cp",
            os.pathsep.join(str(p) for p in classpath),
            MAIN_CLASS,
            str(config_path),
        ]
        # The log is appended to: a restarted server keeps the earlier log, which is what one
        # wants to read.
        self.process = ManagedProcess(
            argv, name=f"ZooKeeper (port {member.client_port})", log_path=root / "zookeeper.log",
            cwd=root, stdout_to_log=True, tail_lines=_TAIL_LINES)

    @property
    def port(self) -> int:
        return self.member.client_port

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process.running else None

    def spawn(self) -> None:
        if not self.process.running:
            self.process.start()

    def mode(self) -> str | None:
        return server_mode(self.cfg.host, self.port)


def _wait_ready(servers: list[_Server], timeout_s: float, what: str) -> None:
    """Every member serves, and an ensemble has exactly one leader."""
    wait_ready({s.process: s.mode for s in servers}, timeout_s, what=what,
               agreed=lambda modes: len(modes) == 1 or modes.count("leader") == 1,
               error=ZooKeeperStartError)


class ZooKeeperEnsemble:
    """``cfg.nodes`` ZooKeeper processes on loopback (1 = a standalone server).

    Ports are chosen once, so ``stop()`` then ``start()`` restarts the same servers on the same
    addresses with their data intact (what a "ZooKeeper went away and came back" test needs).
    """

    def __init__(self, cfg: ZooKeeperConfig | None = None, workdir: Path | None = None) -> None:
        self.cfg = cfg or ZooKeeperConfig()
        root = self.cfg.data_dir or workdir
        if root is None:
            raise UserError("ZooKeeperEnsemble needs cfg.data_dir or a workdir")
        self.root = Path(root)
        java = find_java(self.cfg.java)
        classpath = find_classpath(self.cfg.home)
        if java is None or classpath is None:
            missing = "java" if java is None else "the ZooKeeper jars"
            raise ZooKeeperUnavailable(
                f"cannot start a local ZooKeeper ({missing} not found); " + HOW_TO_GET_ZOOKEEPER
            )
        self.java = java
        self.classpath = classpath
        n = self.cfg.nodes
        ports = free_ports(n if n == 1 else 3 * n, self.cfg.host)
        members = [
            Member(sid, ports[i], *((ports[n + 2 * i], ports[n + 2 * i + 1]) if n > 1 else (0, 0)))
            for i, sid in enumerate(range(1, n + 1))
        ]
        self._servers = [
            _Server(self.cfg, java, classpath, m, members, self.root / f"zk{m.sid}")
            for m in members
        ]
        self.startup_seconds: float | None = None  # measured by the last start()

    # --- the handle API --------------------------------------------------------------------
    @property
    def endpoints(self) -> tuple[tuple[str, int], ...]:
        return tuple((self.cfg.host, s.port) for s in self._servers)

    @property
    def connect_string(self) -> str:
        return ",".join(f"{h}:{p}" for h, p in self.endpoints)

    @property
    def pids(self) -> tuple[int, ...]:
        """PIDs of the running member processes (empty once stopped)."""
        return tuple(pid for s in self._servers if (pid := s.pid) is not None)

    @property
    def log_paths(self) -> tuple[Path, ...]:
        return tuple(s.process.log_path for s in self._servers)

    def modes(self) -> dict[int, str | None]:
        """Client port -> current mode (None when not serving)."""
        return {s.port: s.mode() for s in self._servers}

    def start(self) -> ZooKeeperEnsemble:
        """Start every member and return once all serve; raises ZooKeeperStartError."""
        t0 = time.monotonic()
        try:
            for s in self._servers:
                s.spawn()
            what = (
                "standalone server"
                if len(self._servers) == 1
                else f"{len(self._servers)}-node ensemble"
            )
            _wait_ready(self._servers, self.cfg.startup_timeout_s, what)
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - t0
        return self

    def stop(self) -> None:
        """Stop every member by PID (SIGTERM, then SIGKILL after stop_timeout_s); idempotent."""
        for s in self._servers:
            s.process.stop(self.cfg.stop_timeout_s)

    def stop_member(self, index: int) -> None:
        """Stop one member (ensemble failure tests)."""
        self._servers[index].process.stop(self.cfg.stop_timeout_s)

    def kill_member(self, index: int) -> None:
        """SIGKILL one member (a crashed server)."""
        self._servers[index].process.kill()

    def member_running(self, index: int) -> bool:
        return self._servers[index].pid is not None

    def start_member(self, index: int) -> None:
        """Restart one stopped member and wait until it serves again."""
        s = self._servers[index]
        s.spawn()
        _wait_ready([s], self.cfg.startup_timeout_s, f"member {s.member.sid}")

    def __enter__(self) -> ZooKeeperEnsemble:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


class ZooKeeperServer(ZooKeeperEnsemble):
    """A standalone server: an ensemble of one."""

    def __init__(self, cfg: ZooKeeperConfig | None = None, workdir: Path | None = None) -> None:
        cfg = cfg or ZooKeeperConfig()
        if cfg.nodes != 1:
            raise UserError("ZooKeeperServer is standalone; use ZooKeeperEnsemble for nodes > 1")
        super().__init__(cfg, workdir)

    @property
    def port(self) -> int:
        return self.endpoints[0][1]

    @property
    def pid(self) -> int | None:
        pids = self.pids
        return pids[0] if pids else None
