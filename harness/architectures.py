"""The architectures twinbench compares, chosen by name: one registry entry per twin.

As uvicorn picks its event loop and its HTTP protocol from a table of names, the harness picks
a twin from ``ARCHITECTURES`` by the name a user gives (``--arch zk``) and asks its entry, never
the name, whatever differs between twins:

* how to launch a broker: ``python -m <module>`` with the core's arguments (node id, listen
  address, data directory, flush and metadata policies, ``--num-partitions`` and
  ``--[no-]auto-create-topics``, limits: one meaning on every twin, so they are the cluster's
  ``ClusterSpec`` fields, not ``options``) plus ``broker_args``;
* which external services a cluster needs first (``services``: ZooKeeper, provisioned by
  harness/zookeeper.py); a fault that acts on a service (harness/faults.py ``Action.service``:
  stop-zookeeper ...) applies only to the architectures that have it;
* which ``ClusterSpec`` knobs it reads (``options``), which the run manifest records;
* how the harness reads its counters: ``counters`` names its class of the counters contract
  (brokers/core/counters.py), which harness/driver/counters.py diffs as a whole, and
  ``columns`` which of those counters fill coordination.csv columns of its own (the
  ZooKeeper service's readings, mntr and CPU, come with the service, not the entry);
* how tables and figures label it and which architecture is the comparison's reference
  (``labels``: every ratio is other / baseline; zk is the baseline, hence DSBS/ZK).

Adding an architecture (say a Raft-based metadata quorum, as KRaft) is one package under
brokers/ (its Coordinator, its ``CoordinatorCounters`` subclass, its ``python -m`` entry point)
plus one entry here; the CLI's ``--arch`` choices, the driver, the fault planner and the
contract suite (tests/support/clusters.py) all read this table.

The analysis and this table. spark_analysis promises to import no broker, client or harness
code and to read run logs only, so it cannot import this module. Rather than a second copy of
the labels there, the harness writes each measured architecture's ``labels`` into its run
manifests (key ``architectures``, docs/result-format.md), and the analysis labels what it finds
in the manifests. Run logs written before that key (format 1, and format 2 until now) carry no
labels; for them the analysis has a built-in fallback for zk and dsbs
(spark_analysis/archs.py), which a unit test holds equal to the entries below. So the
definition stays here, data still flows one way (harness -> run log -> analysis), and a run log
stays self-describing when the registry changes later.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from brokers.core.errors import UserError
from harness.machines import LOCAL, Machine
from twinbench_common.labels import ArchLabels

if TYPE_CHECKING:
    from brokers.core.counters import CoordinatorCounters
    from harness.cluster import ClusterSpec

# The external coordination service a twin may need: a real Apache ZooKeeper (or ensemble).
ZOOKEEPER = "zookeeper"
# ``--arch both``: every architecture of the registry, interleaved session by session.
BOTH = "both"
# In a network namespace every broker has an address of its own, so all use the usual port.
NETNS_GOSSIP_PORT = 7946


# What the analysis needs to show an architecture; written into run manifests. Defined in
# twinbench_common because the analysis reads the same record back from the manifests.
Labels = ArchLabels


@dataclass(frozen=True)
class Launch:
    """What a cluster knows when it writes its brokers' command lines."""

    spec: ClusterSpec
    # Parent of every broker's data directory (and of files the brokers share).
    root: Path
    # Each broker's host address: its namespace's with network netns, its host's with a hosts
    # file, else loopback.
    hosts: tuple[str, ...]
    # The brokers run in network namespaces (harness/netns.py).
    netns: bool
    # The provisioned ZooKeeper's connect string with the cluster's chroot (ZOOKEEPER users).
    zookeeper: str | None
    # Each broker's machine and that machine's directory for the cluster (harness/machines.py);
    # empty: every broker on this machine, under root.
    machines: tuple[Machine, ...] = ()
    roots: tuple[Path, ...] = ()

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
class Architecture:
    # The name on the command line (--arch), in run ids and in run logs' arch columns.
    name: str
    # One line for --help.
    summary: str
    # The broker program: python -m MODULE (it takes brokers/core/cli.py's arguments).
    module: str
    # Its arguments beyond the core's: one list per broker, in node id order.
    broker_args: Callable[[Launch], list[list[str]]]
    # External services the cluster starts before the brokers (ZOOKEEPER), whose faults apply.
    services: frozenset[str]
    # The ClusterSpec knobs only this architecture reads; run manifests record them (cluster).
    options: tuple[str, ...]
    # Its class of the counters contract, as "module:attribute" (imported when first needed:
    # a twin's package may pull in its client libraries).
    counters: str
    # coordination.csv column -> the counter whose increase, summed over brokers, fills it.
    columns: Mapping[str, str]
    labels: Labels
    # Which broker decides the creation of a topic, for benchmarks (None: a central store).
    arbiter: Callable[[str, Sequence[int]], int] | None = None

    def counters_class(self) -> type[CoordinatorCounters]:
        module, _, attr = self.counters.partition(":")
        cls: type[CoordinatorCounters] = getattr(importlib.import_module(module), attr)
        return cls

    def uses(self, service: str | None) -> bool:
        """Whether a fault or option acting on ``service`` applies (None: applies to all)."""
        return service is None or service in self.services


# --- the twins' launch details ------------------------------------------------------------------


def _zk_broker_args(launch: Launch) -> list[list[str]]:
    assert launch.zookeeper is not None, "the cluster provisions ZooKeeper first"
    timeout = launch.spec.zk_session_timeout_ms
    session = [] if timeout is None else ["--zk-session-timeout-ms", str(timeout)]
    auth: list[list[str]] = [[] for _ in launch.hosts]
    if launch.spec.protocol.value != "PLAINTEXT":
        # A secured cluster secures its ZooKeeper state too: digest auth and ACLs.
        from harness.cluster import ZK_CREDENTIAL_FILE, new_zk_credential

        auth = [["--zk-auth-file", str(path)]
                for path in launch.share(ZK_CREDENTIAL_FILE, new_zk_credential())]
    return [["--zookeeper", launch.zookeeper, *session, *a] for a in auth]


def _dsbs_broker_args(launch: Launch) -> list[list[str]]:
    from harness.cluster import GOSSIP_KEY_FILE, new_gossip_key

    if launch.netns:
        gossip = [f"{h}:{NETNS_GOSSIP_PORT}" for h in launch.hosts]
    else:
        gossip = [f"{h}:{p}" for h, p in zip(launch.hosts, launch.free_ports(), strict=True)]
    keys = launch.share(GOSSIP_KEY_FILE, new_gossip_key())
    return [["--gossip", g, "--seeds", ",".join(gossip),
             "--gossip-preset", launch.spec.gossip_preset, "--gossip-key-file", str(key)]
            for g, key in zip(gossip, keys, strict=True)]


def _dsbs_arbiter(topic: str, node_ids: Sequence[int]) -> int:
    """The top rendezvous rank of the name over the brokers
    (brokers/dsbs_broker/gossip/creation.py)."""
    from brokers.dsbs_broker.tables.replica_placement import rendezvous_order

    return rendezvous_order(topic, node_ids)[0]


ZK = Architecture(
    name="zk",
    summary="coordinated by a real Apache ZooKeeper, as Kafka was before KRaft",
    module="brokers.zk_broker",
    broker_args=_zk_broker_args,
    services=frozenset({ZOOKEEPER}),
    options=("zk_nodes", "zk_session_timeout_ms"),
    counters="brokers.zk_broker.counters:ZkCounters",
    columns={},
    labels=Labels(display_name="ZooKeeper", short_name="ZK", color="#4C72B0", order=0,
                  baseline=True, cost_column="zk_requests", cost_label="ZooKeeper requests"),
)
DSBS = Architecture(
    name="dsbs",
    summary="every broker keeps its own tables and gossips over UDP (SWIM)",
    module="brokers.dsbs_broker",
    broker_args=_dsbs_broker_args,
    services=frozenset(),
    options=("gossip_preset",),
    counters="brokers.dsbs_broker.counters:DsbsCounters",
    columns={"gossip_packets": "gossip_packets_out"},
    labels=Labels(display_name="DSBS", short_name="DSBS", color="#DD8452", order=1,
                  baseline=False, cost_column="gossip_packets", cost_label="gossip packets"),
    arbiter=_dsbs_arbiter,
)

# Every architecture by name, in the order of their labels (tables, figures, `--arch both`).
ARCHITECTURES: dict[str, Architecture] = {
    a.name: a for a in sorted((ZK, DSBS), key=lambda a: a.labels.order)}


def names() -> tuple[str, ...]:
    return tuple(ARCHITECTURES)


def choice(options: Sequence[str]) -> str:
    """``a, b or c``: how an error message lists what may be chosen."""
    return options[0] if len(options) == 1 else f"{', '.join(options[:-1])} or {options[-1]}"


def get(name: str) -> Architecture:
    """The entry named ``name``; a UserError listing the names otherwise."""
    try:
        return ARCHITECTURES[name]
    except KeyError:
        raise UserError(f"unknown architecture {name!r}; choose {choice(names())}") from None


def run_choices() -> tuple[str, ...]:
    """What ``twinbench run --arch`` takes: a name, or ``both``."""
    return (*names(), BOTH)


def expand(arch: str) -> tuple[str, ...]:
    """``--arch`` -> the architectures a run measures (``both``: all, interleaved)."""
    if arch == BOTH:
        return names()
    if arch not in ARCHITECTURES:
        raise UserError(f"unknown architecture {arch!r}; choose {choice(run_choices())}")
    return (arch,)


def baseline() -> Architecture:
    """The comparison's reference."""
    return next(a for a in ARCHITECTURES.values() if a.labels.baseline)


def using(service: str) -> tuple[str, ...]:
    """The architectures whose clusters have ``service``."""
    return tuple(a.name for a in ARCHITECTURES.values() if service in a.services)


def manifest_labels(arches: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The ``architectures`` key of a run manifest: the labels of every architecture the run
    measured (docs/result-format.md)."""
    return {name: get(name).labels.as_manifest() for name in arches}
