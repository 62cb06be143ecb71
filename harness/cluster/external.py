"""External clusters: `twinbench run --bootstrap HOST:PORT[,...] --label NAME` drives any
workload against a Kafka-protocol cluster twinbench did not start (Apache Kafka in ZooKeeper or
KRaft mode, Redpanda, a twin started separately with `twinbench cluster`).

What differs from a twin's run, and is recorded in the manifest's ``external`` key:

* nothing is started or stopped, so nothing is restarted either: workloads with faults, with
  ``restart: cell|try`` or sweeping ``metadata_check`` (a broker setting) are refused;
* nothing twinbench would read from its own processes is measured (``NOT_MEASURED``): the
  coordination counters, broker and ZooKeeper CPU; coordination.csv's measured columns are empty;
* the workload's broker settings (``NOT_APPLIED``) are the workload's, not the cluster's: rows
  carry them so the analysis can put the external cluster beside the twins cell by cell, and
  the manifest says they were not applied.

The architecture of the run log is NAME, labelled as NAME (never the comparison's baseline), so
`twinbench analyze` shows it as one more architecture beside zk and dsbs, and two external
clusters (kafka-zk, kafka-kraft) beside each other.

``--client-config FILE`` (YAML) sets the load client's connection: ``client_id``,
``connect_timeout_ms``, ``request_timeout_ms``, ``retries``, ``retry_backoff_ms``,
``retry_backoff_max_ms``, and its security as librdkafka names it: ``security_protocol``
(PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL), ``ssl_ca_location`` (PEM; default: the system's
CAs), ``sasl_mechanism`` (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512; default SCRAM-SHA-512),
``sasl_username``, ``sasl_password``. The manifest records the settings without the password.

``--metrics-url [http://]HOST:PORT[/PATH][,...]`` names the brokers' Prometheus endpoints (a
twin started with ``twinbench cluster --metrics`` prints them as ``metrics=``). Each session
then samples them as a ``metrics: true`` workload samples a twin's (metrics.csv), and the
difference between its first and last scrape fills what the endpoints serve under the twins'
names (harness/driver/counters.scraped): counters.csv, ``coordination_ops``, the generic
columns an architecture maps to its brokers' counters (``coord_messages``, ``coord_bytes``:
dsbs's gossip counters), ``broker_cpu_s``; services (ZooKeeper) stay unread. An
endpoint that does not answer when the run starts is one line.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from brokers.core.errors import KafkaError, UserError
from brokers.core.security.client import ClientSecurity
from brokers.core.security.listeners import SecurityProtocol
from brokers.core.security.scram import HASHES
from harness import architectures
from workloads.cluster import ClusterClient, ClusterClientConfig
from workloads.connection import ConnectionClosed

__all__ = ["NOT_APPLIED", "NOT_MEASURED", "External", "ExternalCluster", "load_client_config"]

NAME_RE = re.compile(r"[a-z0-9][a-z0-9_-]{0,39}")
# What a run against an external cluster cannot measure (the manifest lists it).
NOT_MEASURED = ("coordination counters (coord_messages, coord_bytes, coordination_ops, "
                "counters.csv)", "broker CPU seconds", "service CPU seconds")
# Workload settings that are broker settings of the twins: recorded, not applied.
NOT_APPLIED = ("brokers", "flush", "metadata_check", "options", "network",
               "min_insync_replicas")
# --client-config keys and their types.
CLIENT_KEYS: dict[str, type] = {
    "client_id": str, "connect_timeout_ms": int, "request_timeout_ms": int, "retries": int,
    "retry_backoff_ms": int, "retry_backoff_max_ms": int, "security_protocol": str,
    "ssl_ca_location": str, "sasl_mechanism": str, "sasl_username": str, "sasl_password": str,
}
# Never written to a manifest.
SECRET_KEYS = frozenset({"sasl_password"})
# What stays unmeasured with --metrics-url (the brokers' endpoints say nothing of ZooKeeper's
# own requests and CPU).
NOT_MEASURED_WITH_METRICS = ("service counters (ZooKeeper's requests)", "service CPU seconds")
# How long the reachability probe at the start of a run may take.
PROBE_TIMEOUT_S = 15.0
METRICS_URL_RE = re.compile(r"(?:http://)?([^/\s]+:\d{1,5})(/[^\s]*)?")


@dataclass(frozen=True)
class External:
    # The run log's architecture and label (NAME of --label).
    name: str
    # "host:port[,host:port...]"
    bootstrap: str
    # --client-config settings, validated (CLIENT_KEYS).
    client: Mapping[str, Any] = field(default_factory=dict)
    # Where they came from (the manifest records the path and the settings).
    client_config_path: str | None = None
    # --metrics-url: each broker's Prometheus endpoint as HOST:PORT/PATH (empty: none).
    metrics: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not NAME_RE.fullmatch(self.name):
            raise UserError(f"--label {self.name!r}: an external cluster's name must be a short "
                            "word of a-z, 0-9, - and _ (it becomes the run log's architecture)")
        if self.name in architectures.names() or self.name == architectures.BOTH:
            raise UserError(f"--label {self.name!r} names a twin; call the external cluster "
                            "something else (e.g. kafka-zk, ext-dsbs)")
        ClusterClientConfig(bootstrap=tuple(self.bootstrap.split(",")))  # host:port check

    @staticmethod
    def metrics_urls(text: str) -> tuple[str, ...]:
        """--metrics-url's value as HOST:PORT/PATH endpoints; one line when one is not."""
        out = []
        for url in text.split(","):
            m = METRICS_URL_RE.fullmatch(url.strip())
            if m is None or not 0 < int(m.group(1).rpartition(":")[2]) < 65536:
                raise UserError(f"--metrics-url {url!r}: not [http://]HOST:PORT[/PATH] (a "
                                "broker's Prometheus endpoint over plain HTTP)")
            out.append(m.group(1) + (m.group(2) or "/metrics"))
        if len(set(out)) != len(out):
            raise UserError(f"--metrics-url {text}: an endpoint is listed twice (each broker's "
                            "counters would count twice)")
        return tuple(out)

    def client_config(self, base: ClusterClientConfig) -> ClusterClientConfig:
        """The driver's client settings with --client-config's over them."""
        c = self.client
        conn = base.connection
        if "client_id" in c:
            conn = dataclasses.replace(conn, client_id=c["client_id"])
        if "connect_timeout_ms" in c:
            conn = dataclasses.replace(conn, connect_timeout_s=c["connect_timeout_ms"] / 1000)
        if "request_timeout_ms" in c:
            conn = dataclasses.replace(conn, request_timeout_s=c["request_timeout_ms"] / 1000)
        retry = {k: c[k] for k in ("retries", "retry_backoff_ms", "retry_backoff_max_ms")
                 if k in c}
        protocol = SecurityProtocol(c.get("security_protocol", "PLAINTEXT"))
        if protocol is not SecurityProtocol.PLAINTEXT:
            ca = c.get("ssl_ca_location")
            conn = dataclasses.replace(conn, security=ClientSecurity(
                protocol, Path(ca) if ca else None, c.get("sasl_mechanism", "SCRAM-SHA-512"),
                c.get("sasl_username", ""), c.get("sasl_password", "")))
        return dataclasses.replace(base, connection=conn, **retry)

    def manifest(self) -> dict[str, Any]:
        client = {k: v for k, v in self.client.items() if k not in SECRET_KEYS}
        return {"bootstrap": self.bootstrap, "client_config": self.client_config_path,
                "client": client, "metrics": list(self.metrics),
                "not_measured": list(NOT_MEASURED_WITH_METRICS if self.metrics
                                     else NOT_MEASURED),
                "not_applied": list(NOT_APPLIED)}

    def labels(self, order: int) -> dict[str, Any]:
        """The manifest's ``architectures`` entry: shown as its name, never the baseline."""
        return {"display_name": self.name, "short_name": self.name, "color": "#8172B2",
                "order": order, "baseline": False, "cost_column": "coordination_ops",
                "cost_label": ("coordination messages (from its metrics)" if self.metrics
                               else "not measured (external cluster)")}


def load_client_config(path: Path) -> dict[str, Any]:
    """--client-config: a YAML mapping of CLIENT_KEYS; one-line errors naming the file."""
    try:
        data = yaml.safe_load(path.read_text("utf-8"))
    except OSError as exc:
        raise UserError(f"--client-config {path}: cannot read it ({exc.strerror})") from None
    except yaml.YAMLError as exc:
        raise UserError(f"--client-config {path}: not valid YAML ({exc})".splitlines()[0]) \
            from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise UserError(f"--client-config {path}: must be a mapping of settings")
    out: dict[str, Any] = {}
    for key, value in data.items():
        kind = CLIENT_KEYS.get(key)
        if kind is None:
            raise UserError(f"--client-config {path}: {key}: unknown setting (known: "
                            f"{', '.join(CLIENT_KEYS)})")
        negative = isinstance(value, int) and value < 0
        if not isinstance(value, kind) or isinstance(value, bool) or negative:
            raise UserError(f"--client-config {path}: {key}: must be "
                            f"{'an integer >= 0' if kind is int else 'a string'}, got {value!r}")
        out[key] = value
    _check_security(path, out)
    return out


def _check_security(path: Path, out: dict[str, Any]) -> None:
    """The security settings make sense together (one line naming the file otherwise)."""
    where = f"--client-config {path}"
    name = out.get("security_protocol", "PLAINTEXT").upper()
    try:
        protocol = SecurityProtocol(name)
    except ValueError:
        raise UserError(f"{where}: security_protocol {name}: one of "
                        f"{', '.join(p.value for p in SecurityProtocol)}") from None
    out["security_protocol"] = protocol.value
    if "ssl_ca_location" in out and not protocol.tls:
        raise UserError(f"{where}: ssl_ca_location applies to SSL and SASL_SSL only")
    sasl_keys = [k for k in ("sasl_mechanism", "sasl_username", "sasl_password") if k in out]
    if not protocol.sasl:
        if sasl_keys:
            raise UserError(f"{where}: {sasl_keys[0]} applies to SASL_PLAINTEXT and SASL_SSL "
                            "only")
        return
    mechanism = out.setdefault("sasl_mechanism", "SCRAM-SHA-512").upper()
    if mechanism != "PLAIN" and mechanism not in HASHES:
        raise UserError(f"{where}: sasl_mechanism {mechanism}: one of PLAIN, "
                        f"{', '.join(HASHES)}")
    out["sasl_mechanism"] = mechanism
    if not out.get("sasl_username") or "sasl_password" not in out:
        raise UserError(f"{where}: {protocol.value} needs sasl_username and sasl_password")


class ExternalCluster:
    """The part of ``ProcessCluster`` the driver uses, for a cluster it did not start: its
    address, how long it took to answer, and no processes to watch or stop."""

    zookeeper = None

    def __init__(self, external: External) -> None:
        self.external = external
        self.bootstrap = external.bootstrap
        self.brokers: list[Any] = []
        self.start_seconds = 0.0
        # Brokers the cluster's Metadata listed when the run began.
        self.broker_count = 0

    async def probe(self) -> None:
        """One Metadata round trip (how many brokers, how long), or a one-line error naming
        the address."""
        t0 = time.perf_counter()
        config = self.external.client_config(
            ClusterClientConfig(bootstrap=tuple(self.bootstrap.split(",")), retries=0))
        try:
            client = await asyncio.wait_for(ClusterClient.open(self.bootstrap, config),
                                            PROBE_TIMEOUT_S)
        except (OSError, ConnectionClosed, TimeoutError, KafkaError) as exc:
            detail = str(exc) or type(exc).__name__
            raise UserError(f"--bootstrap {self.bootstrap}: no Kafka-protocol cluster answered "
                            f"({detail})") from None
        try:
            self.broker_count = len(client.brokers)
        finally:
            await client.close()
        self.start_seconds = time.perf_counter() - t0
        await self.probe_metrics()

    async def probe_metrics(self) -> None:
        """One scrape of every --metrics-url endpoint, or a one-line error naming the first
        that did not answer with Prometheus's text format."""
        from harness.studies.qos.sampler import parse, scrape

        texts = await asyncio.gather(*(scrape(url) for url in self.external.metrics),
                                     return_exceptions=True)
        for url, text in zip(self.external.metrics, texts, strict=True):
            try:
                if isinstance(text, BaseException):
                    raise text
                parse(text, 0.0, 0, "")
            except (OSError, TimeoutError, ValueError) as exc:
                detail = str(exc) or type(exc).__name__
                raise UserError(f"--metrics-url {url}: no Prometheus metrics there "
                                f"({detail})") from None

    def stop(self) -> None:
        """Nothing to stop: the cluster is not ours."""
