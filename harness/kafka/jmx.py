"""Kafka's own metrics for the harness: the Prometheus JMX exporter agent in every broker JVM.

Real Kafka reports no twinbench counters; what it counts is in JMX. Every Kafka node the harness
starts loads the exporter agent (``JMX_EXPORTER``, resolved by `make setup` beside the releases)
with ``agent_flag``: an HTTP endpoint on its own port that serves a few MBeans in Prometheus's
text format (``CONFIG`` names them; the rest of JMX is never walked, so a scrape stays cheap).
The harness scrapes every node before and after a session, as it signals a twin for its counters
(harness/driver/counters.py), and ``change`` turns the two readings into the increase over the
session, summed over the nodes:

* ``controller_requests``, ``controller_bytes``: requests received on the nodes' CONTROLLER
  listeners and the bytes in and out there (the socket server's own counters). On KRaft that
  listener carries the metadata quorum and nothing else: the voters' Raft Fetch, Vote and
  BeginQuorumEpoch, and every broker's heartbeats, registration and ISR changes sent to the
  active controller. It is kafka-kraft's coordination column, as ZooKeeper's requests served
  are kafka-zk's and the zk twin's. ZooKeeper-mode nodes have no such listener.
* ``metadata_records``: how far the metadata log grew (the highest log end offset among the
  nodes, KRaft's ``raft-metrics``), idle no-op records included.
* ``requests.<Api>``: requests served per Kafka API (``RequestMetrics``, every version summed).
  On kafka-zk the controller's LeaderAndIsr, UpdateMetadata and StopReplica are its
  coordination beyond ZooKeeper itself; on KRaft, BrokerHeartbeat, Vote and the like.

A node that does not answer (paused, killed, restarted: its counters begin again) makes the
increase unknown rather than partial.

The same page names KRaft's active controller (``raft-metrics`` ``current-leader``), which the
fault schedules' ``controller`` target needs: a KRaft broker's Metadata answer names a random
live broker as the controller (clients' admin requests are forwarded), never the quorum's
leader, so only the quorum itself can say which node to kill (``active_controller``).
"""

from __future__ import annotations

import math
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from harness.kafka.releases import JMX_EXPORTER
from harness.kafka.resolve import lib_dir

# The MBeans served. Object-name patterns are matched by the JVM's MBean server, so nothing
# else is read at a scrape.
CONFIG = """\
includeObjectNames:
  - "kafka.server:type=socket-server-metrics,listener=CONTROLLER,*"
  - "kafka.server:type=raft-metrics"
  - "kafka.network:type=RequestMetrics,name=RequestsPerSec,*"
lowercaseOutputName: true
"""
# A scrape is a handful of MBeans; a node that takes longer is treated as not answering.
SCRAPE_TIMEOUT_S = 3.0
# In network namespaces every node has its own address, so all use one port.
NETNS_PORT = 9094

_SOCKET = "kafka_server_socket_server_metrics_"
_LEO = "kafka_server_raft_metrics_log_end_offset"
_LEADER = "kafka_server_raft_metrics_current_leader"
_REQUESTS = "kafka_network_requestmetrics_count"
# The highest of the nodes' values rather than their sum: every voter holds the same log.
LEVELS = ("metadata_offset",)


def agent_jar() -> Path:
    return lib_dir(JMX_EXPORTER) / JMX_EXPORTER.jar


def agent_flag(host: str, port: int, config: Path) -> str:
    """The JVM flag that loads the exporter, serving on host:port what ``config`` names."""
    return f"-javaagent:{agent_jar()}={host}:{port}:{config}"


def write_config(directory: Path) -> Path:
    path = directory / "jmx-exporter.yaml"
    path.write_text(CONFIG)
    return path


def counters(text: str) -> dict[str, float]:
    """One node's counters from its exporter's page (names as in the module docstring; the
    log end offset as ``metadata_offset``)."""
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if math.isnan(s.value):
                continue
            name: str | None = None
            if s.labels.get("listener") == "CONTROLLER" and s.name in (
                    _SOCKET + "request", _SOCKET + "incoming_byte", _SOCKET + "outgoing_byte"):
                name = ("controller_requests" if s.name.endswith("request")
                        else "controller_bytes")
            elif s.name == _LEO:
                name = "metadata_offset"
            elif s.name == _REQUESTS and s.labels.get("name") == "RequestsPerSec":
                name = f"requests.{s.labels.get('request', '?')}"
            if name is not None:
                out[name] = out.get(name, 0.0) + s.value
    return out


def page(host: str, port: int, timeout_s: float = SCRAPE_TIMEOUT_S) -> str | None:
    """A node's exporter page; None when it does not answer in time."""
    try:
        with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=timeout_s) as r:
            text: str = r.read().decode("utf-8", "replace")
            return text
    except (OSError, urllib.error.URLError, ValueError):
        return None


def scrape(host: str, port: int, timeout_s: float = SCRAPE_TIMEOUT_S) -> dict[str, float] | None:
    """One node's counters; None when it does not answer in time."""
    text = page(host, port, timeout_s)
    return None if text is None else counters(text)


def leader(text: str) -> int | None:
    """The quorum leader a node's page names (None: none known, or not a KRaft node)."""
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == _LEADER and math.isfinite(s.value) and s.value >= 0:
                return int(s.value)
    return None


def active_controller(nodes: Iterable[tuple[str, int]], timeout_s: float = SCRAPE_TIMEOUT_S
                      ) -> int | None:
    """KRaft's active controller as the first of ``nodes`` (host, exporter port) that answers
    and knows one sees it; None when none does (or the nodes are not KRaft's)."""
    for host, port in nodes:
        text = page(host, port, timeout_s)
        found = None if text is None else leader(text)
        if found is not None:
            return found
    return None


def change(before: Mapping[int, dict[str, float] | None],
           after: Mapping[int, dict[str, float] | None]) -> dict[str, int | None]:
    """The increase of every counter over a session, summed over the nodes (node id ->
    counters); ``metadata_offset`` becomes ``metadata_records``, the growth of the longest
    log. A node missing from either reading, or a counter that went down (the node
    restarted), makes that counter unknown: None. Every one is a count, so an integer (the
    exporter serves them as doubles; the run logs' columns are integers)."""
    names = sorted({k for c in (*before.values(), *after.values()) if c for k in c})
    pairs = [(before[n], c) for n, c in after.items() if n in before]
    if set(before) != set(after) or any(a is None or b is None for a, b in pairs):
        return {_shown(name): None for name in names}
    out: dict[str, int | None] = {}
    for name in names:
        was = [(a or {}).get(name, 0.0) for a, _ in pairs]
        now = [(b or {}).get(name, 0.0) for _, b in pairs]
        if name in LEVELS:
            step = max(now) - max(was)
            out[_shown(name)] = round(step) if step >= 0 else None
            continue
        steps = [b - a for a, b in zip(was, now, strict=True)]
        out[_shown(name)] = None if any(s < 0 for s in steps) else round(sum(steps))
    return out


def _shown(name: str) -> str:
    return "metadata_records" if name == "metadata_offset" else name
