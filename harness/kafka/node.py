"""One real Kafka node: its configuration for a small box, its files, its command line.

A node is a ``kafka.Kafka`` JVM on the release's resolved class path (harness/kafka/resolve.py).
Everything it reads is written here from ``KafkaNode``: ``server.properties`` and a console-only
logging configuration (Log4j 1 for 3.x, Log4j 2 for 4.x). A KRaft node's directory is formatted
first (``kafka.tools.StorageTool format``, the cluster id shared by the cluster's nodes). The
architecture entries (harness/architectures/kafka.py) plan a cluster's nodes and hand the
command line to the cluster, which starts, probes and stops the JVMs as it does the twins'.

``BoxSettings`` are the choices for a 2-core machine; each is written into the node's
properties (the entries' options carry them, and the run manifest records those).
"""

from __future__ import annotations

import base64
import subprocess
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from brokers.core.errors import UserError
from harness.cluster.processes import ProcessError
from harness.kafka import jmx
from harness.kafka.releases import Release
from harness.kafka.resolve import lib_dir

MiB = 1024 * 1024
KAFKA_MAIN = "kafka.Kafka"
STORAGE_TOOL = "kafka.tools.StorageTool"
# Kafka's Uuid.toString of these two is reserved (the zero id and the metadata topic's id).
RESERVED_IDS = ("AAAAAAAAAAAAAAAAAAAAAA", "AAAAAAAAAAAAAAAAAAAAAQ")
FORMAT_TIMEOUT_S = 120.0


@dataclass(frozen=True, slots=True)
class BoxSettings:
    # Heap per broker JVM (-Xms = -Xmx, so the heap does not grow mid-run). Kafka's start script
    # gives 1 GiB; 512 MiB holds a benchmark's working set with room.
    heap_mb: int = 512
    # num.network.threads (Kafka's default 3) and num.io.threads (8): sized to 2 cores, as the
    # twins run one event loop each.
    network_threads: int = 2
    io_threads: int = 2
    # __consumer_offsets partitions (default 50, all created at the first FindCoordinator, 150
    # replicas at RF 3 mid-benchmark).
    offsets_partitions: int = 3
    # The log cleaner's dedupe buffer (default 128 MiB, allocated on the heap at start).
    cleaner_buffer_bytes: int = 16 * MiB
    # group.initial.rebalance.delay.ms (default 3000: a short consumer run would spend its first
    # 3 s waiting; the twins wait 100 ms, group_initial_rebalance_delay_ms).
    initial_rebalance_delay_ms: int = 100
    # Leaders stay where the run put them (default true: rebalanced every 300 s).
    auto_leader_rebalance: bool = False


@dataclass(frozen=True)
class KafkaNode:
    release: Release
    node_id: int
    host: str
    port: int
    data_dir: Path  # log.dirs (and the KRaft metadata log)
    mode: str  # "kraft" (combined broker and controller) or "zookeeper"
    # KRaft: this node's controller port and every voter as (node id, host, controller port).
    controller_port: int = 0
    voters: tuple[tuple[int, str, int], ...] = ()
    # ZooKeeper mode: host:port[,...]/chroot (the chroot is created by the broker), and the
    # brokers' session timeout (None: Kafka's default, 18 s).
    zookeeper_connect: str = ""
    zookeeper_session_timeout_ms: int | None = None
    # Brokers in the cluster: the internal topics' replication factor is min(3, this).
    cluster_brokers: int = 3
    settings: BoxSettings = field(default_factory=BoxSettings)
    # The cluster's policies, as every architecture applies them (harness/architectures/
    # entry.py, BrokerSettings): the flush policy (os | every_batch | interval_ms:N; os is
    # Kafka's default, log.flush.interval.messages Long.MAX), an auto-created topic's
    # partitions, whether a producer's Metadata creates topics, min.insync.replicas.
    flush: str = "os"
    num_partitions: int = 1
    auto_create_topics: bool = False
    min_insync_replicas: int | None = None
    # The port its JMX exporter serves Kafka's metrics on (harness/kafka/jmx.py); 0: none.
    metrics_port: int = 0

    def __post_init__(self) -> None:
        if self.mode not in self.release.modes:
            raise UserError(f"Kafka {self.release.version} does not run in {self.mode} mode "
                            f"(it runs in: {', '.join(self.release.modes)})")
        if self.mode == "kraft" and not self.voters:
            raise UserError(f"KRaft node {self.node_id} has no voters to join")
        if self.mode == "kraft" and self.voter and self.voter[1:] != (self.host,
                                                                      self.controller_port):
            raise UserError(f"KRaft node {self.node_id}: its voter entry {self.voter} is not "
                            f"its controller listener {self.host}:{self.controller_port}")
        if self.mode == "zookeeper" and not self.zookeeper_connect:
            raise UserError("a ZooKeeper-mode Kafka node needs zookeeper_connect")

    @property
    def voter(self) -> tuple[int, str, int] | None:
        """Its entry among the KRaft voters (None: a broker only, or ZooKeeper mode)."""
        return next((v for v in self.voters if v[0] == self.node_id), None)


def server_properties(node: KafkaNode) -> str:
    s = node.settings
    lines = [
        f"log.dirs={node.data_dir}",
        f"num.network.threads={s.network_threads}",
        f"num.io.threads={s.io_threads}",
        f"offsets.topic.num.partitions={s.offsets_partitions}",
        f"offsets.topic.replication.factor={min(3, node.cluster_brokers)}",
        f"transaction.state.log.replication.factor={min(3, node.cluster_brokers)}",
        f"transaction.state.log.min.isr={min(2, node.cluster_brokers)}",
        f"log.cleaner.dedupe.buffer.size={s.cleaner_buffer_bytes}",
        f"group.initial.rebalance.delay.ms={s.initial_rebalance_delay_ms}",
        f"auto.create.topics.enable={str(node.auto_create_topics).lower()}",
        f"num.partitions={node.num_partitions}",
        f"auto.leader.rebalance.enable={str(s.auto_leader_rebalance).lower()}",
        *flush_properties(node.flush),
    ]
    if node.min_insync_replicas is not None:
        lines.append(f"min.insync.replicas={node.min_insync_replicas}")
    if node.mode == "kraft":
        voters = ",".join(f"{i}@{h}:{p}" for i, h, p in node.voters)
        # A voter is a combined broker and controller (KRaft's combined mode); any further
        # node is a broker only, which reaches the quorum through the voters' listeners.
        controller = (f",CONTROLLER://{node.host}:{node.controller_port}"
                      if node.voter else "")
        lines += [
            f"process.roles={'broker,controller' if node.voter else 'broker'}",
            f"node.id={node.node_id}",
            f"controller.quorum.voters={voters}",
            f"listeners=PLAINTEXT://{node.host}:{node.port}{controller}",
            f"advertised.listeners=PLAINTEXT://{node.host}:{node.port}",
            "inter.broker.listener.name=PLAINTEXT",
            "controller.listener.names=CONTROLLER",
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        ]
    else:
        lines += [
            f"broker.id={node.node_id}",
            f"zookeeper.connect={node.zookeeper_connect}",
            *([] if node.zookeeper_session_timeout_ms is None else
              [f"zookeeper.session.timeout.ms={node.zookeeper_session_timeout_ms}"]),
            f"listeners=PLAINTEXT://{node.host}:{node.port}",
            f"advertised.listeners=PLAINTEXT://{node.host}:{node.port}",
        ]
    return "\n".join(lines) + "\n"


def flush_properties(policy: str) -> list[str]:
    """The twins' flush policy (brokers/core/config.py, FlushPolicy) in Kafka's terms.
    every_batch: a flush after every append (log.flush.interval.messages=1; an append is one
    produce request's batch for a partition, as the twins fsync one batch). interval_ms:N: the
    flusher checks every N ms and flushes a log N ms after its last flush (Kafka's scheduler
    checks never by default, so both are set). os: nothing, Kafka's default."""
    if policy == "os":
        return []
    if policy == "every_batch":
        return ["log.flush.interval.messages=1"]
    kind, _, value = policy.partition(":")
    if kind == "interval_ms" and value.isdigit() and int(value) > 0:
        return [f"log.flush.interval.ms={value}", f"log.flush.scheduler.interval.ms={value}"]
    raise UserError(f"flush policy {policy!r}: choose os, every_batch or interval_ms:N")


def log_config(release: Release, level: str = "INFO") -> tuple[str, str]:
    """(file name, text) of a console-only logging configuration at ``level`` (a broker's
    INFO; the perf tools' WARN, so their summaries are not buried), the chatty request and
    state-change loggers at WARN. The readiness of a KRaft node is not read from it (the
    harness asks Metadata), but a failing start is explained by it."""
    if release.logging == "reload4j":
        return "log4j.properties", "\n".join([
            f"log4j.rootLogger={level}, stdout",
            "log4j.appender.stdout=org.apache.log4j.ConsoleAppender",
            "log4j.appender.stdout.layout=org.apache.log4j.PatternLayout",
            "log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n",
            "log4j.logger.state.change.logger=WARN",
            "log4j.logger.kafka.request.logger=WARN",
            "log4j.logger.org.apache.zookeeper=WARN",
        ]) + "\n"
    return "log4j2.properties", "\n".join([
        "status = warn",
        "appender.console.type = Console",
        "appender.console.name = STDOUT",
        "appender.console.layout.type = PatternLayout",
        "appender.console.layout.pattern = [%d] %p %m (%c)%n",
        f"rootLogger.level = {level.lower()}",
        "rootLogger.appenderRef.stdout.ref = STDOUT",
        "logger.sc.name = state.change.logger",
        "logger.sc.level = warn",
        "logger.req.name = kafka.request.logger",
        "logger.req.level = warn",
    ]) + "\n"


def logging_flag(release: Release, path: Path) -> str:
    """The JVM flag that points the release's logging backend at ``path``."""
    if release.logging == "reload4j":
        return f"-Dlog4j.configuration=file:{path}"
    return f"-Dlog4j2.configurationFile={path}"


def java_command(node: KafkaNode, main: str, args: Sequence[str], log_file: Path,
                 heap_mb: int | None = None, agent: str | None = None) -> list[str]:
    """java with the start script's GC flags, an English locale (the perf tools' output is
    printf'd), the release's class path (the wildcard expanded by the JVM) and ``main``;
    ``agent`` a -javaagent flag (the JMX exporter's) placed before the class path."""
    heap = heap_mb if heap_mb is not None else node.settings.heap_mb
    return ["java", *([agent] if agent else []), f"-Xms{heap}m", f"-Xmx{heap}m",
            "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
            "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
            "-Djava.awt.headless=true", "-Duser.language=en", "-Duser.country=US",
            f"-Dkafka.logs.dir={node.data_dir.parent / 'logs'}",
            logging_flag(node.release, log_file),
            "-cp", f"{lib_dir(node.release)}/*", main, *args]


def new_cluster_id() -> str:
    """A Kafka Uuid as Kafka prints it: 16 random bytes, base64url without padding, never a
    reserved id nor one starting with '-'."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-") and text not in RESERVED_IDS:
            return text


@dataclass
class NodeFiles:
    properties: Path
    log_config: Path
    # The JMX exporter's flag for a node with a metrics port, else None.
    agent: str | None = None


def write_files(node: KafkaNode, workdir: Path) -> NodeFiles:
    workdir.mkdir(parents=True, exist_ok=True)
    node.data_dir.mkdir(parents=True, exist_ok=True)
    props = workdir / f"node-{node.node_id}.properties"
    props.write_text(server_properties(node))
    name, text = log_config(node.release)
    logcfg = workdir / name
    logcfg.write_text(text)
    agent = (jmx.agent_flag(node.host, node.metrics_port, jmx.write_config(workdir))
             if node.metrics_port else None)
    return NodeFiles(props, logcfg, agent)


def format_storage(node: KafkaNode, files: NodeFiles, cluster_id: str) -> None:
    """KRaft: write the node's meta.properties and bootstrap metadata (once; an already
    formatted directory is left as it is)."""
    command = java_command(node, STORAGE_TOOL, ["format", "-t", cluster_id, "-c",
                                                str(files.properties), "--ignore-formatted"],
                           files.log_config, heap_mb=256)
    done = subprocess.run(command, capture_output=True, text=True, timeout=FORMAT_TIMEOUT_S,
                          check=False)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or [""]
        raise ProcessError(f"Kafka {node.release.version} node {node.node_id}: formatting "
                           f"{node.data_dir} failed (exit {done.returncode}): {tail[0]}")
