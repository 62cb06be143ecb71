"""Start and stop a cluster of one architecture: its services (ZooKeeper) and N broker processes.

`twinbench cluster` and `twinbench run` both come through here, so a benchmark runs against
exactly the cluster a user can start by hand. Readiness is observed, never assumed: every
broker is seen listening (as its architecture's entry says: a ``listening=HOST:PORT`` line,
or its port accepting connections), then every broker must answer Metadata listing all N
brokers before the cluster counts as up. Everything started is stopped by PID, brokers first.

A cluster outlives its members: a broker that exits is reported (``poll_exits``) and the rest keep
serving. The fault operations (kill, pause, resume, restart, partition, heal; and the actions of the
architecture's services: stop and start ZooKeeper or one server of an ensemble) are methods here, so
``twinbench fault``, the fault workloads and the tests act on a cluster the same way; ``repair()``
undoes them all. With ``network="netns"`` every broker runs in its own network namespace
(harness/cluster/netns.py), the only way a partition can be made on one machine; the default is
loopback. What differs between architectures (the broker program and its arguments, its options, the
services) comes from their registry entries (harness/architectures/), and each service is a plugin
of its own (harness/services/).

Where each process runs is the cluster's ``Layout`` (harness/cluster/machines.py): by default every
broker on this machine and ZooKeeper provisioned here; with a hosts file
(harness/remote/, ``twinbench cluster|run --hosts``) brokers and ZooKeeper servers on the
hosts of their roles, reached over SSH. The code is the same either way: every process is a
``ChildProcess`` of some ``Machine``, every file (config, key, counters, log) is read or written
through that machine, and a host's files live in a directory of their own there
(``Machine.cluster_root``), whose logs come back (``collect``) before it is removed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import signal
import socket
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psutil

from brokers.core.atomic_file import replace_file
from brokers.core.errors import KafkaError, ProtocolViolation, UserError
from harness import architectures, services
from harness.architectures.entry import (
    Launch,
    Node,
    ProcessSpec,
)
from harness.cluster.kafka_probe import KafkaProbe
from harness.cluster.machines import LOCAL, Machine
from harness.cluster.processes import ChildProcess, ProcessError
from harness.services.api import RunningService, ServicePlace

if TYPE_CHECKING:  # imported when a cluster needs them: netns needs root
    from harness.cluster.netns import NetnsNetwork
    from harness.netdelay.control import NetworkDelay
from harness.cluster.layout import LOCAL_LAYOUT, Layout
from harness.cluster.spec import ClusterSpec

# cpu_seconds()'s key prefix of a service's processes.
SERVICE_CPU = "service-"
# In a namespace every broker has an address of its own, so all can use the usual port.
NETNS_KAFKA_PORT = 9092
STATE_KIND = "twinbench.cluster"


@dataclass
class BrokerProcess:
    node_id: int
    process: ChildProcess
    host: str = ""
    port: int = 0
    data_dir: Path = field(default_factory=Path)
    # The namespace the broker runs in (network netns), else None.
    namespace: str | None = None
    # HOST:PORT of its Prometheus endpoint (ClusterSpec.metrics), else "".
    metrics: str = ""
    # Where it runs.
    machine: Machine = LOCAL
    # How it was started and is handled (its architecture's entry says).
    spec: ProcessSpec | None = None
    # Fault state the cluster put it in (SIGSTOP, link down); an exit shows in process.poll().
    paused: bool = False
    isolated: bool = False
    # Restarted without waiting for it to serve (``restart_broker(wait=False)``): its address
    # is the one it had; ``await_started`` reads its readiness line later.
    starting: bool = False

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def state(self) -> str:
        """running | exited | paused | isolated (paused wins: it is the stronger fault)."""
        if self.process.poll() is not None:
            return "exited"
        return "paused" if self.paused else "isolated" if self.isolated else "running"


class ProcessCluster:
    """The broker processes (and ZooKeeper, when the architecture needs it) of one running
    cluster; use as a context manager or call start()/stop(). The load client's view of a
    cluster is ``workloads.cluster.ClusterClient``."""

    def __init__(self, spec: ClusterSpec, layout: Layout = LOCAL_LAYOUT) -> None:
        self.spec = spec
        self.layout = layout
        if not layout.local:
            _check_remote(spec)
        # Each machine's directory for this cluster, by machine name (start() makes them).
        self.roots: dict[str, Path] = {}
        # Logs of remote machines come back here when the cluster stops (None: they do not).
        self.collect_to: Path | None = None
        self.brokers: list[BrokerProcess] = []
        # The services the architecture needs, started before the brokers, by name.
        self.services: dict[str, RunningService] = {}
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self.root: Path = Path()
        self.started_at = 0.0
        self.start_seconds = 0.0
        # Every planned broker (standby ones included), and its architecture's command for one.
        self._nodes: list[Node] = []
        self._command: Callable[[Node], ProcessSpec] | None = None
        self.network: NetnsNetwork | None = None  # when spec.network == "netns"
        self.delay: NetworkDelay | None = None  # when spec.rtt_ms is set
        # Exits already reported by poll_exits(), per broker incarnation (pid).
        self._reported: set[int] = set()
        self._client_security = spec.client_security()

    # --- lifecycle --------------------------------------------------------------------------
    def __enter__(self) -> ProcessCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> ProcessCluster:
        t0 = time.monotonic()
        self.started_at = time.time()
        if self.spec.data_dir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix=f"twinbench-{self.spec.arch}-")
            self.root = Path(self._tmp.name)
        else:
            self.root = self.spec.data_dir
            self.root.mkdir(parents=True, exist_ok=True)
        try:
            for machine in self.layout.machines():
                root = machine.cluster_root(self.root)
                machine.makedirs(root)
                self.roots[machine.name] = root
            if self.spec.network == "netns":
                from harness.cluster.netns import NetnsNetwork

                self.network = NetnsNetwork().create(self.spec.brokers + self.spec.standby)
                if self.spec.rtt_ms is not None:
                    from harness.netdelay.control import NetworkDelay

                    self.delay = NetworkDelay(self.network, self.root / "netdelay")
                    self.delay.start(self.spec.rtt_ms)
            self._plan_brokers()
            for node_id in range(self.spec.brokers):
                self.brokers.append(self._new_broker(node_id))
            deadline = time.monotonic() + self.spec.ready_timeout_s
            for b in self.brokers:
                self._await_listening(b, deadline)
            self._wait_for_membership(deadline)
        except BaseException:
            self.stop()
            raise
        self.start_seconds = time.monotonic() - t0
        return self

    def join_standby(self, timeout_s: float = 60.0) -> BrokerProcess:
        """Start the next standby broker (ClusterSpec.standby); returns once it listens. That
        its peers know it is the caller's to observe."""
        node_id = len(self.brokers)
        if node_id >= len(self._nodes):
            raise UserError("no standby broker left to join (ClusterSpec.standby)")
        b = self._new_broker(node_id)
        self.brokers.append(b)
        self._await_listening(b, time.monotonic() + timeout_s)
        return b

    def retire_broker(self, node_id: int) -> None:
        """Stop the last broker for good (SIGTERM, as an operator takes a host out) and forget
        it: counters, CPU and repair() then cover the others only."""
        b = self.broker(node_id)
        if b is not self.brokers[-1]:
            raise UserError(f"broker {node_id} is not the last one; only the last can retire")
        b.process.stop(b.spec.stop_grace_s if b.spec else 10.0)
        self.brokers.pop()

    def _new_broker(self, node_id: int) -> BrokerProcess:
        machine = self.layout.broker(node_id)
        node = self._nodes[node_id]
        spec, process = self._start_process(machine, node)
        b = BrokerProcess(
            node_id, process, data_dir=node.data_dir,
            namespace=self.network.hosts[node_id].namespace if self.network else None,
            machine=machine, spec=spec)
        _known_address(b, node)
        return b

    def _root(self, machine: Machine) -> Path:
        return self.roots.get(machine.name, self.root)

    def _start_process(self, machine: Machine, node: Node) -> tuple[ProcessSpec, ChildProcess]:
        """Start a broker as its architecture's command for ``node`` says."""
        assert self._command is not None
        spec = self._command(node)
        env = [f"{k}={v}" for k, v in spec.env.items()]
        prefix = self.network.hosts[node.node_id].exec_prefix() if self.network else []
        argv = [*prefix, *(["env", *env] if env else []), *spec.argv]
        # A broker whose readiness is its port prints no line the harness reads: its output
        # goes to its log, never into a pipe nobody drains (a full pipe stalls the writer).
        process = machine.process(argv, name=f"{self.spec.arch} broker {node.node_id}",
                                  log_path=self._root(machine) / f"broker-{node.node_id}.log",
                                  stdout_to_log=spec.ready == "port-open")
        return spec, process.start()

    def _await_listening(self, b: BrokerProcess, deadline: float) -> None:
        assert b.spec is not None
        if b.spec.ready == "port-open":
            _await_port(b, deadline)
            # A JVM binds its port before it has registered (Kafka on ZooKeeper) or joined its
            # quorum (KRaft), and may still fail to: it serves once its own Metadata lists it.
            self._await_listed(b, {b.address}, deadline, f"serve at {b.address}")
            return
        if self.spec.metrics:  # printed before listening=
            line = b.process.wait_for_line("metrics=", max(1.0, deadline - time.monotonic()))
            b.metrics = line.split("=", 1)[1]
        line = b.process.wait_for_line("listening=", max(1.0, deadline - time.monotonic()))
        b.host, _, port = line.split("=", 1)[1].rpartition(":")
        b.port = int(port)

    # --- faults ---------------------------------------------------------------------------
    def broker(self, node_id: int) -> BrokerProcess:
        """The broker with ``node_id``; UserError naming the ones that exist otherwise."""
        for b in self.brokers:
            if b.node_id == node_id:
                return b
        ids = ", ".join(str(b.node_id) for b in self.brokers)
        raise UserError(f"no broker {node_id} in this cluster (brokers: {ids})")

    def kill_broker(self, node_id: int) -> None:
        """SIGKILL one broker, as a crash would (failure scenarios and their tests)."""
        b = self.broker(node_id)
        b.process.kill()
        b.paused = False

    def pause_broker(self, node_id: int) -> None:
        """SIGSTOP: alive to the kernel (its sockets stay open) but silent, like a long GC
        pause or a frozen VM; its peers must tell that apart from a crash by timeouts alone."""
        b = self._running(node_id, "pause")
        b.process.pause()
        b.paused = True

    def resume_broker(self, node_id: int) -> None:
        b = self.broker(node_id)
        if not b.paused:
            raise UserError(f"broker {node_id} is not paused")
        b.process.resume()
        b.paused = False

    def restart_broker(self, node_id: int, timeout_s: float = 60.0, *,
                       wait: bool = True) -> BrokerProcess:
        """Start a broker again with its original settings (same id, data directory and
        address); a running broker is stopped first (SIGTERM), a killed one just started.
        ``wait=False`` returns once the process runs: a broker that needs a quorum of its
        peers to start (the Raft twin's) cannot serve while faults keep that quorum away, and a
        fault schedule must go on meanwhile; ``await_started`` waits for it later."""
        b = self.broker(node_id)
        b.process.stop(b.spec.stop_grace_s if b.spec else 10.0)
        b.paused = False
        node = self._nodes[node_id]
        if not self.spec.port and self.network is None:
            # Keep the address clients and peers already know, as a restarted host would.
            node = dataclasses.replace(node, port=b.port, metrics=b.metrics or node.metrics)
        b.spec, b.process = self._start_process(b.machine, node)
        _known_address(b, node)
        b.starting = True
        if wait:
            self.await_started(node_id, timeout_s)
        return b

    def await_started(self, node_id: int, timeout_s: float = 60.0) -> None:
        """Wait until a broker restarted without waiting serves (ProcessError if it does not
        within ``timeout_s``); at once for one already serving."""
        b = self.broker(node_id)
        if b.starting:
            self._await_listening(b, time.monotonic() + timeout_s)
            b.starting = False

    def isolate_broker(self, node_id: int) -> None:
        """Partition one broker away from every other process (brokers, ZooKeeper, clients)."""
        b = self.broker(node_id)
        if self.network is None:
            raise UserError("a network partition needs the cluster started with --network "
                            "netns (each broker in its own network namespace)")
        self.network.isolate(node_id)
        b.isolated = True

    def heal_broker(self, node_id: int) -> None:
        b = self.broker(node_id)
        if self.network is None or not b.isolated:
            raise UserError(f"broker {node_id} is not partitioned away")
        self.network.heal(node_id)
        b.isolated = False

    def cut_link(self, src: int, dst: int) -> None:
        """Drop what broker ``src`` sends to broker ``dst``, one way (a one-sided partition:
        ``dst`` still reaches ``src``)."""
        if self.network is None:
            raise UserError("a one-way cut needs the cluster started with --network netns")
        self.network.cut(self.broker(src).node_id, self.broker(dst).node_id)

    def uncut_link(self, src: int, dst: int) -> None:
        if self.network is None:
            raise UserError("a one-way cut needs the cluster started with --network netns")
        self.network.uncut(self.broker(src).node_id, self.broker(dst).node_id)

    def _running(self, node_id: int, what: str) -> BrokerProcess:
        b = self.broker(node_id)
        if b.process.poll() is not None:
            raise UserError(f"cannot {what} broker {node_id}: it is not running "
                            f"(exited with code {b.process.poll()})")
        return b

    def service(self, name: str, what: str) -> RunningService:
        """The running service ``name``; a UserError when this architecture has none."""
        running = self.services.get(name)
        if running is None:
            names = architectures.choice(architectures.using(name) or ("none",))
            raise UserError(f"{what} applies to {names} clusters only; this one is "
                            f"{self.spec.arch}")
        return running

    def act_on_service(self, service: str, action: str, server: int | None = None) -> str:
        """Apply one of a service's fault actions (stop-zookeeper ...); the answer's value."""
        return self.service(service, action).act(action, server)

    def repair(self, timeout_s: float = 90.0) -> list[str]:
        """Undo every fault: ZooKeeper up, links up, paused brokers resumed, exited brokers
        restarted; then wait until every broker sees all of them. Returns what it did."""
        done = []
        for name, running in self.services.items():
            if running.repair():
                done.append(f"started {name}")
        for b in self.brokers:
            if b.isolated:
                self.heal_broker(b.node_id)
                done.append(f"healed {b.node_id}")
            if b.paused:
                self.resume_broker(b.node_id)
                done.append(f"resumed {b.node_id}")
            if b.process.poll() is not None:
                self.restart_broker(b.node_id)
                done.append(f"restarted {b.node_id}")
        self._wait_for_membership(time.monotonic() + timeout_s)
        return done

    def poll_exits(self) -> list[tuple[int, int]]:
        """(node id, exit status) of brokers that exited since the last call; each exit of
        each process once (a restarted broker's new process is watched afresh)."""
        out = []
        for b in self.brokers:
            code = b.process.poll()
            if code is not None and b.process.pid not in self._reported:
                self._reported.add(b.process.pid)
                out.append((b.node_id, code))
        return out

    def _plan_brokers(self) -> None:
        """Start the architecture's services, then plan every broker: its place (``Node``) and
        the architecture's command for it."""
        spec = self.spec
        layout = self.layout
        planned = spec.brokers + spec.standby
        machines = [layout.broker(i) for i in range(planned)]
        if self.network is not None:
            hosts = [h.address for h in self.network.hosts]
            ports = [NETNS_KAFKA_PORT] * planned
        else:
            hosts = [m.address for m in machines]
            ports = [spec.port + i if spec.port else 0 for i in range(planned)]
        entry = spec.architecture
        for name in entry.services:
            service = services.get(name)
            on = tuple(layout.services.get(name, ()))
            self.services[name] = service.start(spec.service_options(name), ServicePlace(
                self.root / name, host=self.network.gateway if self.network else None,
                machines=on, roots=tuple(self._root(m) / name for m in on),
                brokers=tuple(hosts)))
        roots = tuple(self._root(m) for m in machines)
        self._nodes = [
            Node(i, hosts[i], ports[i], roots[i] / f"broker-{i}", machines[i].python,
                 f"{hosts[i]}:0" if spec.metrics else None)
            for i in range(planned)]
        self._command = entry.command(Launch(
            spec.settings(), spec.arch_options(), self.root, tuple(hosts),
            self.network is not None, {n: s.endpoint for n, s in self.services.items()},
            () if layout.local else tuple(machines), () if layout.local else roots,
            tuple(ports)))

    def _await_listed(self, b: BrokerProcess, want: set[str], deadline: float,
                      what: str) -> None:
        """Until broker ``b`` answers Metadata listing every address of ``want``; ``what``
        names the wait in the error."""
        last = ""
        while True:
            if b.process.poll() is not None:
                raise ProcessError(f"{b.process.name} exited with code {b.process.poll()}"
                                   f"{b.process.tail()}")
            try:
                with KafkaProbe(b.host, b.port, timeout_s=5,
                                security=self._client_security) as probe:
                    seen = {f"{x.host}:{x.port}" for x in probe.metadata([]).brokers}
                if seen >= want:
                    return
                last = f"it lists {len(seen & want)} of the {len(want)} brokers awaited"
            except (OSError, EOFError, ValueError, ProtocolViolation, KafkaError) as exc:
                last = str(exc)
            if time.monotonic() > deadline:
                raise ProcessError(f"{b.process.name} did not {what} within "
                                   f"{self.spec.ready_timeout_s:.0f} s: {last}")
            time.sleep(0.05)  # polling interval of a readiness probe, not a wait for start-up

    def _wait_for_membership(self, deadline: float) -> None:
        """Every broker must answer Metadata listing all N brokers."""
        want = {b.address for b in self.brokers}
        for b in self.brokers:
            self._await_listed(b, want, deadline, "see the whole cluster")

    def stop(self) -> None:
        # Every broker is told at once, so the grace periods overlap: a broker that waits for
        # peers on its way down (a KRaft node for its quorum) waits no longer for the others'.
        for b in self.brokers:
            b.process.signal(signal.SIGTERM)
        for b in self.brokers:
            b.process.stop(b.spec.stop_grace_s if b.spec else 10.0)
        for running in self.services.values():
            running.stop()
        self._collect_and_clean()
        self.services = {}
        if self.delay is not None:
            self.delay.stop()
            self.delay = None
        if self.network is not None:
            self.network.destroy()
            self.network = None
        if self._tmp is not None:
            with contextlib.suppress(OSError):
                self._tmp.cleanup()
            self._tmp = None

    def _collect_and_clean(self) -> None:
        """Bring the logs and last counters of remote machines back (``collect_to``), then
        remove the cluster's directory on each of them. A host that is gone keeps its files."""
        for machine in self.layout.machines():
            root = self.roots.pop(machine.name, None)
            if machine.local or root is None:
                continue
            if self.collect_to is not None:
                dest = self.collect_to / machine.name
                for b in self.brokers:
                    if b.machine.name == machine.name:
                        with contextlib.suppress(OSError, UserError):
                            machine.fetch(b.process.log_path, dest / b.process.log_path.name)
                            machine.fetch(b.data_dir / "counters.json",
                                          dest / f"broker-{b.node_id}.counters.json")
                for running in self.services.values():
                    for log in running.log_paths(machine):
                        with contextlib.suppress(OSError, UserError):
                            machine.fetch(log, dest / f"{log.parent.name}.log")
            machine.remove_tree(root)

    # --- observation ------------------------------------------------------------------------
    @property
    def bootstrap(self) -> str:
        return ",".join(b.address for b in self.brokers)

    def endpoint(self, service: str) -> str | None:
        """Where a service of this cluster is (ZooKeeper: its connect string), or None."""
        running = self.services.get(service)
        return None if running is None else running.endpoint

    def state(self, **extra: Any) -> dict[str, Any]:
        """What ``twinbench fault`` and a user need to find and act on this cluster."""
        return {
            "kind": STATE_KIND,
            "version": 2,
            "arch": self.spec.arch,
            "network": self.spec.network,
            "rtt_ms": None if self.delay is None else self.delay.rtt_ms,
            "root": str(self.root),
            "bootstrap": self.bootstrap,
            "security_protocol": self.spec.protocol.value,
            "services": {name: running.state() for name, running in self.services.items()},
            "brokers": [{
                "node_id": b.node_id, "pid": b.process.pid, "host": b.host, "port": b.port,
                "data_dir": str(b.data_dir), "namespace": b.namespace, "state": b.state,
                "machine": b.machine.name,
                "metrics": b.metrics or None,
            } for b in self.brokers],
            **extra,
        }

    def write_state(self, path: Path, **extra: Any) -> None:
        """Atomically replace ``path`` with ``state()``."""
        path.parent.mkdir(parents=True, exist_ok=True)
        # Not durable: it describes running processes, which a crash of the machine ends.
        replace_file(path, json.dumps(self.state(**extra), indent=2) + "\n",
                     sync_file=False, sync_dir=False)

    def pids(self) -> list[int]:
        pids = [b.process.pid for b in self.brokers]
        for running in self.services.values():
            pids.extend(p.pid for p in running.processes())
        return pids

    def cpu_seconds(self) -> dict[str, float]:
        """User+system CPU seconds so far of every broker and service process, keyed by role,
        name and PID (``broker-0:123``, ``service-zookeeper-0:456``, ``netdelay:789``): a
        restarted process is a new key, so a difference across a restart is never taken for
        CPU spent (the reading is then missing, not wrong)."""
        out: dict[str, float] = {}
        for b in self.brokers:
            out[f"broker-{b.node_id}:{b.process.pid}"] = b.process.cpu_seconds()
        for name, running in self.services.items():
            for i, process in enumerate(running.processes()):
                out[f"{SERVICE_CPU}{name}-{i}:{process.pid}"] = process.cpu_seconds()
        if self.delay is not None:
            out[f"netdelay:{self.delay.pid}"] = process_cpu_seconds(self.delay.pid)
        return out

    def set_rtt(self, rtt_ms: float) -> None:
        """Change the round-trip time the delay line adds (the cluster must have one)."""
        if self.delay is None:
            raise UserError("this cluster has no delay line (start it with a round-trip time "
                            "and --network netns)")
        self.delay.set_rtt(rtt_ms)

    def memory(self) -> dict[str, int]:
        """Resident set size (bytes) of every running broker and service process, keyed by
        role and name (``broker-0``, ``service-zookeeper-0``); a process not running is left
        out rather than read as zero."""
        out = {f"broker-{node}": rss for node, rss in self.rss_bytes().items()}
        for name, running in self.services.items():
            for i, process in enumerate(running.processes()):
                rss = process.rss_bytes()
                if rss is not None:
                    out[f"{SERVICE_CPU}{name}-{i}"] = rss
        return out

    def rss_bytes(self) -> dict[int, int]:
        """Resident set size of every running broker process, by node id (psutil)."""
        out: dict[int, int] = {}
        for b in self.brokers:
            rss = b.process.rss_bytes()
            if rss is not None:  # exited: no reading rather than a wrong one
                out[b.node_id] = rss
        return out


def _check_remote(spec: ClusterSpec) -> None:
    """What a cluster on hosts (harness/remote/) does not do yet: one line each."""
    if spec.network != "loopback":
        raise UserError("--network netns applies to a cluster on this machine; on hosts each "
                        "broker has its host's own address already")
    for name in spec.architecture.services:
        services.get(name).check(spec.service_options(name), spec.network, True)
    if spec.protocol.value != "PLAINTEXT" or spec.metrics:
        raise UserError("--hosts clusters are PLAINTEXT without --metrics for now (TLS/SASL "
                        "files and Prometheus are not deployed to hosts yet)")
    if spec.port:
        raise UserError("--port: with --hosts every broker takes a free port on its host")


def process_cpu_seconds(pid: int) -> float:
    """User+system CPU seconds so far of process ``pid`` (nan when it is gone)."""
    try:
        t = psutil.Process(pid).cpu_times()
    except psutil.Error:
        return float("nan")
    return t.user + t.system


def _known_address(b: BrokerProcess, node: Node) -> None:
    """A broker whose readiness is its port (not a line it prints) is where it was told."""
    if b.spec is not None and b.spec.ready == "port-open":
        b.host, b.port, b.metrics = node.host, b.spec.port or node.port, node.metrics or ""


def _await_port(b: BrokerProcess, deadline: float) -> None:
    """Readiness "port-open": the broker's port accepts a TCP connection."""
    last = ""
    while True:
        if b.process.poll() is not None:
            raise ProcessError(f"{b.process.name} exited with code {b.process.poll()}")
        try:
            with socket.create_connection((b.host, b.port), timeout=1.0):
                return
        except OSError as exc:
            last = str(exc)
        if time.monotonic() > deadline:
            raise ProcessError(f"{b.process.name} did not listen on {b.address}: {last}")
        time.sleep(0.05)  # polling interval of a readiness probe, not a wait for start-up
