"""Dedicated Raft controllers as a service: the Raft twin's metadata quorum in processes of its
own (KRaft's ``process.roles=controller``), started before the brokers, which are then all
learners (architecture ``raft-dc``, harness/architectures/raft.py).

The service plans the quorum's whole membership, since every member must know every other's
Raft address before any starts: its controllers (node ids ``CONTROLLER_ID_BASE`` + i, on the
namespaces' gateway or loopback, free ports) and each planned broker's Raft address (its
namespace's fixed port, or a free port of this machine). It writes the cluster key, and its
endpoint hands all of it to the architecture (``encode_endpoint``/``decode_endpoint``).

Counters: on SIGUSR1 a controller writes ``counters.json`` in the brokers' shape
(brokers/raft_broker/controller.py); ``counters()`` sums their coordinator totals (Raft
messages and bytes above all: in this mode the controllers carry most of them). Faults:
kill-raft-controller (a server, or without one the quorum's leader as the controllers report
it), start-raft-controller (one server, or every stopped one), stop-raft-controllers.
"""

from __future__ import annotations

import json
import secrets
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from brokers.core.errors import UserError
from harness.architectures.options import Options, knob
from harness.cluster.machines import LOCAL, Machine, free_ports
from harness.cluster.processes import ChildProcess
from harness.services.api import RunningService, Service, ServiceAction, ServicePlace

NAME = "raft-controllers"
# Controllers' node ids: clear of any broker's (a cluster has at most 64 brokers), as KRaft
# deployments number their controllers apart (3000, 3001, ...).
CONTROLLER_ID_BASE = 1000
# In a network namespace every broker has an address of its own, so all use the same port.
NETNS_RAFT_PORT = 7947
KEY_FILE = "raft.key"
# How long a controller may take to bind its listener (it replays its log first).
READY_TIMEOUT_S = 60.0
# How long a counters.json dump may take after SIGUSR1.
DUMP_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class RaftControllersOptions(Options):
    # Voters of the quorum, each a process of its own: three tolerate one failure.
    nodes: int = knob(3, "dedicated controllers (the quorum's voters)", choices=(1, 3, 5))
    # The active controller fences a broker whose heartbeats stopped this long ago (KRaft's
    # broker.session.timeout.ms): the controllers' knob, since they decide.
    session_timeout_s: float = knob(3.0, "seconds of silence after which the controller "
                                    "fences a broker", low=1.0, high=60.0)


@dataclass(frozen=True)
class Membership:
    """What the brokers are told: every member's Raft address, which vote, the key's file."""

    controllers: dict[int, tuple[str, int]]
    brokers: dict[int, tuple[str, int]]
    key_file: Path

    @property
    def peers(self) -> str:
        members = {**self.controllers, **self.brokers}
        return ",".join(f"{i}={h}:{p}" for i, (h, p) in members.items())

    @property
    def voters(self) -> str:
        return ",".join(map(str, self.controllers))


def encode_endpoint(m: Membership) -> str:
    return json.dumps({"controllers": {str(i): f"{h}:{p}" for i, (h, p) in
                                       m.controllers.items()},
                       "brokers": {str(i): f"{h}:{p}" for i, (h, p) in m.brokers.items()},
                       "key_file": str(m.key_file)}, sort_keys=True)


def decode_endpoint(text: str) -> Membership:
    doc = json.loads(text)

    def addresses(part: dict[str, str]) -> dict[int, tuple[str, int]]:
        out = {}
        for node, addr in part.items():
            host, _, port = addr.rpartition(":")
            out[int(node)] = (host, int(port))
        return dict(sorted(out.items()))

    return Membership(addresses(doc["controllers"]), addresses(doc["brokers"]),
                      Path(doc["key_file"]))


def _gauges() -> frozenset[str]:
    from brokers.raft_broker.counters import RaftCounters

    return frozenset(s.name for s in RaftCounters.specs() if s.kind == "gauge")


@dataclass
class RunningControllers:
    membership: Membership
    options: RaftControllersOptions
    root: Path
    procs: list[ChildProcess] = field(default_factory=list)

    # --- lifecycle ---------------------------------------------------------------------------
    def _argv(self, node: int) -> list[str]:
        m = self.membership
        host, port = m.controllers[node]
        return [sys.executable, "-m", "brokers.raft_broker.controller", "--node-id", str(node),
                "--data-dir", str(self._data_dir(node)), "--raft", f"{host}:{port}",
                "--raft-peers", m.peers, "--voters", m.voters,
                "--raft-key-file", str(m.key_file),
                "--session-timeout", str(self.options.session_timeout_s)]

    def _data_dir(self, node: int) -> Path:
        return self.root / f"controller-{node}"

    def _spawn(self, index: int) -> ChildProcess:
        node = CONTROLLER_ID_BASE + index
        return LOCAL.process(self._argv(node), name=f"raft controller {node}",
                             log_path=self.root / f"controller-{node}.log").start()

    def start_all(self) -> None:
        self.procs = [self._spawn(i) for i in range(len(self.membership.controllers))]
        self._await_ready(range(len(self.procs)))

    def _await_ready(self, indices: range | list[int]) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        for i in indices:
            self.procs[i].wait_for_line("listening=", max(1.0, deadline - time.monotonic()))

    # --- RunningService ------------------------------------------------------------------------
    @property
    def kind(self) -> str:
        return "local"

    @property
    def endpoint(self) -> str:
        return encode_endpoint(self.membership)

    @property
    def version(self) -> str | None:
        return None  # the project's own code: its commit is in the run manifest

    def processes(self) -> tuple[ChildProcess, ...]:
        return tuple(self.procs)

    def _dumps(self) -> dict[int, dict[str, Any]]:
        """Each running controller's counters.json, fresh from a SIGUSR1."""
        paths = {i: self._data_dir(CONTROLLER_ID_BASE + i) / "counters.json"
                 for i, p in enumerate(self.procs) if p.running}
        before = {i: _stamp(path) for i, path in paths.items()}
        for i in paths:
            self.procs[i].signal(signal.SIGUSR1)
        out: dict[int, dict[str, Any]] = {}
        deadline = time.monotonic() + DUMP_TIMEOUT_S
        while len(out) < len(paths) and time.monotonic() < deadline:
            for i, path in paths.items():
                if i not in out and (doc := _read(path)) is not None \
                        and doc.get("written_unix_ns") != before[i]:
                    out[i] = doc
            time.sleep(0.001)  # polling interval of the probe, not a wait for an effect
        return out

    def counters(self) -> dict[str, int] | None:
        docs = self._dumps()
        if len(docs) < sum(p.running for p in self.procs) or not docs:
            return None
        gauges = _gauges()
        totals: dict[str, int] = {}
        for doc in docs.values():
            for name, value in doc["coordinator"].items():
                if name not in gauges:
                    totals[name] = totals.get(name, 0) + int(value)
        return totals

    def leader(self) -> int | None:
        """The index of the controller that leads the quorum now, as the controllers say."""
        leaders = [i for i, doc in self._dumps().items()
                   if doc["coordinator"].get("raft_is_leader")]
        return leaders[0] if len(leaders) == 1 else None

    def act(self, action: str, server: int | None) -> str:
        n = len(self.procs)
        if server is not None and not 0 <= server < n:
            raise UserError(f"no raft controller {server} (controllers: 0..{n - 1})")
        if action == "stop-raft-controllers":
            for p in self.procs:
                p.stop()
            return "all"
        if action == "kill-raft-controller":
            if server is None:
                server = self.leader()
                if server is None:
                    raise UserError("kill-raft-controller: the quorum has no leader now; "
                                    "name a server")
            self.procs[server].kill()
            return str(server)
        # start-raft-controller: one, or every stopped one.
        wanted = [server] if server is not None else list(range(n))
        started = [i for i in wanted if not self.procs[i].running]
        for i in started:
            self.procs[i] = self._spawn(i)
        self._await_ready(started)
        return "all" if server is None else str(server)

    def running(self) -> list[bool]:
        return [p.running for p in self.procs]

    def repair(self) -> bool:
        if all(self.running()):
            return False
        self.act("start-raft-controller", None)
        return True

    def log_paths(self, machine: Machine) -> tuple[Path, ...]:
        return tuple(self.root / f"controller-{node}.log" for node in self.membership.controllers)

    def state(self) -> dict[str, Any]:
        return {"controllers": {str(i): f"{h}:{p}" for i, (h, p) in
                                self.membership.controllers.items()},
                "pids": [p.pid for p in self.procs], "running": self.running()}

    def stop(self) -> None:
        for p in self.procs:
            p.signal(signal.SIGTERM)
        for p in self.procs:
            p.stop()


def _stamp(path: Path) -> int | None:
    doc = _read(path)
    return None if doc is None else doc.get("written_unix_ns")


def _read(path: Path) -> dict[str, Any] | None:
    try:
        doc = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def plan(options: RaftControllersOptions, place: ServicePlace) -> Membership:
    """Every member's Raft address and the key's file (written here, mode 0600)."""
    host = place.host or "127.0.0.1"
    controllers = {CONTROLLER_ID_BASE + i: (host, port)
                   for i, port in enumerate(free_ports(options.nodes, host))}
    if place.host is not None:  # the brokers are in network namespaces
        brokers = {i: (h, NETNS_RAFT_PORT) for i, h in enumerate(place.brokers)}
    else:
        brokers = {i: (h, port) for i, (h, port) in
                   enumerate(zip(place.brokers, free_ports(len(place.brokers)), strict=True))}
    key_file = place.root / KEY_FILE
    # 256 random bits, hex: the same kind of key as the gossip's.
    LOCAL.write_text(key_file, secrets.token_hex(32), 0o600)
    return Membership(controllers, brokers, key_file)


def _start(options: Options, place: ServicePlace) -> RunningService:
    assert isinstance(options, RaftControllersOptions)
    if place.machines:
        raise UserError("raft-controllers: dedicated controllers run on this machine only "
                        "(not yet on --hosts)")
    place.root.mkdir(parents=True, exist_ok=True)
    running = RunningControllers(plan(options, place), options, place.root)
    try:
        running.start_all()
    except BaseException:
        running.stop()
        raise
    return running


def _check(options: Options, network: str, remote: bool) -> None:
    if remote:
        raise UserError("raft-controllers: dedicated controllers run on this machine only "
                        "(not yet on --hosts); use --arch raft (combined mode)")


RAFT_CONTROLLERS = Service(
    name=NAME,
    summary="the Raft twin's metadata quorum in dedicated controller processes (KRaft's "
            "process.roles=controller)",
    options=RaftControllersOptions,
    start=_start,
    size=lambda options: (options.nodes if isinstance(options, RaftControllersOptions)
                          else 3),
    actions=(
        ServiceAction("stop-raft-controllers", "start-raft-controller", "no",
                      "stopped_raft_controllers"),
        ServiceAction("start-raft-controller", None, "optional", "started_raft_controller"),
        ServiceAction("kill-raft-controller", "start-raft-controller", "optional",
                      "killed_raft_controller"),
    ),
    check=_check,
    quorum=True,
)
