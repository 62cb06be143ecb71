"""An architecture's registry entry: everything the harness asks of it, and nothing more.

The harness never branches on an architecture's name. It asks the entry:

* how to start a broker: ``command`` turns what the cluster decided (``Launch``: the cluster's
  generic settings, this architecture's options, its services' endpoints, where the files go)
  into a function from one broker's place (``Node``) to the process to run (``ProcessSpec``:
  a command line any program can have, ``python -m`` or ``java``, how the harness tells it is
  listening, how it reads its counters, how long it may take to stop). It is called again for
  a broker that restarts, with the address it had;
* its options (``options``, an ``Options`` dataclass: harness/architectures/options.py), which
  workloads and the command line hand over without knowing them;
* the services its cluster needs first (``services``: names in harness/services, ZooKeeper's);
* how its coordination shows in the generic columns of coordination.csv (``coordination``),
  and which class of the counters contract its brokers report (``counters``);
* how tables and figures label it (``labels``, written into run manifests for the analysis).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from brokers.core.security.listeners import SecurityProtocol
from harness.architectures.options import Options
from harness.cluster.machines import LOCAL, Machine
from twinbench_common.labels import ArchLabels

if TYPE_CHECKING:
    from brokers.core.counters import CoordinatorCounters

# What the analysis needs to show an architecture; written into run manifests. Defined in
# twinbench_common because the analysis reads the same record back from the manifests.
Labels = ArchLabels

# How the harness learns a broker serves: "listening-line": the program prints
# ``listening=HOST:PORT`` (and ``metrics=HOST:PORT`` first when it serves metrics), so it may
# pick its own free port; "port-open": its port (given, never 0) accepts a TCP connection.
Readiness = Literal["listening-line", "port-open"]
# How its counters are read: "signal-dump": SIGUSR1 makes it write ``counters.json`` into its
# data directory (brokers/core/broker.py), read back through its counters class;
# "jmx-exporter": its JVM serves Kafka's own metrics on ``metrics_port`` (harness/kafka/jmx.py),
# read into the ``jmx`` source; None: the architecture reports none (its coordination columns
# stay empty).
CounterSource = Literal["signal-dump", "jmx-exporter"] | None


@dataclass(frozen=True)
class Node:
    """One broker process, where the cluster placed it."""

    node_id: int
    # Its listener's address: its network namespace's, its host's, or loopback.
    host: str
    # Its listener's port; 0: the program picks a free one (readiness "listening-line").
    port: int
    # Its data directory, on its machine.
    data_dir: Path
    # The Python that runs the project on its machine.
    python: str
    # HOST:PORT its Prometheus endpoint binds (port 0: a free one), or None without metrics.
    metrics: str | None


@dataclass(frozen=True)
class ProcessSpec:
    """One broker process to run: what its command line is and how the harness handles it."""

    argv: tuple[str, ...]
    # Environment variables set for it (beyond the harness's own environment).
    env: Mapping[str, str] = field(default_factory=dict)
    ready: Readiness = "listening-line"
    counters: CounterSource = "signal-dump"
    # SIGTERM, then SIGKILL after this long: a JVM waiting for a lost quorum can wait minutes.
    stop_grace_s: float = 10.0
    # Readiness "port-open" on a port the command chose itself (the node's was 0): where the
    # harness then finds it. None: the node's port.
    port: int | None = None
    # Counters "jmx-exporter": the port its exporter serves on, at the broker's host.
    metrics_port: int | None = None
    # One of its architecture's quorum voters (Architecture.quorum).
    voter: bool = False


@dataclass(frozen=True)
class BrokerSettings:
    """The cluster's settings every architecture applies alike (harness/cluster/spec.py's
    ClusterSpec has them; docs/architecture.md, fairness rule 2)."""

    # Storage flush policy (every_batch | interval_ms:N | os).
    flush: str
    # per_request | cached: where a broker checks leadership on produce and fetch.
    metadata_check: str
    # Partitions of an auto-created topic, and whether topics are auto-created.
    num_partitions: int
    auto_create_topics: bool
    # The listener's security protocol and its files (None when the protocol needs none).
    protocol: SecurityProtocol
    ssl_certfile: Path | None
    ssl_keyfile: Path | None
    # The CA that signed the brokers' certificate: what a broker trusts fetching from a peer.
    ssl_ca_location: Path | None
    sasl_mechanisms: tuple[str, ...]
    sasl_credentials_file: Path | None
    # Settings of the workload in the core brokers' command-line form (limits,
    # --min-insync-replicas): brokers/core/cli.py's flags, which an architecture not built on
    # the core translates or refuses.
    extra_args: tuple[str, ...] = ()


@dataclass(frozen=True)
class Launch:
    """What a cluster knows when it plans its brokers' command lines."""

    settings: BrokerSettings
    # This architecture's options, parsed (the entry's ``options`` class).
    options: Options
    # Parent of every broker's data directory (and of files the brokers share).
    root: Path
    # Each planned broker's host address (standby brokers included), in node id order.
    hosts: tuple[str, ...]
    # The brokers run in network namespaces (harness/cluster/netns.py).
    netns: bool
    # Each service the entry declared -> the endpoint its brokers are given (ZooKeeper: the
    # connect string, without a chroot: choosing one is the architecture's business).
    services: Mapping[str, str]
    # Each broker's machine and that machine's directory for the cluster
    # (harness/cluster/machines.py); empty: every broker on this machine, under root.
    machines: tuple[Machine, ...] = ()
    roots: tuple[Path, ...] = ()
    # Each planned broker's listener port, as its Node will have it (0: not chosen by the
    # cluster). An architecture whose brokers must know each other's ports before any starts
    # (a KRaft quorum's voters) reads them here.
    ports: tuple[int, ...] = ()

    def share(self, name: str, text: str) -> list[Path]:
        """A file every broker reads (mode 0600: keys), on each broker's machine; its path
        per broker."""
        if not self.machines:
            path = self.root / name
            LOCAL.write_text(path, text, 0o600)
            return [path] * len(self.hosts)
        paths = [root / name for root in self.roots]
        written: set[tuple[str, Path]] = set()
        for machine, path in zip(self.machines, paths, strict=True):
            if (machine.name, path) not in written:
                machine.write_text(path, text, 0o600)
                written.add((machine.name, path))
        return paths

    def free_ports(self) -> list[int]:
        """One free port per broker on its machine (distinct among a machine's brokers)."""
        machines = self.machines or (LOCAL,) * len(self.hosts)
        wanted: dict[str, list[int]] = {}
        for i, m in enumerate(machines):
            wanted.setdefault(m.name, []).append(i)
        ports = [0] * len(machines)
        for indices in wanted.values():
            for i, port in zip(indices, machines[indices[0]].free_ports(len(indices)),
                               strict=True):
                ports[i] = port
        return ports


@dataclass(frozen=True)
class Coordination:
    """How an architecture's coordination fills coordination.csv's generic columns: each is
    the increase of one counter over a session, summed over the cluster, named
    ``coordinator:<counter>`` (its brokers' coordinator counters) or ``<service>:<counter>``
    (a service's own count, harness/services), or a sum of such, ``a:x+b:y`` (dedicated Raft
    controllers' messages beside the brokers'); None: not measured."""

    # Coordination messages (coord_messages): its cost figure's measure.
    messages: str | None
    # Their bytes (coord_bytes).
    bytes: str | None = None


@dataclass(frozen=True)
class Architecture:
    # The name on the command line (--arch), in run ids and in run logs' arch columns.
    name: str
    # One line for --help.
    summary: str
    labels: Labels
    # Its knobs: an Options dataclass (its defaults are what an empty block means).
    options: type[Options]
    # Called once per cluster; the function it returns once per broker start.
    command: Callable[[Launch], Callable[[Node], ProcessSpec]]
    # Its class of the counters contract, as "module:attribute" (imported when first needed:
    # a twin's package may pull in its client libraries).
    counters: str
    coordination: Coordination
    # External services the cluster starts before the brokers (harness/services), whose
    # faults then apply.
    services: tuple[str, ...] = ()
    # Which broker decides the creation of a topic, for benchmarks (None: a central store).
    arbiter: Callable[[str, Sequence[int]], int] | None = None
    # The most brokers a cluster of it may have (1: a single-node architecture).
    max_brokers: int = 64
    # Part of the comparison: ``--arch all`` (and ``both``) runs every compared architecture.
    compared: bool = True
    # Replicates partitions (its coordinator implements brokers.core.isr_changes.IsrChanges).
    replicates: bool = True
    # Its metadata is decided by a quorum of voters among its nodes (KRaft): the fault target
    # "voter" (a voter that is not the active controller) applies to it alone.
    quorum: bool = False
    # Its controller is one of its brokers (Metadata names it; the fault target "controller"
    # kills it). False: dedicated controller processes (a service's), which Metadata cannot
    # name; their faults are the service's own actions.
    controller_is_a_broker: bool = True
    # Its admin requests (CreateTopics) go to the broker Metadata names as the controller, as
    # Kafka's own admin client sends them: a ZooKeeper-mode Kafka broker that is not the
    # controller answers NOT_CONTROLLER (a KRaft broker forwards to its quorum). The twins
    # take them at any broker.
    admin_via_controller: bool = False
    # A reference system measured beside the twins, not under test (real Apache Kafka): the
    # contract suite, the nemesis, the regression and the benchmarks of the twins' code leave
    # it out; a run measures it when named (``--arch zk,dsbs,kafka-kraft``).
    reference: bool = False
    # The metadata_check policies its brokers can apply (docs/architecture.md, fairness rule
    # 2). Real Kafka serves leadership from its cache only: a run sweeping both policies
    # measures it in the cached cells alone, and a cluster asking for another is refused.
    metadata_checks: tuple[str, ...] = ("per_request", "cached")
    # Warm-up beyond the workload's ``warmup_sessions``: unrecorded sessions on a fresh cluster
    # until two in a row produce within ``STEADY_TOLERANCE`` of each other (at most
    # ``STEADY_MAX_SESSIONS``). A JVM compiles its hot paths over its first minutes of load
    # (Kafka's records/s rose threefold over the first ten sessions of a 32 B x 20 cell here);
    # measured before that, a JIT is compared, not a design. The run manifest records how many
    # each cluster took (``cluster.warmup_sessions``).
    warmup_until_steady: bool = False
    # Top-level workload keys of earlier versions that were this architecture's options:
    # old key -> option name (a workload using one is told the new spelling).
    legacy_keys: Mapping[str, str] = field(default_factory=dict)

    def counters_class(self) -> type[CoordinatorCounters]:
        module, _, attr = self.counters.partition(":")
        cls: type[CoordinatorCounters] = getattr(importlib.import_module(module), attr)
        return cls

    def uses(self, service: str | None) -> bool:
        """Whether a fault or option acting on ``service`` applies (None: applies to all)."""
        return service is None or service in self.services
