"""Provisioning: find or start the ZooKeeper a zk cluster is coordinated by, as one handle.

First match wins: an address the user gives (``--option zookeeper.connect=`` or
``ZOOKEEPER_CONNECT``); a local server or ensemble from the jars (``ensemble.py``); a
testcontainers container, only when a Docker engine answers; otherwise ``ZooKeeperUnavailable``.
``ZooKeeperHandle`` hides which: it says where ZooKeeper is, reads its counters and stops what
was started here (never an external server).

A container is cleaned up by the harness itself, as its processes are: labelled with the PID
of the process that started it, removed by ``stop()`` or at that process's exit, and, when that
process died without either (SIGKILL), removed by the next provisioning on the same engine
(``sweep_stale_containers``). testcontainers' own reaper (Ryuk) is used only when its image is
already on the engine: where no registry is reachable it could not be pulled, and the run would
fail for want of a helper it does not need.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import os
import socket
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from brokers.core.errors import UserError
from harness.cluster.machines import Machine
from harness.cluster.processes import ChildProcess, pid_alive
from harness.services.zookeeper.config import ZooKeeperConfig
from harness.services.zookeeper.discovery import find_classpath, find_java
from harness.services.zookeeper.ensemble import ZooKeeperEnsemble
from harness.services.zookeeper.errors import (
    HOW_TO_GET_ZOOKEEPER,
    ZooKeeperStartError,
    ZooKeeperUnavailable,
)
from harness.services.zookeeper.four_letter import mntr, server_mode, srvr

CONTAINER_IMAGE = "zookeeper:3.8"
# Docker label on every container provisioning starts: the PID of the process that started it.
OWNER_LABEL = "org.twinbench.owner-pid"


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

    # "external" (given by the user), "local" (jars, started here), "hosts" (started on the
    # zookeeper hosts of a hosts file) or "container".
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

    @property
    def processes(self) -> tuple[ChildProcess, ...]:
        """The running servers started here (for their CPU time; none for other kinds)."""
        return self.ensemble.processes if self.ensemble is not None else ()

    def log_paths(self, machine: Machine | None = None) -> tuple[Path, ...]:
        return self.ensemble.log_paths(machine) if self.ensemble is not None else ()

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
            "zookeeper.connect/ZOOKEEPER_CONNECT and twinbench starts a local one from the jars)"
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


def sweep_stale_containers(client: Any) -> list[str]:  # a docker.DockerClient
    """Remove containers that a twinbench process now dead started; their ids."""
    removed = []
    for container in client.containers.list(all=True, filters={"label": OWNER_LABEL}):
        owner = container.labels.get(OWNER_LABEL, "")
        if owner.isdigit() and not pid_alive(int(owner)):
            with contextlib.suppress(Exception):  # already going: another sweep got there
                container.remove(force=True, v=True)
                removed.append(container.id)
    return removed


def _reaper_usable(client: Any) -> bool:
    """testcontainers' reaper can start: its image is on the engine (nothing is pulled)."""
    from testcontainers.core.config import testcontainers_config

    if testcontainers_config.ryuk_disabled:
        return False
    try:
        client.images.get(testcontainers_config.ryuk_image)
    except Exception:  # ImageNotFound, or the engine refused: no reaper either way
        return False
    return True


def _container(workdir: Path, startup_timeout_s: float) -> ZooKeeperHandle:
    import docker  # optional dependencies, imported only on this branch
    from testcontainers.core.config import testcontainers_config
    from testcontainers.core.container import DockerContainer

    client = docker.from_env(timeout=30)
    try:
        sweep_stale_containers(client)
        if not _reaper_usable(client):
            testcontainers_config.ryuk_disabled = True
    finally:
        client.close()
    container = (
        DockerContainer(CONTAINER_IMAGE)
        .with_exposed_ports(2181)
        .with_env("ZOO_4LW_COMMANDS_WHITELIST", "*")
        .with_env("ZOO_ADMINSERVER_ENABLED", "false")
        .with_kwargs(labels={OWNER_LABEL: str(os.getpid())})
    )

    stopped = False

    def stop() -> None:
        nonlocal stopped
        if not stopped:
            stopped = True
            atexit.unregister(stop)
            container.stop()

    container.start()
    atexit.register(stop)  # the reaper's job when there is none: a crash still cleans up
    try:
        host = container.get_container_host_ip()
        port = int(container.get_exposed_port(2181))
        deadline = time.monotonic() + startup_timeout_s
        while server_mode(host, port) is None:
            if time.monotonic() > deadline:
                raise ZooKeeperStartError(f"ZooKeeper container not serving at {host}:{port}")
            time.sleep(0.1)
    except BaseException:
        stop()
        raise
    endpoints = ((host, port),)
    return ZooKeeperHandle(
        "container",
        f"{host}:{port}",
        endpoints,
        _stop=stop,
        version=_version_of(endpoints),
    )


def provision(
    address: str | None,
    nodes: int,
    workdir: Path,
    cfg: ZooKeeperConfig | None = None,
) -> ZooKeeperHandle:
    """Find or start ZooKeeper in the documented order; the caller must ``stop()`` the handle.

    ``address`` is the ``zookeeper.connect`` option or perf-zk's ``--zookeeper`` (None:
    ``ZOOKEEPER_CONNECT``, then start one).
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


def provision_on(machines: Sequence[Machine], roots: Sequence[Path],
                 cfg: ZooKeeperConfig | None = None) -> ZooKeeperHandle:
    """One server on each of ``machines`` (an ensemble when several), each in its directory
    of ``roots``: the zookeeper hosts of a hosts file. The caller must ``stop()`` the handle."""
    cfg = dataclasses.replace(cfg or ZooKeeperConfig(), nodes=len(machines))
    ensemble = ZooKeeperEnsemble(cfg, machines=machines, roots=roots)
    ensemble.start()
    return ZooKeeperHandle("hosts", ensemble.connect_string, ensemble.endpoints,
                           ensemble=ensemble, _stop=ensemble.stop,
                           version=_version_of(ensemble.endpoints))


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
