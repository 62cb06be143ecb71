"""ClusterSpec: what a cluster is, before anything starts, checked.

What every architecture's cluster has alike (brokers, ports, flush and metadata policies,
network, security, metrics) is a field; what only one architecture or service reads is in
``options``, parsed by its registry entry (harness/architectures, harness/services). Every
check runs when the spec is made, so a bad combination is one line before a process starts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from brokers.core.config import SASL_MECHANISMS, SecurityConfig
from brokers.core.errors import UserError
from brokers.core.security.listeners import Listener, SecurityProtocol
from harness import architectures, services
from harness.architectures.entry import (
    Architecture,
    BrokerSettings,
)
from harness.architectures.options import Options
from harness.cluster.client_security import ClientSecurity, security_from_credentials_file
from harness.netdelay.control import check_rtt

if TYPE_CHECKING:  # imported when a cluster needs them: netns needs root
    pass
NETWORKS = ("loopback", "netns")


@dataclass(frozen=True)
class ClusterSpec:
    # Which coordination architecture the brokers use: a registry name (harness/architectures/).
    arch: str
    # Broker processes to start (the paper uses 3-5).
    brokers: int = 3
    # Broker i listens on port + i; 0 lets each broker pick a free port.
    port: int = 0
    # Parent of every broker's data directory; None = a temporary directory removed on stop.
    data_dir: Path | None = None
    # Options of architectures and services, by name: {"zk": {"session_timeout_ms": 6000},
    # "zookeeper": {"nodes": 3}}. Only this architecture's and its services' are read (each
    # entry's Options class validates its own); the run manifest records them parsed.
    options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    # Storage flush policy of every broker (every_batch | interval_ms:N | os).
    flush: str = "os"
    # per_request | cached, applied to every broker (docs/architecture.md, fairness rule 2).
    metadata_check: str = "cached"
    # loopback: every process on 127.0.0.1. netns: each broker in its own network namespace on
    # a private bridge (needs root), so one can be partitioned away (harness/cluster/netns.py).
    network: str = "loopback"
    # How long the whole cluster may take to come up before start() gives up.
    ready_timeout_s: float = 90.0
    # Partitions of an auto-created topic on every broker (Kafka's num.partitions).
    num_partitions: int = 1
    # Whether brokers create a topic a client names in Metadata (auto.create.topics.enable).
    auto_create_topics: bool = True
    # Extra arguments appended to every broker's command line.
    broker_args: tuple[str, ...] = field(default_factory=tuple)
    # Security protocol of every broker's listener: PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL.
    security_protocol: str = "PLAINTEXT"
    # PEM certificate chain and key every broker's TLS listener presents.
    ssl_certfile: Path | None = None
    ssl_keyfile: Path | None = None
    # PEM CA that signed them: what the harness's own clients (readiness probe) trust.
    ssl_ca_location: Path | None = None
    # Mechanisms the SASL listeners offer; the harness's probe uses the first.
    sasl_mechanisms: tuple[str, ...] = SASL_MECHANISMS
    # user=password lines (mode 0600) every broker accepts; the probe logs in as the first.
    sasl_credentials_file: Path | None = None
    # Every broker serves Prometheus metrics on a free port of its host (--metrics).
    metrics: bool = False
    # Brokers planned (ids, addresses, command lines) but started only by join_standby(): a
    # membership change on a running cluster (harness/studies/metadata/session.py, broker-join).
    standby: int = 0
    # netns only: round-trip time (ms) added between every two hosts (brokers, and the root
    # namespace's client and ZooKeeper) by a delay line (harness/netdelay); set_rtt() changes
    # it on the running cluster. None: no delay line at all.
    rtt_ms: float | None = None

    def __post_init__(self) -> None:
        entry = self.architecture  # UserError for an unknown name
        if self.metadata_check not in entry.metadata_checks:
            raise UserError(f"metadata_check {self.metadata_check}: {self.arch} cannot apply it "
                            f"(it applies {architectures.choice(entry.metadata_checks)} only)")
        if not 1 <= self.brokers <= 64 or not 0 <= self.standby <= 64 - self.brokers:
            raise UserError("--brokers must be between 1 and 64 (standby brokers included)")
        if self.brokers + self.standby > entry.max_brokers:
            raise UserError(f"--arch {self.arch} runs at most {entry.max_brokers} broker"
                            f"{'s' if entry.max_brokers > 1 else ''} (got {self.brokers})")
        if self.port and not 1024 <= self.port <= 65535 - self.brokers:
            raise UserError(f"--port {self.port} leaves no room for {self.brokers} brokers")
        if not 1 <= self.num_partitions <= 1000:
            raise UserError("--num-partitions must be between 1 and 1000")
        for name in self.options:
            if name not in architectures.names() and name not in services.names():
                raise UserError(f"options for {name!r}: no architecture or service of that "
                                f"name (architectures: {', '.join(architectures.names())}; "
                                f"services: {', '.join(services.names())})")
        if self.network not in NETWORKS:
            raise UserError(f"unknown network {self.network!r}; choose loopback or netns")
        if self.rtt_ms is not None:
            if self.network != "netns":
                raise UserError("a round-trip time needs --network netns (the delay is put "
                                "between network namespaces)")
            check_rtt(self.rtt_ms)
        self.arch_options()  # UserError for a bad one, before anything starts
        for name in entry.services:
            services.get(name).check(self.service_options(name), self.network, False)
        self.security().check((Listener(self.protocol, "127.0.0.1", 0),))

    @property
    def architecture(self) -> Architecture:
        return architectures.get(self.arch)

    def arch_options(self) -> Options:
        """This architecture's options, parsed by its entry."""
        return self.architecture.options.parse(self.options.get(self.arch), self.arch)

    def service_options(self, name: str) -> Options:
        return services.get(name).options.parse(self.options.get(name), name)

    def options_manifest(self) -> dict[str, dict[str, Any]]:
        """The run manifest's ``cluster.options``: this architecture's options and its
        services', parsed (defaults filled in)."""
        out = {self.arch: self.arch_options().as_manifest()}
        for name in self.architecture.services:
            out[name] = self.service_options(name).as_manifest()
        return out

    def settings(self) -> BrokerSettings:
        """What every architecture's brokers apply alike (harness/architectures/entry.py)."""
        return BrokerSettings(
            flush=self.flush, metadata_check=self.metadata_check,
            num_partitions=self.num_partitions, auto_create_topics=self.auto_create_topics,
            protocol=self.protocol, ssl_certfile=self.ssl_certfile,
            ssl_keyfile=self.ssl_keyfile, ssl_ca_location=self.ssl_ca_location,
            sasl_mechanisms=self.sasl_mechanisms,
            sasl_credentials_file=self.sasl_credentials_file, extra_args=self.broker_args)

    @property
    def protocol(self) -> SecurityProtocol:
        try:
            return SecurityProtocol(self.security_protocol.upper())
        except ValueError:
            names = ", ".join(p.value for p in SecurityProtocol)
            raise UserError(f"--security-protocol {self.security_protocol!r}: one of "
                            f"{names}") from None

    def security(self) -> SecurityConfig:
        """The brokers' side of the security settings."""
        return SecurityConfig(
            ssl_certfile=self.ssl_certfile, ssl_keyfile=self.ssl_keyfile,
            sasl_mechanisms=self.sasl_mechanisms,
            sasl_credentials_file=self.sasl_credentials_file)

    def client_security(self) -> ClientSecurity:
        """How a client of this cluster connects (the harness's probe does so)."""
        return security_from_credentials_file(
            self.protocol, self.ssl_ca_location, self.sasl_credentials_file,
            self.sasl_mechanisms[0])
