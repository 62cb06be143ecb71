"""A service: an external process (or ensemble) an architecture's cluster starts before its
brokers: ZooKeeper, or the Raft twin's dedicated controllers.

An architecture's entry names the services it needs (``Architecture.services``); the cluster
starts each (``Service.start``), gives the brokers its endpoint, reads its counters with the
brokers' before and after every session, counts its processes' CPU as ``service_cpu_s``, stops
it after the brokers, and applies its faults (``actions``: stop-zookeeper, ...) when a
workload or `twinbench fault` names them. Like an architecture, a service has options of its
own (an ``Options`` dataclass), given under its name in a workload's ``options`` block or as
``--option NAME.KEY=VALUE``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from harness.architectures.options import Options
from harness.cluster.machines import Machine
from harness.cluster.processes import ChildProcess


@dataclass(frozen=True)
class ServiceAction:
    """A fault that acts on a service (harness/cluster/fault_actions.py lists them with the
    brokers' own)."""

    name: str
    # The action that undoes this one (None for the undoing actions themselves).
    undo: str | None
    # Whether it takes a server index: "no", "optional" (one server, or every one) or
    # "required".
    server: Literal["no", "optional", "required"]
    # What the answer line says, e.g. "stopped_zookeeper" -> "stopped_zookeeper=all".
    verb: str


@dataclass(frozen=True)
class ServicePlace:
    """Where a service runs: its directory here, the address to bind (the network
    namespaces' gateway, or None for loopback), or the machines of a hosts file's role."""

    root: Path
    host: str | None = None
    machines: tuple[Machine, ...] = ()
    roots: tuple[Path, ...] = ()
    # Every planned broker's host address (standby ones included), in node id order: for a
    # service whose servers reach the brokers (dedicated Raft controllers replicate to them).
    brokers: tuple[str, ...] = ()


class RunningService(Protocol):
    """A started service, until ``stop``."""

    @property
    def kind(self) -> str:
        """How it was provided: "external" (an address given), "local", "hosts",
        "container"."""
        ...

    @property
    def endpoint(self) -> str:
        """What its clients are given (ZooKeeper: the connect string)."""
        ...

    @property
    def version(self) -> str | None:
        """Its version as it reports it (None: unknown)."""
        ...

    def processes(self) -> tuple[ChildProcess, ...]:
        """Its processes started here, for their CPU time (none when it is not ours)."""
        ...

    def counters(self) -> dict[str, int] | None:
        """Its own counters, totals summed over its servers (None: it has none); a session's
        cost is the increase, unknown when a server restarted in between."""
        ...

    def act(self, action: str, server: int | None) -> str:
        """Apply one of its actions; the answer's value (``all`` or the server index)."""
        ...

    def running(self) -> list[bool]:
        """Each of its servers started here: is it running? (empty: none started here)."""
        ...

    def repair(self) -> bool:
        """Bring every stopped server back; whether there was anything to do."""
        ...

    def log_paths(self, machine: Machine) -> tuple[Path, ...]: ...

    def state(self) -> dict[str, Any]:
        """What ``twinbench fault`` and a user need to find it (cluster.json)."""
        ...

    def stop(self) -> None:
        """Stop what was started here; idempotent."""
        ...


@dataclass(frozen=True)
class Service:
    # Its name: in entries' ``services``, fault targets, ``options`` blocks, hosts' roles.
    name: str
    summary: str
    options: type[Options]
    start: Callable[[Options, ServicePlace], RunningService]
    # How many servers the options make (fault validation bounds ``server`` by it).
    size: Callable[[Options], int]
    actions: tuple[ServiceAction, ...] = ()
    # Combinations it refuses before anything starts: (options, network, on hosts) -> raise.
    check: Callable[[Options, str, bool], None] = lambda options, network, remote: None
    # Its servers form a quorum (an odd number of hosts of its role in a hosts file).
    quorum: bool = False
    # Top-level workload keys of earlier versions that were its options: old key -> option.
    legacy_keys: Mapping[str, str] = field(default_factory=dict)
