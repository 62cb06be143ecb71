"""kafka-zk and kafka-kraft: real Apache Kafka beside the twins, a reference, not under test.

Kafka 3.9 is the real world's twin pair: one broker code base coordinated either by ZooKeeper or
by its embedded Raft quorum (KRaft). ``kafka-zk`` runs it on the same provisioned ZooKeeper the zk
twin uses (harness/services/zookeeper), in a chroot of its own; ``kafka-kraft`` runs three
combined broker+controller nodes (KRaft's combined mode: the first three nodes vote, any further
node is a broker only), 3.9 or 4.x by the ``release`` option. The JVMs start from the releases
`make setup` resolved (harness/kafka), configured for a small box (``KafkaOptions``, every knob
recorded in the run manifest's ``cluster.options``); the cluster's policies (flush, partitions,
auto-creation, min.insync.replicas) are translated into Kafka's properties.

What the harness needs of a broker holds as for the twins: readiness is its port, then Kafka's
Metadata listing every broker (harness/cluster/running.py), never a sleep; every JVM is stopped by
PID, SIGKILL after ``STOP_GRACE_S`` (a KRaft node that lost its quorum can wait minutes on
SIGTERM). What does not hold is refused in one line before a JVM starts: Kafka has no per-request
leadership check (``metadata_checks``), and TLS/SASL listeners, Prometheus and clusters on hosts
are the twins' for now. Real Kafka reports no twinbench counters: kafka-zk's coordination is
ZooKeeper's own count (mntr), as the zk twin's is; kafka-kraft's is its metadata quorum's
requests and bytes, from Kafka's JMX through the exporter agent every node loads
(harness/kafka/jmx.py), which also gives both their per-API request counts.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from brokers.core.errors import UserError
from harness.architectures.entry import (
    Architecture,
    BrokerSettings,
    Coordination,
    Labels,
    Launch,
    Node,
    ProcessSpec,
)
from harness.architectures.options import Options, knob
from harness.cluster.machines import free_ports
from harness.kafka import jmx
from harness.kafka import node as kn
from harness.kafka.releases import JMX_EXPORTER, RELEASES, Release
from harness.kafka.resolve import INSTALL_HINT, cached

# kafka-zk's znodes live under their own chroot: the ensemble may hold the zk twin's too.
CHROOT = "/kafka-zk"
# In network namespaces every node has its own address, so all use Kafka's usual ports.
NETNS_CONTROLLER_PORT = 9093
# SIGTERM starts a controlled shutdown (leaders moved away first), which a node without its
# controller or quorum retries for a long time: SIGKILL after this long.
STOP_GRACE_S = 15.0
# KRaft voters: three when the cluster has three nodes or more (KRaft's usual quorum), else one
# (two voters would tolerate no failure and need both).
QUORUM = 3
# The twins' broker limits (harness/studies/metadata) that Kafka has no equivalent of.
UNLIMITED = ("--max-topics", "--max-partitions-per-topic")


@dataclass(frozen=True)
class KafkaOptions(Options):
    """The choices for a small box (docs/real-kafka.md says what each means for fairness)."""

    heap_mb: int = knob(512, "heap of every Kafka JVM in MiB (-Xms = -Xmx; the start script "
                        "gives 1024)", low=128, high=65536)
    network_threads: int = knob(2, "num.network.threads (Kafka's default 3; the twins run one "
                                "event loop)", low=1, high=64)
    io_threads: int = knob(2, "num.io.threads (Kafka's default 8)", low=1, high=64)
    offsets_partitions: int = knob(3, "__consumer_offsets partitions (Kafka's default 50)",
                                   low=1, high=200)
    cleaner_buffer_mb: int = knob(16, "the log cleaner's dedupe buffer in MiB (Kafka's "
                                  "default 128, allocated on the heap at start)", low=1,
                                  high=4096)
    initial_rebalance_delay_ms: int = knob(100, "group.initial.rebalance.delay.ms (Kafka's "
                                           "default 3000; the twins wait 100)", low=0,
                                           high=300_000)

    def box(self) -> kn.BoxSettings:
        return kn.BoxSettings(
            heap_mb=self.heap_mb, network_threads=self.network_threads,
            io_threads=self.io_threads, offsets_partitions=self.offsets_partitions,
            cleaner_buffer_bytes=self.cleaner_buffer_mb * kn.MiB,
            initial_rebalance_delay_ms=self.initial_rebalance_delay_ms)


@dataclass(frozen=True)
class KafkaZkOptions(KafkaOptions):
    release: str = knob("3.9.2", "the Kafka release (3.9 is the last that runs on ZooKeeper)",
                        choices=tuple(v for v, r in RELEASES.items() if "zookeeper" in r.modes))
    # As the zk twin's session_timeout_ms: how long a killed broker stays registered. A broker
    # restarted sooner finds its own ephemeral registration and exits (Kafka refuses to
    # register over a live session's node).
    session_timeout_ms: int = knob(18_000, "zookeeper.session.timeout.ms (Kafka's default "
                                   "18000)", low=2000, high=600_000)


@dataclass(frozen=True)
class KafkaKraftOptions(KafkaOptions):
    release: str = knob("3.9.2", "the Kafka release: 3.9 (the same code as kafka-zk) or 4.x",
                        choices=tuple(v for v, r in RELEASES.items() if "kraft" in r.modes))


def _release(name: str, version: str, launch: Launch) -> Release:
    """The release to run, after every check that needs no JVM: one line each."""
    if launch.machines:
        raise UserError(f"{name} runs on this machine only for now, not on --hosts")
    s = launch.settings
    if s.protocol.value != "PLAINTEXT":
        raise UserError(f"{name}: PLAINTEXT listeners only for now (TLS and SASL on real Kafka "
                        "are not configured by the harness yet)")
    if shutil.which("java") is None:
        raise UserError(f"{name} needs java on the PATH; {INSTALL_HINT}")
    release = RELEASES[version]
    for bundle, what in ((release, f"Kafka {version}"),
                         (JMX_EXPORTER, f"the JMX exporter ({JMX_EXPORTER.version})")):
        if cached(bundle) is None:
            raise UserError(f"{what} is not resolved here; run `make kafka-jars` (part of "
                            "`make setup`)")
    return release


def min_insync(settings: BrokerSettings, name: str) -> int | None:
    """The core brokers' command-line settings a workload gave, in Kafka's terms; one line
    for any that has no translation."""
    args = list(settings.extra_args)
    out: int | None = None
    while args:
        flag = args.pop(0)
        if flag == "--min-insync-replicas" and args:
            out = int(args.pop(0))
            continue
        if flag in UNLIMITED and args:
            # The twins' guards against a table too large for one Python process. Kafka has
            # no such broker limit, and a metadata case's size was checked against them
            # before any cluster started: on Kafka they limit nothing, as they should not.
            args.pop(0)
            continue
        raise UserError(f"{name}: the broker setting {flag} has no Kafka translation here")
    return out


def _ports(launch: Launch, mode: str) -> list[tuple[int, int, int]]:
    """Per node, its listener port (the cluster's choice, else a free one), its controller
    port (KRaft; else 0) and its JMX exporter's port, the last two free ones."""
    n = len(launch.hosts)
    given = launch.ports or (0,) * n
    controller = mode == "kraft"
    if launch.netns:
        return [(p or 9092, NETNS_CONTROLLER_PORT if controller else 0, jmx.NETNS_PORT)
                for p in given]
    free = iter(free_ports(n * 3))
    out = []
    for p in given:
        listener, ctl, metrics = next(free), next(free), next(free)
        out.append((p or listener, ctl if controller else 0, metrics))
    return out


def _spec(node: Node, planned: kn.KafkaNode, files: kn.NodeFiles) -> ProcessSpec:
    if node.metrics is not None:
        raise UserError("--metrics: real Kafka's metrics are JMX, not served to Prometheus by "
                        "the harness yet")
    if node.data_dir / "kafka" != planned.data_dir:
        raise UserError(f"Kafka node {node.node_id}: data directory {node.data_dir} is not "
                        "the one planned")
    argv = kn.java_command(planned, kn.KAFKA_MAIN, [str(files.properties)], files.log_config,
                           agent=files.agent)
    return ProcessSpec(tuple(argv), ready="port-open", counters="jmx-exporter",
                       stop_grace_s=STOP_GRACE_S, port=planned.port,
                       metrics_port=planned.metrics_port, voter=planned.voter is not None)


def _nodes(launch: Launch, name: str, release: Release, options: KafkaOptions, mode: str
           ) -> list[kn.KafkaNode]:
    extra = min_insync(launch.settings, name)
    s = launch.settings
    n = len(launch.hosts)
    ports = _ports(launch, mode)
    voters: tuple[tuple[int, str, int], ...] = ()
    if mode == "kraft":
        quorum = QUORUM if n >= QUORUM else 1
        voters = tuple((i, launch.hosts[i], ports[i][1]) for i in range(quorum))
    return [kn.KafkaNode(
        release, i, launch.hosts[i], ports[i][0], launch.root / f"broker-{i}" / "kafka", mode,
        controller_port=ports[i][1], voters=voters,
        zookeeper_connect=(f"{launch.services['zookeeper']}{CHROOT}"
                           if mode == "zookeeper" else ""),
        zookeeper_session_timeout_ms=(options.session_timeout_ms
                                      if isinstance(options, KafkaZkOptions) else None),
        cluster_brokers=n, settings=options.box(), flush=s.flush,
        num_partitions=s.num_partitions, auto_create_topics=s.auto_create_topics,
        min_insync_replicas=extra, metrics_port=ports[i][2]) for i in range(n)]


def _command(name: str, mode: str) -> Callable[[Launch], Callable[[Node], ProcessSpec]]:
    def command(launch: Launch) -> Callable[[Node], ProcessSpec]:
        options = launch.options
        assert isinstance(options, KafkaZkOptions | KafkaKraftOptions)
        release = _release(name, options.release, launch)
        nodes = _nodes(launch, name, release, options, mode)
        workdir = launch.root / "kafka"
        files = [kn.write_files(node, workdir) for node in nodes]
        if mode == "kraft":
            # Every node's directory formatted with the one cluster id, concurrently (a JVM
            # each, a few seconds); a restarted node finds its directory formatted.
            cluster_id = kn.new_cluster_id()
            with ThreadPoolExecutor(len(nodes)) as pool:
                list(pool.map(lambda nf: kn.format_storage(nf[0], nf[1], cluster_id),
                              zip(nodes, files, strict=True)))
        return lambda node: _spec(node, nodes[node.node_id], files[node.node_id])
    return command


# What both real-Kafka entries are alike: a reference measured beside the twins, taking admin
# requests at the controller Metadata names, applying the cached policy only, warmed up until
# steady (a JIT), reporting no twinbench counters (the base class stands for "none" in the
# registry's consistency checks; their ProcessSpec says none are read).
_REFERENCE: dict[str, Any] = {
    "counters": "brokers.core.counters:CoordinatorCounters", "compared": False,
    "reference": True, "admin_via_controller": True, "metadata_checks": ("cached",),
    "warmup_until_steady": True}

KAFKA_ZK = Architecture(
    name="kafka-zk",
    summary="real Apache Kafka 3.9 on ZooKeeper (a reference beside the zk twin)",
    labels=Labels(display_name="Kafka on ZooKeeper", short_name="KAFKA-ZK", color="#55A868",
                  order=50, baseline=False, cost_column="coord_messages",
                  cost_label="ZooKeeper requests"),
    options=KafkaZkOptions,
    command=_command("kafka-zk", "zookeeper"),
    coordination=Coordination(messages="zookeeper:packets_received"),
    services=("zookeeper",),
    **_REFERENCE,
)

KAFKA_KRAFT = Architecture(
    name="kafka-kraft",
    summary="real Apache Kafka on KRaft, three combined broker+controller nodes (3.9 or 4.x)",
    labels=Labels(display_name="Kafka on KRaft", short_name="KAFKA-KRAFT", color="#C44E52",
                  order=51, baseline=False, cost_column="coord_messages",
                  cost_label="metadata quorum requests"),
    options=KafkaKraftOptions,
    command=_command("kafka-kraft", "kraft"),
    quorum=True,
    # The metadata quorum's traffic: requests served on the CONTROLLER listeners, and their
    # bytes (harness/kafka/jmx.py).
    coordination=Coordination(messages="jmx:controller_requests", bytes="jmx:controller_bytes"),
    **_REFERENCE,
)
