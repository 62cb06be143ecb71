"""Hosts files and `twinbench hosts check`: the machines of a multi-host run.

A hosts file (YAML) names each machine, how to reach it over SSH and what it is for::

    project: /opt/twinbench      # where twinbench is checked out on every host
                                 # (default: this checkout's own path)
    python: .venv/bin/python     # relative to project (default), or absolute
    workdir: /tmp/twinbench      # where data directories and logs go on every host
    keepalive_s: 2               # an SSH keepalive this often; keepalive_count unanswered in
    keepalive_count: 5           # a row = the host vanished (the run ends with one line)
    watchdog_s: 30               # what runs on a host stops after this long without a word
                                 # from the driver (its host or the link vanished)
    known_hosts: ~/.ssh/known_hosts   # host keys to check; null: accept any (test hosts only)
    hosts:
      - name: zk1                # unique; [a-z0-9_-]
        address: 198.18.1.2      # unique
        user: root
        key: ~/.ssh/id_ed25519   # private key file (default: the SSH agent / default keys)
        port: 22
        roles: [zookeeper]       # any of zookeeper, broker, client
        cpus: [0, 1]             # optional CPU set for what runs there

SSH goes through asyncssh (a well-kept pure-Python SSH client on asyncio, like the rest of the
harness; ducktape would bring its own test runner and fabric a thread per connection). The
check connects to every host at once and prints one line per host: reachable or not (and why:
refused, timed out, wrong key, unknown host key), whether the project is there at the same
version as here (``twinbench --version``: the package version and git commit), and the host's
clock offset from this one (remote time minus the midpoint of the round trip, from the
shortest of several round trips), which cross-host latencies depend on. Exit 0 when every host
is ready.

`twinbench cluster|run --hosts FILE` (harness/remote/) opens the same logins through
:func:`login` and :func:`probe`, refuses a host the check would call NOT READY, and refuses a
layout that cannot run what is asked (:func:`check_roles`).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import shlex
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from brokers.core.errors import UserError

__all__ = ["ROLES", "Host", "HostStatus", "HostsFile", "check_hosts", "check_roles", "load_hosts",
           "login", "probe"]

# broker and client, and one role per service (harness/services: one server per host of it).
ROLES = ("zookeeper", "broker", "client")
NAME_RE = re.compile(r"[a-z0-9][a-z0-9_-]{0,39}")
REPO_ROOT = Path(__file__).resolve().parent.parent
_HOST_KEYS = frozenset({"name", "address", "user", "key", "port", "roles", "cpus"})
_FILE_KEYS = frozenset({"project", "python", "workdir", "known_hosts", "keepalive_s",
                        "keepalive_count", "watchdog_s", "hosts"})
DEFAULT_WORKDIR = Path("/tmp/twinbench")
# How long one host may take to answer the whole check.
CHECK_TIMEOUT_S = 20.0


@dataclass(frozen=True)
class Host:
    name: str
    address: str
    user: str
    # Private key file; None: the SSH agent and the user's default keys.
    key: Path | None
    port: int
    roles: tuple[str, ...]
    # CPUs what runs there may use; None: all.
    cpus: tuple[int, ...] | None = None


@dataclass(frozen=True)
class HostsFile:
    path: Path
    hosts: tuple[Host, ...]
    # The checkout on every host, and its Python.
    project: Path
    python: str
    # None: accept any host key (hosts made by the tests; say so in the file).
    known_hosts: Path | None
    # Where clusters keep their data directories and logs on every host (one directory each,
    # removed when the cluster stops, after its logs came back).
    workdir: Path = DEFAULT_WORKDIR
    # An SSH keepalive every keepalive_s; keepalive_count unanswered in a row = host lost.
    keepalive_s: float = 2.0
    keepalive_count: int = 5
    # A remote program stops (and stops what it started) after this long without a word from
    # the driver (harness/remote/channel.py). Above the detection time, so that the driver
    # gives up on a host before the host gives up on it.
    watchdog_s: float = 30.0

    @property
    def detection_s(self) -> float:
        """How long a host may stay silent before it counts as vanished."""
        return self.keepalive_s * self.keepalive_count

    def with_role(self, role: str) -> tuple[Host, ...]:
        return tuple(h for h in self.hosts if role in h.roles)

    @property
    def remote_python(self) -> str:
        return self.python if self.python.startswith("/") else str(self.project / self.python)

    def module_command(self, module: str, *args: str) -> str:
        """``python -m MODULE ARGS`` in the project, as the remote shell runs it."""
        return (f"cd {shlex.quote(str(self.project))} && exec {shlex.quote(self.remote_python)} "
                f"-m {module} {' '.join(map(shlex.quote, args))}")

    def remote_command(self, *args: str) -> str:
        """A twinbench command line as the remote shell runs it."""
        return self.module_command("harness.cli", *args)


class HostLost(UserError):
    """A host stopped answering during a run (SSH keepalives unanswered, or the connection
    dropped): harness/remote/ssh.py."""


def _fail(path: Path, where: str, problem: str) -> UserError:
    return UserError(f"{path.name}: {where}: {problem}" if where else f"{path.name}: {problem}")


def load_hosts(path: Path) -> HostsFile:
    """Read and validate a hosts file; every mistake is one line naming the file and key."""
    try:
        data = yaml.safe_load(path.read_text("utf-8"))
    except OSError as exc:
        raise UserError(f"{path}: cannot read the hosts file ({exc.strerror})") from None
    except yaml.YAMLError as exc:
        raise UserError(f"{path.name}: not valid YAML ({str(exc).splitlines()[0]})") from None
    if not isinstance(data, dict) or not isinstance(data.get("hosts"), list) or not data["hosts"]:
        raise _fail(path, "hosts", "must be a non-empty list of hosts")
    unknown = sorted(set(data) - _FILE_KEYS)
    if unknown:
        raise _fail(path, unknown[0], f"unknown key (known: {', '.join(sorted(_FILE_KEYS))})")
    hosts = tuple(_host(path, i, raw) for i, raw in enumerate(data["hosts"]))
    for attr in ("name", "address"):
        seen: set[str] = set()
        for h in hosts:
            value = getattr(h, attr)
            if value in seen:
                raise _fail(path, "hosts", f"{attr} {value} is listed twice")
            seen.add(value)
    project = Path(str(data.get("project") or REPO_ROOT)).expanduser()
    known = data.get("known_hosts", None)
    workdir = data.get("workdir") or DEFAULT_WORKDIR
    if not str(workdir).startswith("/"):
        raise _fail(path, "workdir", f"must be an absolute path, got {workdir!r}")
    timing: dict[str, Any] = {}
    for key, kind, lo in (("keepalive_s", float, 0.1), ("keepalive_count", int, 1),
                          ("watchdog_s", float, 1.0)):
        if key in data:
            value = data[key]
            if isinstance(value, bool) or not isinstance(value, int | float) or value < lo or (
                    kind is int and not isinstance(value, int)):
                raise _fail(path, key, f"must be {'an integer' if kind is int else 'a number'} "
                            f">= {lo:g}, got {value!r}")
            timing[key] = kind(value)
    made = HostsFile(path, hosts, project, str(data.get("python") or ".venv/bin/python"),
                     Path(str(known)).expanduser() if known else None, Path(str(workdir)),
                     **timing)
    if made.watchdog_s <= made.detection_s:
        raise _fail(path, "watchdog_s", f"must exceed keepalive_s x keepalive_count "
                    f"({made.detection_s:g} s), so the driver gives up on a host first")
    return made


def check_roles(hosts: HostsFile, services: Mapping[str, bool], clients: bool = True,
                brokers: bool = True) -> None:
    """Refuse, in one line, a layout that cannot form the cluster asked for: brokers need a
    broker host, each service the clusters need a host of its role (one server each; a
    quorum, ``services[name]`` True, an odd number of them), load clients a client host."""
    name = hosts.path.name
    if brokers and not hosts.with_role("broker"):
        raise UserError(f"{name}: no host has the broker role; the brokers need at least one")
    for service, quorum in services.items():
        n = len(hosts.with_role(service))
        if n == 0:
            raise UserError(f"{name}: no host has the {service} role, which the architecture "
                            f"needs (one {service} server per {service} host)")
        if quorum and n % 2 == 0:
            raise UserError(f"{name}: {n} hosts have the {service} role; a {service} ensemble "
                            f"needs an odd number of servers (1, 3, 5 ...), one per host")
    if clients and not hosts.with_role("client"):
        raise UserError(f"{name}: no host has the client role; the load clients need at least "
                        "one")


def _host(path: Path, i: int, raw: Any) -> Host:
    where = f"hosts[{i}]"
    if not isinstance(raw, dict):
        raise _fail(path, where, "must be a mapping (name, address, user, roles, ...)")
    unknown = sorted(set(raw) - _HOST_KEYS)
    if unknown:
        raise _fail(path, f"{where}.{unknown[0]}",
                    f"unknown key (known: {', '.join(sorted(_HOST_KEYS))})")
    for key in ("name", "address", "user", "roles"):
        if key not in raw:
            raise _fail(path, f"{where}.{key}", "is missing")
    name = raw["name"]
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        raise _fail(path, f"{where}.name", f"must be a short word of a-z, 0-9, - and _, "
                    f"got {name!r}")
    roles = raw["roles"]
    if (not isinstance(roles, list) or not roles
            or any(r not in ROLES for r in roles) or len(set(roles)) != len(roles)):
        raise _fail(path, f"{where}.roles", f"must be a list of distinct roles among "
                    f"{', '.join(ROLES)}, got {roles!r}")
    port = raw.get("port", 22)
    if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
        raise _fail(path, f"{where}.port", f"must be a TCP port, got {port!r}")
    cpus = raw.get("cpus")
    if cpus is not None and (not isinstance(cpus, list) or not cpus or any(
            isinstance(c, bool) or not isinstance(c, int) or c < 0 for c in cpus)):
        raise _fail(path, f"{where}.cpus", f"must be a list of CPU numbers, got {cpus!r}")
    key_file = Path(str(raw["key"])).expanduser() if raw.get("key") else None
    # The driver logs in with it: a path that names no file is this file's mistake, not an
    # unreachable host.
    if key_file is not None and not key_file.is_file():
        raise _fail(path, f"{where}.key", f"no key file at {key_file}")
    return Host(name, str(raw["address"]), str(raw["user"]), key_file, port, tuple(roles),
                tuple(cpus) if cpus is not None else None)


def local_version() -> str:
    """What `twinbench --version` prints here (package version, git commit, dirty)."""
    from harness.runlog import git_state, versions

    git = git_state(REPO_ROOT)
    commit = str(git.get("commit") or "no-git")
    dirty = "+dirty" if git.get("dirty") else ""
    return f"twinbench {versions().get('twinbench')} {commit}{dirty}"


@dataclass(frozen=True)
class HostStatus:
    host: Host
    ok: bool
    # One line: what was found, or why the host is not ready.
    detail: str
    # Remote clock minus local (seconds), when measured, and the round trip it was read in.
    clock_offset_s: float | None = None
    rtt_s: float | None = None

    def line(self) -> str:
        h = self.host
        offset = ""
        if self.clock_offset_s is not None:
            offset = f", clock offset {self.clock_offset_s * 1000:+.1f} ms"
            if self.rtt_s is not None:
                offset += f" (round trip {self.rtt_s * 1000:.2f} ms)"
        return (f"{h.name} {h.user}@{h.address}:{h.port} [{','.join(h.roles)}]: "
                f"{'ok' if self.ok else 'NOT READY'}: {self.detail}{offset}")


async def connect(hosts: HostsFile, host: Host, timeout_s: float = CHECK_TIMEOUT_S,
                  **options: Any) -> Any:
    """An asyncssh connection to ``host`` (the caller closes it); ``options`` go to
    asyncssh.connect (keepalives, a client factory)."""
    import asyncssh

    if host.key is not None:
        # That key only: no agent, no default keys, so a wrong key fails as such.
        options |= {"client_keys": [str(host.key)], "agent_path": None}
    return await asyncssh.connect(
        host.address, port=host.port, username=host.user,
        known_hosts=str(hosts.known_hosts) if hosts.known_hosts is not None else None,
        connect_timeout=timeout_s, **options,
    )


async def login(hosts: HostsFile, host: Host, **options: Any) -> Any:
    """A connection, or the HostStatus saying why there is none."""
    import asyncssh

    try:
        async with asyncio.timeout(CHECK_TIMEOUT_S):
            return await connect(hosts, host, **options)
    except asyncssh.PermissionDenied:
        return HostStatus(host, False, "SSH refused the login (wrong user or key)")
    except asyncssh.HostKeyNotVerifiable:
        return HostStatus(host, False, f"host key not in {hosts.known_hosts}")
    except TimeoutError:
        return HostStatus(host, False, f"unreachable: no answer within {CHECK_TIMEOUT_S:g} s")
    except (OSError, asyncssh.Error) as exc:
        return HostStatus(host, False, f"unreachable: {exc}")


# Round trips the clock offset is estimated from (the shortest one wins).
CLOCK_SAMPLES = 9


async def measure_clock(hosts: HostsFile, conn: Any) -> tuple[float, float]:
    """(remote clock minus local, round trip) in seconds: the sample with the shortest round
    trip of CLOCK_SAMPLES through one echo session (harness/remote/probe.py), so what is
    measured is the network and not a process start."""
    process = await conn.create_process(hosts.module_command("harness.remote.probe", "clock"))
    best: tuple[float, float] | None = None
    try:
        for _ in range(CLOCK_SAMPLES):
            t0 = time.time_ns()
            process.stdin.write("\n")
            line = await process.stdout.readline()
            t1 = time.time_ns()
            if not line:
                raise OSError("the clock probe ended early")
            offset = (int(line) - (t0 + t1) / 2) / 1e9
            rtt = (t1 - t0) / 1e9
            if best is None or rtt < best[1]:
                best = (offset, rtt)
    finally:
        await end_session(process)
    assert best is not None
    return best


async def end_session(process: Any, grace_s: float = 5.0) -> None:
    """End a session whose program exits at end of input: send EOF and let the program's
    exit close the channel. Closing it from this side first races the server's own EOF, and
    asyncssh (2.17 to 2.24 at least) then fails an assertion that drops the whole connection
    with every other session on it; a forced close is left for a program that does not go."""
    import asyncssh

    with contextlib.suppress(asyncssh.Error, OSError, BrokenPipeError):
        process.stdin.write_eof()
    try:
        await asyncio.wait_for(process.wait_closed(), grace_s)
    except TimeoutError:
        process.close()


async def probe(hosts: HostsFile, conn: Any, host: Host, expected: str) -> HostStatus:
    """Over an open connection: the project at the same version, and the clock offset."""
    try:
        async with asyncio.timeout(CHECK_TIMEOUT_S):
            version = await conn.run(hosts.remote_command("--version"), check=False)
            found = str(version.stdout).strip()
            if version.exit_status != 0:
                err = (str(version.stderr).strip().splitlines() or ["no output"])[-1]
                return HostStatus(host, False, f"no twinbench at {hosts.project} ({err})")
            if found != expected:
                return HostStatus(host, False, f"version {found!r}, here {expected!r}")
            offset, rtt = await measure_clock(hosts, conn)
    except TimeoutError:
        return HostStatus(host, False, f"no answer within {CHECK_TIMEOUT_S:g} s")
    except (OSError, ValueError) as exc:
        return HostStatus(host, False, f"clock probe failed: {exc}")
    return HostStatus(host, True, found, offset, rtt)


async def check_host(hosts: HostsFile, host: Host, expected: str) -> HostStatus:
    conn = await login(hosts, host)
    if isinstance(conn, HostStatus):
        return conn
    try:
        return await probe(hosts, conn, host, expected)
    finally:
        conn.close()


async def check_hosts(hosts: HostsFile) -> list[HostStatus]:
    expected = local_version()
    return list(await asyncio.gather(*(check_host(hosts, h, expected) for h in hosts.hosts)))
