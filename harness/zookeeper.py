"""ZooKeeper provisioning: find or start the real ZooKeeper the zk broker is coordinated by.

Order (README.md says the same to users), first match wins:

1. an address the user gives (``--zookeeper HOST:PORT[,HOST:PORT...]`` or ``ZOOKEEPER_CONNECT``);
2. a local server (or a 3-node ensemble on loopback) started from the ZooKeeper jars: Debian's
   ``zookeeper`` package (``/usr/share/java/zookeeper.jar``) or a release under
   ``ZOOKEEPER_HOME``, with a generated config bound to 127.0.0.1 on free ports;
3. a testcontainers ``zookeeper`` container, only when a Docker engine answers;
4. otherwise ``ZooKeeperUnavailable``: one message saying how to get ZooKeeper.

Readiness is polled, never slept for: ``ruok`` must answer ``imok`` *and* ``srvr`` must report a
``Mode`` (a server answers ``imok`` some 100 ms before it serves requests; during that window
``srvr`` says "not currently serving requests"). Servers are stopped by PID: SIGTERM, a bounded
wait, then SIGKILL. An ``atexit`` hook stops whatever this process started and forgot, so a
crashed run does not leave JVMs behind on a shared machine.

Coordination cost is read from the servers' four-letter-word counters (``mntr``/``srvr``);
``ZooKeeperHandle.request_counters()`` sums them over the ensemble for a run log.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from brokers.core.errors import UserError

DEBIAN_JAVA_DIR = Path("/usr/share/java")
MAIN_CLASS = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
LOOPBACK = "127.0.0.1"
# Modes a serving member reports in `srvr`; anything else (or the "not currently serving"
# sentence) means "not ready yet".
SERVING_MODES = ("standalone", "leader", "follower", "observer")
CONTAINER_IMAGE = "zookeeper:3.8"

HOW_TO_GET_ZOOKEEPER = (
    "no ZooKeeper available: pass --zookeeper HOST:PORT (or set ZOOKEEPER_CONNECT) to use a "
    "running one; or install Java and the ZooKeeper jars (Debian: sudo apt-get install "
    "default-jre-headless zookeeper; or set ZOOKEEPER_HOME to an unpacked Apache ZooKeeper "
    "release); or start a Docker engine so testcontainers can run the zookeeper image"
)


class ZooKeeperUnavailable(UserError):
    """No ZooKeeper can be found or started; the message says how to get one."""


class ZooKeeperStartError(UserError):
    """A local ZooKeeper process was started but did not become ready; carries the log tail."""


# --------------------------------------------------------------------------------------------
# Four-letter words
# --------------------------------------------------------------------------------------------


def four_letter(host: str, port: int, cmd: str, timeout: float = 2.0) -> str:
    """Send a four-letter-word command (``ruok``, ``srvr``, ``mntr``...) and return the reply.

    The server writes its answer and closes the connection, so we read until EOF.
    Raises ``OSError`` when nothing listens (callers polling for readiness catch it).
    """
    if len(cmd) != 4:
        raise ValueError(f"four-letter words have four letters, not {cmd!r}")
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(cmd.encode("ascii"))
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_WR)
        chunks: list[bytes] = []
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", "replace")


def parse_mntr(text: str) -> dict[str, str | int]:
    """Parse ``mntr`` output (``key<TAB>value`` lines); integral values become ints."""
    out: dict[str, str | int] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("\t")
        if not sep:
            continue
        value = value.strip()
        out[key.strip()] = int(value) if re.fullmatch(r"-?\d+", value) else value
    return out


def parse_srvr(text: str) -> dict[str, str | int]:
    """Parse ``srvr`` output (``Key: value`` lines) into snake_case keys; ints where integral."""
    out: dict[str, str | int] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(": ")
        if not sep:
            continue
        k = key.strip().lower().replace(" ", "_").replace("/", "_")
        v = value.strip()
        out[k] = int(v) if re.fullmatch(r"-?\d+", v) else v
    return out


def mntr(host: str, port: int) -> dict[str, str | int]:
    """The server's ``mntr`` counters (e.g. ``zk_packets_received``, ``zk_znode_count``)."""
    return parse_mntr(four_letter(host, port, "mntr"))


def srvr(host: str, port: int) -> dict[str, str | int]:
    """The server's ``srvr`` summary (``mode``, ``received``, ``sent``, ``node_count``...)."""
    return parse_srvr(four_letter(host, port, "srvr"))


def server_mode(host: str, port: int) -> str | None:
    """``standalone``/``leader``/``follower``/``observer`` once serving; None before that."""
    try:
        if four_letter(host, port, "ruok", timeout=1.0).strip() != "imok":
            return None
        mode = srvr(host, port).get("mode")
    except OSError:
        return None
    return mode if isinstance(mode, str) and mode in SERVING_MODES else None


# --------------------------------------------------------------------------------------------
# Finding Java and the jars
# --------------------------------------------------------------------------------------------


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


def find_java(explicit: str | None = None) -> str | None:
    """The java executable: explicit path, then ``$JAVA_HOME/bin/java``, then ``java`` on PATH."""
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        candidate = Path(java_home) / "bin" / "java"
        if os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which("java")


def _manifest_class_path(jar: Path) -> list[str]:
    """The ``Class-Path`` entries of a jar's manifest (Debian lists dependencies there)."""
    try:
        with zipfile.ZipFile(jar) as zf:
            text = zf.read("META-INF/MANIFEST.MF").decode("utf-8", "replace")
    except (OSError, KeyError, zipfile.BadZipFile):
        return []
    # Manifest lines wrap at 72 bytes; a continuation line starts with one space.
    text = text.replace("\r\n", "\n").replace("\n ", "")
    for line in text.splitlines():
        if line.startswith("Class-Path:"):
            return line.split(":", 1)[1].split()
    return []


def find_classpath(home: Path | None = None, java_dir: Path = DEBIAN_JAVA_DIR) -> list[Path] | None:
    """Jars to run a ZooKeeper server, or None when no installation is found.

    * ``home`` (or ``ZOOKEEPER_HOME``): an Apache release ships every dependency, logback and
      its config included, in ``lib/``; ``conf/`` goes first so its logback.xml is found.
    * Debian: ``zookeeper.jar``'s manifest names its dependencies (netty, jute, slf4j-api,
      metrics, jetty, snappy...), so the JVM loads them itself. Missing manifest entries are
      fine as long as the server does not need them (jline is only for the CLI; the admin
      server, which needs jetty, is disabled). Debian's jar ships no slf4j *binding*, so we add
      slf4j-simple, which logs to stderr, i.e. to our log file; without one slf4j is silent.
    """
    home_env = os.environ.get("ZOOKEEPER_HOME")
    if home is None and home_env:
        home = Path(home_env)
    if home is not None:
        jars = sorted((home / "lib").glob("*.jar")) + sorted(home.glob("zookeeper-*.jar"))
        if not any(j.name.startswith("zookeeper-") for j in jars):
            return None
        conf = home / "conf"
        return ([conf] if conf.is_dir() else []) + jars
    main = java_dir / "zookeeper.jar"
    if not main.is_file():
        return None
    jars = [main]
    listed = {Path(p).name for p in _manifest_class_path(main)}
    for extra in ("zookeeper-jute.jar", "slf4j-api.jar", "slf4j-simple.jar"):
        p = java_dir / extra
        if p.is_file() and (extra == "slf4j-simple.jar" or extra not in listed):
            jars.append(p)
    return jars


# --------------------------------------------------------------------------------------------
# Configuration and one server process
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ZooKeeperConfig:
    # ZooKeeper's basic time unit. Session timeouts are bounded to [2, 20] ticks, heartbeats and
    # session expiry run on this grid. 2000 ms is ZooKeeper's shipped default; tests use less so
    # an expired session is noticed in about a second.
    tick_time_ms: int = 2000
    # Bounds on the session timeout clients may negotiate; None = ZooKeeper's 2 and 20 ticks.
    min_session_timeout_ms: int | None = None
    max_session_timeout_ms: int | None = None
    # 1 = standalone; 3 (or any odd n) = an ensemble of n processes on loopback.
    nodes: int = 1
    # Where configs, data and logs go; None = a directory under the provision() workdir.
    data_dir: Path | None = None
    # The java executable; None = $JAVA_HOME/bin/java or `java` on PATH.
    java: str | None = None
    # A ZooKeeper release directory; None = $ZOOKEEPER_HOME, then Debian's /usr/share/java.
    home: Path | None = None
    # Maximum JVM heap. Small on purpose: the znode tree here is tiny and the machine is shared
    # with brokers and load generators.
    heap_mb: int = 256
    # How long a server (or the whole ensemble) may take to start serving before we give up.
    startup_timeout_s: float = 60.0
    # How long SIGTERM may take before SIGKILL.
    stop_timeout_s: float = 10.0
    # Ticks a follower may take to connect and sync to the leader (initLimit) / to lag (syncLimit).
    init_limit: int = 10
    sync_limit: int = 5
    # Max connections per client IP; 0 = unlimited (every broker and test connects from loopback).
    max_client_cnxns: int = 0
    # Fsync the transaction log on every write (ZooKeeper's default, and what durability costs).
    force_sync: bool = True
    # Address clients connect to (clientPortAddress). Loopback, unless brokers run in network
    # namespaces (harness/netns.py): then the bridge address, the one they can all reach.
    host: str = LOOPBACK

    def __post_init__(self) -> None:
        if self.tick_time_ms < 1:
            raise UserError("tick_time_ms must be positive")
        if self.nodes < 1 or (self.nodes > 1 and self.nodes % 2 == 0):
            raise UserError(f"zk nodes must be 1 or an odd number (got {self.nodes})")
        if self.heap_mb < 32:
            raise UserError("heap_mb must be at least 32")
        if self.startup_timeout_s <= 0 or self.stop_timeout_s <= 0:
            raise UserError("timeouts must be positive")


@dataclass(frozen=True)
class _Member:
    """One ensemble member's ports (peer/election are unused in standalone mode)."""

    sid: int
    client_port: int
    peer_port: int
    election_port: int


def render_config(
    cfg: ZooKeeperConfig, member: _Member, members: list[_Member], data_dir: Path
) -> str:
    """The zoo.cfg text for one member."""
    lines = [
        "# Generated by twinbench (harness/zookeeper.py); safe to delete with the run directory.",
        f"tickTime={cfg.tick_time_ms}",
        f"initLimit={cfg.init_limit}",
        f"syncLimit={cfg.sync_limit}",
        f"dataDir={data_dir}",
        f"clientPort={member.client_port}",
        f"clientPortAddress={cfg.host}",
        f"maxClientCnxns={cfg.max_client_cnxns}",
        # The admin server is a Jetty HTTP server on port 8080 by default: it would collide
        # between ensemble members and with anything else on the machine.
        "admin.enableServer=false",
        # mntr/srvr/ruok are how we check readiness and read request counters.
        "4lw.commands.whitelist=*",
        f"forceSync={'yes' if cfg.force_sync else 'no'}",
    ]
    if cfg.min_session_timeout_ms is not None:
        lines.append(f"minSessionTimeout={cfg.min_session_timeout_ms}")
    if cfg.max_session_timeout_ms is not None:
        lines.append(f"maxSessionTimeout={cfg.max_session_timeout_ms}")
    if len(members) > 1:
        lines += [f"server.{m.sid}={LOOPBACK}:{m.peer_port}:{m.election_port}" for m in members]
    return "\n".join(lines) + "\n"


# Every process this module started and has not yet stopped: the atexit safety net.
_LIVE: dict[int, subprocess.Popen[bytes]] = {}
_LIVE_LOCK = threading.Lock()


def _stop_process(proc: subprocess.Popen[bytes], timeout: float) -> None:
    """SIGTERM, wait up to ``timeout``, then SIGKILL; always reaps the child."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            proc.wait(timeout=timeout)
    with _LIVE_LOCK:
        _LIVE.pop(proc.pid, None)


@atexit.register
def _stop_leftovers() -> None:
    with _LIVE_LOCK:
        procs = list(_LIVE.values())
    for proc in procs:
        _stop_process(proc, 5.0)


def log_tail(path: Path, lines: int = 30) -> str:
    try:
        text = path.read_text("utf-8", "replace")
    except OSError:
        return "(no log file)"
    return "\n".join(text.splitlines()[-lines:])


class _Process:
    """One QuorumPeerMain JVM: its config file, data dir, log file and PID."""

    def __init__(
        self,
        cfg: ZooKeeperConfig,
        java: str,
        classpath: list[Path],
        member: _Member,
        members: list[_Member],
        root: Path,
    ) -> None:
        self.cfg = cfg
        self.java = java
        self.classpath = classpath
        self.member = member
        self.root = root
        self.data_dir = root / "data"
        self.config_path = root / "zoo.cfg"
        self.log_path = root / "zookeeper.log"
        self.proc: subprocess.Popen[bytes] | None = None
        root.mkdir(parents=True, exist_ok=True)
        self.data_dir.mkdir(exist_ok=True)
        if len(members) > 1:
            (self.data_dir / "myid").write_text(f"{member.sid}\n")
        self.config_path.write_text(render_config(cfg, member, members, self.data_dir))

    @property
    def port(self) -> int:
        return self.member.client_port

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None and self.proc.poll() is None else None

    def command(self) -> list[str]:
        return [
            self.java,
            f"-Xmx{self.cfg.heap_mb}m",
            # Serial GC: fewer JVM threads on a 2-core machine that also runs the brokers.
            "-XX:+UseSerialGC",
            "-Djava.net.preferIPv4Stack=true",
            "-cp",
            os.pathsep.join(str(p) for p in self.classpath),
            MAIN_CLASS,
            str(self.config_path),
        ]

    def spawn(self) -> None:
        if self.pid is not None:
            return
        # Append: a restarted server keeps the earlier log, which is what one wants to read.
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                self.command(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.root,
                # Own process group: a Ctrl-C meant for the harness must not kill ZooKeeper
                # mid-run before the harness has stopped the brokers; we stop it ourselves.
                start_new_session=True,
            )
        with _LIVE_LOCK:
            _LIVE[self.proc.pid] = self.proc

    def exited(self) -> int | None:
        return None if self.proc is None else self.proc.poll()

    def stop(self) -> None:
        if self.proc is not None:
            _stop_process(self.proc, self.cfg.stop_timeout_s)

    def kill(self) -> None:
        """SIGKILL, as a crash would; reaps the process."""
        proc = self.proc
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def _wait_ready(procs: list[_Process], timeout_s: float, what: str) -> dict[int, str]:
    """Poll every member until it serves (and an ensemble has exactly one leader)."""
    deadline = time.monotonic() + timeout_s
    delay = 0.02
    modes: dict[int, str] = {}
    while True:
        for p in procs:
            code = p.exited()
            if code is not None:
                raise ZooKeeperStartError(
                    f"{what}: ZooKeeper (port {p.port}) exited with code {code} before it was "
                    f"ready; last lines of {p.log_path}:\n{log_tail(p.log_path)}"
                )
            mode = server_mode(p.cfg.host, p.port)
            if mode is None:
                modes.pop(p.port, None)
            else:
                modes[p.port] = mode
        if len(modes) == len(procs) and (
            len(procs) == 1 or list(modes.values()).count("leader") == 1
        ):
            return modes
        if time.monotonic() > deadline:
            slow = next((p for p in procs if p.port not in modes), procs[0])
            raise ZooKeeperStartError(
                f"{what}: ZooKeeper not serving after {timeout_s:.0f} s (modes so far: "
                f"{modes or 'none'}); last lines of {slow.log_path}:\n{log_tail(slow.log_path)}"
            )
        time.sleep(delay)
        delay = min(delay * 1.5, 0.25)


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
            _Member(sid, ports[i], *((ports[n + 2 * i], ports[n + 2 * i + 1]) if n > 1 else (0, 0)))
            for i, sid in enumerate(range(1, n + 1))
        ]
        self._procs = [
            _Process(self.cfg, java, classpath, m, members, self.root / f"zk{m.sid}")
            for m in members
        ]
        self.startup_seconds: float | None = None  # measured by the last start()

    # --- the handle API --------------------------------------------------------------------
    @property
    def endpoints(self) -> tuple[tuple[str, int], ...]:
        return tuple((self.cfg.host, p.port) for p in self._procs)

    @property
    def connect_string(self) -> str:
        return ",".join(f"{h}:{p}" for h, p in self.endpoints)

    @property
    def pids(self) -> tuple[int, ...]:
        """PIDs of the running member processes (empty once stopped)."""
        return tuple(pid for p in self._procs if (pid := p.pid) is not None)

    @property
    def log_paths(self) -> tuple[Path, ...]:
        return tuple(p.log_path for p in self._procs)

    def modes(self) -> dict[int, str | None]:
        """Client port -> current mode (None when not serving)."""
        return {p.port: server_mode(self.cfg.host, p.port) for p in self._procs}

    def start(self) -> ZooKeeperEnsemble:
        """Start every member and return once all serve; raises ZooKeeperStartError."""
        t0 = time.monotonic()
        try:
            for p in self._procs:
                p.spawn()
            what = (
                "standalone server"
                if len(self._procs) == 1
                else f"{len(self._procs)}-node ensemble"
            )
            _wait_ready(self._procs, self.cfg.startup_timeout_s, what)
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - t0
        return self

    def stop(self) -> None:
        """Stop every member by PID (SIGTERM, then SIGKILL after stop_timeout_s); idempotent."""
        for p in self._procs:
            p.stop()

    def stop_member(self, index: int) -> None:
        """Stop one member (ensemble failure tests)."""
        self._procs[index].stop()

    def kill_member(self, index: int) -> None:
        """SIGKILL one member (a crashed server)."""
        self._procs[index].kill()

    def member_running(self, index: int) -> bool:
        return self._procs[index].pid is not None

    def start_member(self, index: int) -> None:
        """Restart one stopped member and wait until it serves again."""
        p = self._procs[index]
        p.spawn()
        _wait_ready([p], self.cfg.startup_timeout_s, f"member {p.member.sid}")

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


# --------------------------------------------------------------------------------------------
# Provisioning
# --------------------------------------------------------------------------------------------


def parse_connect_string(text: str) -> tuple[tuple[str, int], ...]:
    """``host:port[,host:port...][/chroot]`` -> endpoints (the chroot is the client's business)."""
    hosts = text.strip().split("/", 1)[0]
    out: list[tuple[str, int]] = []
    for item in filter(None, (h.strip() for h in hosts.split(","))):
        host, sep, port = item.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise UserError(f"bad ZooKeeper address {item!r}: expected HOST:PORT")
        out.append((host.strip("[]"), int(port)))
    if not out:
        raise UserError(f"bad ZooKeeper address {text!r}: expected HOST:PORT[,HOST:PORT...]")
    return tuple(out)


@dataclass
class ZooKeeperHandle:
    """Whatever provision() found or started: where it is, how to read it, how to stop it."""

    # "external" (given by the user), "local" (jars, started here) or "container".
    kind: str
    connect_string: str
    endpoints: tuple[tuple[str, int], ...]
    # The local ensemble when kind == "local" (PIDs, logs, restart for tests).
    ensemble: ZooKeeperEnsemble | None = None
    _stop: Callable[[], None] | None = field(default=None, repr=False)
    # Server version as reported by srvr (None if the server refuses four-letter words).
    version: str | None = None

    @property
    def pids(self) -> tuple[int, ...]:
        return self.ensemble.pids if self.ensemble is not None else ()

    def stop(self) -> None:
        """Stop what we started; an external ZooKeeper is left alone. Idempotent."""
        stop, self._stop = self._stop, None
        if stop is not None:
            stop()

    def mntr_all(self) -> dict[str, dict[str, str | int]]:
        """``host:port`` -> that server's ``mntr`` counters (servers that do not answer omitted)."""
        out: dict[str, dict[str, str | int]] = {}
        for host, port in self.endpoints:
            with contextlib.suppress(OSError):
                out[f"{host}:{port}"] = mntr(host, port)
        return out

    def request_counters(self) -> dict[str, int]:
        """Ensemble-wide totals for a run log: packets (= client requests and their replies,
        pings included) received/sent, outstanding requests, znodes, watches, ephemerals.

        Take one reading before and one after a run; the difference is what the run cost.
        Packet counters are per member and reset when a member restarts; summing over members
        counts each client request once (clients talk to one member; quorum traffic between
        members is not in these counters).
        """
        totals = {
            "zk_packets_received": 0,
            "zk_packets_sent": 0,
            "zk_outstanding_requests": 0,
            "zk_num_alive_connections": 0,
        }
        snapshot = {"zk_znode_count": 0, "zk_watch_count": 0, "zk_ephemerals_count": 0}
        for stats in self.mntr_all().values():
            for key in totals:
                v = stats.get(key)
                if isinstance(v, int):
                    totals[key] += v
            for key in snapshot:
                v = stats.get(key)
                # znodes/ephemerals are replicated: every member reports the same tree, so take
                # the maximum instead of summing; watches are per member, so sum those.
                if isinstance(v, int):
                    snapshot[key] = (
                        snapshot[key] + v if key == "zk_watch_count" else max(snapshot[key], v)
                    )
        return totals | snapshot

    def __enter__(self) -> ZooKeeperHandle:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def _version_of(endpoints: tuple[tuple[str, int], ...]) -> str | None:
    for host, port in endpoints:
        with contextlib.suppress(OSError):
            v = srvr(host, port).get("zookeeper_version")
            if isinstance(v, str):
                return v.split(",")[0].split("-")[0]
    return None


def _external(address: str) -> ZooKeeperHandle:
    endpoints = parse_connect_string(address)
    reachable = False
    for host, port in endpoints:
        try:
            with socket.create_connection((host, port), timeout=3.0):
                reachable = True
                break
        except OSError:
            continue
    if not reachable:
        raise ZooKeeperUnavailable(
            f"ZooKeeper at {address} does not accept connections: is it running? (omit "
            "--zookeeper/ZOOKEEPER_CONNECT and twinbench starts a local one from the jars)"
        )
    return ZooKeeperHandle("external", address.strip(), endpoints, version=_version_of(endpoints))


def docker_engine_answers(timeout_s: float = 2.0) -> bool:
    """True when a Docker engine responds to a ping (testcontainers needs one)."""
    try:
        import docker  # optional and slow to import: only when needed
    except ImportError:
        return False
    try:
        client = docker.from_env(timeout=timeout_s)
        try:
            return bool(client.ping())
        finally:
            client.close()
    except Exception:  # any failure (no socket, permission, TLS...) means "no engine"
        return False


def _container(workdir: Path, startup_timeout_s: float) -> ZooKeeperHandle:
    from testcontainers.core.container import DockerContainer  # optional dependency

    container = (
        DockerContainer(CONTAINER_IMAGE)
        .with_exposed_ports(2181)
        .with_env("ZOO_4LW_COMMANDS_WHITELIST", "*")
        .with_env("ZOO_ADMINSERVER_ENABLED", "false")
    )
    container.start()
    try:
        host = container.get_container_host_ip()
        port = int(container.get_exposed_port(2181))
        deadline = time.monotonic() + startup_timeout_s
        while server_mode(host, port) is None:
            if time.monotonic() > deadline:
                raise ZooKeeperStartError(f"ZooKeeper container not serving at {host}:{port}")
            time.sleep(0.1)
    except BaseException:
        container.stop()
        raise
    endpoints = ((host, port),)
    return ZooKeeperHandle(
        "container",
        f"{host}:{port}",
        endpoints,
        _stop=container.stop,
        version=_version_of(endpoints),
    )


def provision(
    address: str | None,
    nodes: int,
    workdir: Path,
    cfg: ZooKeeperConfig | None = None,
) -> ZooKeeperHandle:
    """Find or start ZooKeeper in the documented order; the caller must ``stop()`` the handle.

    ``address`` is the ``--zookeeper`` value (None: ``ZOOKEEPER_CONNECT``, then start one).
    ``nodes`` is 1 (standalone) or 3 (an ensemble on loopback; local jars only).
    """
    address = address or os.environ.get("ZOOKEEPER_CONNECT") or None
    if address:
        return _external(address)
    base = cfg or ZooKeeperConfig()
    cfg = dataclasses.replace(base, nodes=nodes)
    workdir = Path(workdir)
    if find_java(cfg.java) is not None and find_classpath(cfg.home) is not None:
        ensemble = ZooKeeperEnsemble(cfg, workdir / "zookeeper")
        ensemble.start()
        return ZooKeeperHandle(
            "local",
            ensemble.connect_string,
            ensemble.endpoints,
            ensemble=ensemble,
            _stop=ensemble.stop,
            version=_version_of(ensemble.endpoints),
        )
    if docker_engine_answers():
        if nodes != 1:
            raise ZooKeeperUnavailable(
                "a ZooKeeper ensemble needs the local jars; testcontainers runs a single server. "
                + HOW_TO_GET_ZOOKEEPER
            )
        return _container(workdir, cfg.startup_timeout_s)
    raise ZooKeeperUnavailable(HOW_TO_GET_ZOOKEEPER)


@contextlib.contextmanager
def provisioned(
    address: str | None, nodes: int, workdir: Path, cfg: ZooKeeperConfig | None = None
) -> Iterator[ZooKeeperHandle]:
    """``provision()`` as a context manager that always stops what it started."""
    handle = provision(address, nodes, workdir, cfg)
    try:
        yield handle
    finally:
        handle.stop()
