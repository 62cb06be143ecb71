"""ZooKeeper servers: one standalone server, or an ensemble, on this machine or on hosts.

Each member is a ``harness.cluster.processes.ChildProcess`` of a
``harness.cluster.machines.Machine`` running QuorumPeerMain on its own ``zoo.cfg`` (own session,
stopped by PID, log tail in errors, stopped at exit if forgotten): a ``ManagedProcess`` here, a
process under a keeper on a host of a hosts file (harness/remote/). ZooKeeper prints no readiness
line, so readiness is its four-letter-word probe: every member reports a serving mode, and an
ensemble has exactly one leader.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

from brokers.core.errors import UserError
from harness.cluster.machines import LOCAL, Machine, free_ports
from harness.cluster.processes import ChildProcess, wait_ready
from harness.services.zookeeper.config import Member, ZooKeeperConfig, render_config
from harness.services.zookeeper.discovery import MAIN_CLASS
from harness.services.zookeeper.errors import ZooKeeperStartError
from harness.services.zookeeper.four_letter import server_mode

# Log lines a start-up error quotes: a JVM's reason to exit is often a dozen lines of trace.
_TAIL_LINES = 30


class _Server:
    """One member: its directory (zoo.cfg, data, log) and its QuorumPeerMain process."""

    def __init__(
        self,
        cfg: ZooKeeperConfig,
        machine: Machine,
        member: Member,
        members: list[Member],
        root: Path,
    ) -> None:
        self.cfg = cfg
        self.member = member
        self.machine = machine
        java, classpath = machine.find_zookeeper(cfg.java, cfg.home)
        data_dir = root / "data"
        config_path = root / "zoo.cfg"
        machine.makedirs(data_dir)
        if len(members) > 1:
            machine.write_text(data_dir / "myid", f"{member.sid}\n")
        machine.write_text(config_path, render_config(cfg, member, members, data_dir))
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
        self.process: ChildProcess = machine.process(
            argv, name=f"ZooKeeper (port {member.client_port})", log_path=root / "zookeeper.log",
            cwd=root, stdout_to_log=True, tail_lines=_TAIL_LINES)

    @property
    def host(self) -> str:
        return self.member.host or self.cfg.host

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
        return server_mode(self.host, self.port)


def _wait_ready(servers: list[_Server], timeout_s: float, what: str) -> None:
    """Every member serves, and an ensemble has exactly one leader."""
    wait_ready({s.process: s.mode for s in servers}, timeout_s, what=what,
               agreed=lambda modes: len(modes) == 1 or modes.count("leader") == 1,
               error=ZooKeeperStartError)


class ZooKeeperEnsemble:
    """``cfg.nodes`` ZooKeeper processes (1 = a standalone server): on loopback here, or one per
    machine of ``machines`` (each in its own directory of ``roots``) at its address.

    Ports are chosen once, so ``stop()`` then ``start()`` restarts the same servers on the same
    addresses with their data intact (what a "ZooKeeper went away and came back" test needs).
    """

    def __init__(self, cfg: ZooKeeperConfig | None = None, workdir: Path | None = None,
                 machines: Sequence[Machine] = (), roots: Sequence[Path] = ()) -> None:
        self.cfg = cfg or ZooKeeperConfig()
        root = self.cfg.data_dir or workdir
        if root is None and not machines:
            raise UserError("ZooKeeperEnsemble needs cfg.data_dir or a workdir")
        self.root = Path(root) if root is not None else Path()
        if machines:
            members = []
            for i, m in enumerate(machines):
                # client port; and in an ensemble the quorum's peer and election ports
                ports = m.free_ports(3) if len(machines) > 1 else [*m.free_ports(1), 0, 0]
                members.append(Member(i + 1, ports[0], ports[1], ports[2], host=m.address))
            places = list(zip(machines, roots, strict=True))
        else:
            n = self.cfg.nodes
            ports = free_ports(n if n == 1 else 3 * n, self.cfg.host)
            members = [
                Member(sid, ports[i],
                       *((ports[n + 2 * i], ports[n + 2 * i + 1]) if n > 1 else (0, 0)))
                for i, sid in enumerate(range(1, n + 1))
            ]
            places = [(LOCAL, self.root / f"zk{m.sid}") for m in members]
        self._servers = [_Server(self.cfg, machine, m, members, member_root)
                         for m, (machine, member_root) in zip(members, places, strict=True)]
        self.startup_seconds: float | None = None  # measured by the last start()

    # --- the handle API --------------------------------------------------------------------
    @property
    def endpoints(self) -> tuple[tuple[str, int], ...]:
        return tuple((s.host, s.port) for s in self._servers)

    @property
    def connect_string(self) -> str:
        return ",".join(f"{h}:{p}" for h, p in self.endpoints)

    @property
    def pids(self) -> tuple[int, ...]:
        """PIDs of the running member processes (empty once stopped)."""
        return tuple(pid for s in self._servers if (pid := s.pid) is not None)

    @property
    def processes(self) -> tuple[ChildProcess, ...]:
        """The running member processes (for their CPU time)."""
        return tuple(s.process for s in self._servers if s.pid is not None)

    def log_paths(self, machine: Machine | None = None) -> tuple[Path, ...]:
        """The members' logs (those on ``machine`` only, when given)."""
        return tuple(s.process.log_path for s in self._servers
                     if machine is None or s.machine.name == machine.name)

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
