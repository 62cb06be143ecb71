"""Frozen configuration for the broker core: one dataclass per component, a comment per knob.

Defaults follow Apache Kafka's where Kafka has the same knob, so a reader can compare. Every
value is validated in ``__post_init__``; a bad value raises ``UserError`` with the knob's name,
which the CLI prints as one line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Literal

from brokers.core.errors import UserError
from brokers.core.protocol.records import HEADER_SIZE
from brokers.core.replication.config import ReplicationConfig
from brokers.core.security.listeners import Listener, SecurityProtocol

MiB = 1024 * 1024


class FlushMode(Enum):
    EVERY_BATCH = "every_batch"  # fsync after every append, before the ack: no acked loss
    INTERVAL_MS = "interval_ms"  # fsync dirty logs every N ms: bounded loss window
    OS = "os"  # never fsync ourselves; the page cache decides (Kafka's default)


@dataclass(frozen=True)
class FlushPolicy:
    mode: FlushMode = FlushMode.OS
    # Only for INTERVAL_MS: how often the broker fsyncs logs that have unflushed appends.
    interval_ms: int = 0

    @classmethod
    def parse(cls, text: str) -> FlushPolicy:
        """Parse the CLI/workload spelling: ``every_batch``, ``os`` or ``interval_ms:N``."""
        text = text.strip()
        if text == FlushMode.EVERY_BATCH.value:
            return cls(FlushMode.EVERY_BATCH)
        if text == FlushMode.OS.value:
            return cls(FlushMode.OS)
        m = re.fullmatch(r"interval_ms:(\d+)", text)
        if m and int(m.group(1)) > 0:
            return cls(FlushMode.INTERVAL_MS, int(m.group(1)))
        raise UserError(
            f"flush policy {text!r} is not one of every_batch, os, interval_ms:N (N > 0)"
        )

    def __str__(self) -> str:
        if self.mode is FlushMode.INTERVAL_MS:
            return f"interval_ms:{self.interval_ms}"
        return self.mode.value


@dataclass(frozen=True)
class StorageConfig:
    # Roll to a new segment file once the active one reaches this size (Kafka: log.segment.bytes
    # is 1 GiB; smaller here so retention has something to delete on a laptop-sized run).
    segment_bytes: int = 256 * MiB
    # Add a sparse offset-index entry after this many bytes of batches (log.index.interval.bytes).
    index_interval_bytes: int = 4096
    # When appended bytes reach the disk; see FlushMode.
    flush: FlushPolicy = field(default_factory=FlushPolicy)
    # Delete whole closed segments whose newest batch is older than this; None keeps forever.
    retention_ms: int | None = None
    # Delete oldest closed segments while the partition is larger than this; None = no limit.
    retention_bytes: int | None = None
    # How often the broker checks retention (log.retention.check.interval.ms).
    retention_check_interval_ms: int = 300_000
    # Largest batch (or produce payload per partition) accepted (message.max.bytes, ~1 MiB in
    # Kafka; larger here because the paper sends 128 KiB messages in batches of 20).
    max_batch_bytes: int = 64 * MiB
    # Segment files kept open at once, over all partitions: the least recently used one is
    # closed (fdatasync'ed first when it has unflushed appends) and reopened on its next read or
    # append, so the broker's descriptors stay bounded however many partitions and segments it
    # holds. Kafka keeps every segment open and asks the operator to raise ulimit instead.
    max_open_segments: int = 1000

    def __post_init__(self) -> None:
        if self.segment_bytes < 1024:
            raise UserError("segment_bytes must be at least 1024")
        if self.index_interval_bytes < 1:
            raise UserError("index_interval_bytes must be positive")
        if self.retention_ms is not None and self.retention_ms <= 0:
            raise UserError("retention_ms must be positive or unset")
        if self.retention_bytes is not None and self.retention_bytes <= 0:
            raise UserError("retention_bytes must be positive or unset")
        if self.max_batch_bytes < HEADER_SIZE:
            raise UserError("max_batch_bytes must hold at least one RecordBatch header")
        if self.max_open_segments < 1:
            raise UserError("max_open_segments must be at least 1")


@dataclass(frozen=True)
class ListenerConfig:
    """Limits of the Kafka listener: what one client, or many, may hold of the broker."""

    # Client connections open at once (max.connections). One more is closed as soon as it is
    # accepted: refusing it costs one accept and one close, keeping it would cost a descriptor
    # and buffers. Connections already open are unaffected.
    max_connections: int = 1000
    # Client connections open at once from one client address (max.connections.per.ip), so one
    # host cannot take all of max_connections.
    max_connections_per_ip: int = 500
    # Close a connection after this long without a complete request while it is owed no answer
    # (connections.max.idle.ms, Kafka's 10 minutes). Bytes of an unfinished frame are not
    # activity, so a client trickling a frame byte by byte (slow loris) is closed too.
    connections_max_idle_ms: int = 600_000
    # Per connection: bytes of requests read but not yet answered plus bytes of answers not yet
    # handed to the socket (Kafka bounds the first, broker-wide, with queued.max.request.bytes).
    # At the limit the broker stops dispatching that connection's requests and stops reading
    # from it until answers drain, so a client that pipelines without reading its answers, or
    # stacks fetches behind a long poll, holds at most this much plus one request and one answer.
    queued_max_request_bytes: int = 100 * MiB
    # Broker-wide: request bytes held for every connection at once, unfinished frames included
    # (Kafka's queued.max.request.bytes is this pool). At the limit, connections holding more
    # than REQUEST_MEMORY_FLOOR stop reading until the pool is below 7/8 of it, while small
    # requests (ordinary clients) are still read and served; past 9/8 of it the connection with
    # the most unfinished or undispatched bytes is closed (server.py says why both).
    request_memory_bytes: int = 256 * MiB

    def __post_init__(self) -> None:
        if self.max_connections < 1:
            raise UserError("max_connections must be at least 1")
        if self.max_connections_per_ip < 1:
            raise UserError("max_connections_per_ip must be at least 1")
        if self.connections_max_idle_ms < 1:
            raise UserError("connections_max_idle_ms must be positive")
        if self.queued_max_request_bytes < 1:
            raise UserError("queued_max_request_bytes must be positive")
        if self.request_memory_bytes < 1 * MiB:
            raise UserError("request_memory_bytes must be at least 1 MiB")


# The SASL mechanisms a SASL listener can offer (brokers/core/security/mechanisms.py).
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


@dataclass(frozen=True)
class SecurityConfig:
    """What TLS and SASL listeners need; unused (and unchecked) while every listener is
    PLAINTEXT."""

    # PEM certificate chain TLS listeners present (Kafka's keystore, as PEM).
    ssl_certfile: Path | None = None
    # The certificate's private key, PEM, unencrypted.
    ssl_keyfile: Path | None = None
    # PEM CA a client's certificate must be signed by; None asks for no client certificate
    # (ssl.client.auth=none, Kafka's default). Set: required.
    ssl_cafile: Path | None = None
    # PEM CA this broker trusts when it connects to another broker's TLS listener (a
    # follower fetching from its leader; Kafka's ssl.truststore.location); None: the system's.
    ssl_truststore: Path | None = None
    # Mechanisms SASL listeners offer, in the order SaslHandshake lists them
    # (sasl.enabled.mechanisms).
    sasl_mechanisms: tuple[str, ...] = SASL_MECHANISMS
    # user=password lines, private to the broker's user (brokers/core/security/credentials.py).
    # A follower logs in to its leader as the file's first user, with the first mechanism
    # (Kafka's inter-broker JAAS login and sasl.mechanism.inter.broker.protocol).
    sasl_credentials_file: Path | None = None

    def check(self, listeners: tuple[Listener, ...]) -> None:
        if any(lst.protocol.tls for lst in listeners) and not (
                self.ssl_certfile and self.ssl_keyfile):
            raise UserError("an SSL or SASL_SSL listener needs --ssl-certfile and --ssl-keyfile")
        if not any(lst.protocol.sasl for lst in listeners):
            return
        if self.sasl_credentials_file is None:
            raise UserError("a SASL listener needs --sasl-credentials-file")
        unknown = [m for m in self.sasl_mechanisms if m not in SASL_MECHANISMS]
        if unknown or not self.sasl_mechanisms:
            raise UserError(f"--sasl-mechanisms: {', '.join(unknown) or 'none given'}; choose "
                            f"from {', '.join(SASL_MECHANISMS)}")


MetadataCheck = Literal["per_request", "cached"]


@dataclass(frozen=True)
class BrokerConfig:
    # This broker's id in the cluster (broker.id); unique per cluster.
    node_id: int
    # Address the Kafka listener binds to.
    host: str
    # Port the Kafka listener binds to; 0 picks a free one (reported on the listening= line).
    port: int
    # Root directory for partition logs and this broker's local state files.
    data_dir: Path
    storage: StorageConfig = field(default_factory=StorageConfig)
    # Security protocol of that first listener, the one registered in the coordination state
    # and named in Metadata (brokers/core/security/listeners.py says why only the first).
    protocol: SecurityProtocol = SecurityProtocol.PLAINTEXT
    # Further listeners (--listener given more than once), each with its own protocol.
    extra_listeners: tuple[Listener, ...] = ()
    # Certificates, SASL mechanisms and credentials of the TLS and SASL listeners.
    security: SecurityConfig = field(default_factory=SecurityConfig)
    # Where to serve Prometheus metrics over HTTP (brokers/core/metrics.py); None: no
    # endpoint, and requests are not metered at all (the server calls the dispatcher directly).
    metrics: tuple[str, int] | None = None
    # Address clients are told to connect to in Metadata; None means host:port as bound.
    advertised_host: str | None = None
    # docs/architecture.md, fairness rule 2: `per_request` asks the coordination store on
    # every produce/fetch whether this broker leads the partition (the paper's condition);
    # `cached` trusts the cache.
    metadata_check: MetadataCheck = "cached"
    # Largest request frame accepted (socket.request.max.bytes). Checked on the length prefix,
    # before allocating, so a 2 GiB prefix costs nothing.
    max_frame_bytes: int = 100 * MiB
    # Partitions given to an auto-created topic or a CreateTopics with -1 (num.partitions).
    default_partitions: int = 1
    # Most partitions one topic may have; more is INVALID_PARTITIONS. Every partition costs a
    # directory, a log and coordination state on its leader (Kafka has no such knob; its
    # operators cap partitions with a create.topic.policy).
    max_partitions_per_topic: int = 1000
    # Most topics the cluster may hold; creating (or auto-creating) one more is
    # POLICY_VIOLATION, so a client cannot grow the coordination tables without bound.
    max_topics: int = 1000
    # Connection limits of the Kafka listener.
    listener: ListenerConfig = field(default_factory=ListenerConfig)
    # Create unknown topics named in Metadata when the client allows it (auto.create.topics.enable).
    auto_create_topics: bool = True
    # Upper bound on a Fetch long-poll, whatever the client asks (protects shutdown latency).
    max_fetch_wait_ms: int = 30_000
    # Session timeouts a consumer group member may ask for (group.min/max.session.timeout.ms).
    group_min_session_timeout_ms: int = 1_000
    group_max_session_timeout_ms: int = 300_000
    # Wait this long after the first JoinGroup of an empty group before completing the rebalance,
    # so members starting together land in one generation (group.initial.rebalance.delay.ms).
    group_initial_rebalance_delay_ms: int = 100
    # Members plus pending member ids (KIP-394) one group may hold (group.max.size); one more
    # JoinGroup gets GROUP_MAX_SIZE_REACHED.
    group_max_size: int = 1000
    # Followers, ISR and min.insync.replicas of partitions with more than one replica.
    replication: ReplicationConfig = field(default_factory=ReplicationConfig)

    def __post_init__(self) -> None:
        if self.node_id < 0:
            raise UserError("node_id must be >= 0")
        if not 0 <= self.port <= 65535:
            raise UserError(f"port {self.port} is out of range")
        if self.metadata_check not in ("per_request", "cached"):
            raise UserError("metadata_check must be per_request or cached")
        if self.max_frame_bytes < 1024:
            raise UserError("max_frame_bytes must be at least 1024")
        if self.default_partitions < 1:
            raise UserError("default_partitions must be at least 1 (--num-partitions)")
        if self.max_partitions_per_topic < 1:
            raise UserError("max_partitions_per_topic must be at least 1")
        if self.default_partitions > self.max_partitions_per_topic:
            raise UserError("default_partitions exceeds max_partitions_per_topic "
                            "(--num-partitions, --max-partitions-per-topic)")
        if self.max_topics < 1:
            raise UserError("max_topics must be at least 1")
        if self.group_max_size < 1:
            raise UserError("group_max_size must be at least 1")
        if self.group_min_session_timeout_ms > self.group_max_session_timeout_ms:
            raise UserError("group_min_session_timeout_ms exceeds group_max_session_timeout_ms")
        self.security.check(self.listeners)

    @property
    def listeners(self) -> tuple[Listener, ...]:
        """Every listener, the registered one first."""
        return (Listener(self.protocol, self.host, self.port), *self.extra_listeners)
