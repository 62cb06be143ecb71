"""Coordination cost, read from outside the processes before and after every session.

* ZooKeeper (zk): ``mntr`` packets received, summed over the ensemble
  (``ZooKeeperHandle.request_counters``): the requests ZooKeeper served.
* Brokers: each broker writes its counters to ``<data_dir>/counters.json`` when sent SIGUSR1
  (brokers/core/broker.py). We note the wall clock, signal every broker, then poll until each
  file carries a ``written_unix_ns`` at or after that moment (a readiness probe with a
  deadline, not a sleep). ``coordinator.zk_requests`` is what the zk brokers asked of
  ZooKeeper; ``coordinator.gossip_packets_out`` is what the dsbs brokers sent.
* CPU seconds of every broker and ZooKeeper process (psutil, via ``Cluster.cpu_seconds``).

A reading that cannot be taken (a broker too old to answer SIGUSR1 would have been killed by
it, so the harness only signals brokers started from this tree) leaves the field empty rather
than guessing.
"""

from __future__ import annotations

import json
import math
import signal
import time
from dataclasses import dataclass
from typing import Any

from harness.cluster import Cluster

# How long a broker may take to answer SIGUSR1 (it is one JSON dump on its event loop; a busy
# broker finishes the request in hand first).
DUMP_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class Reading:
    # Process name (broker-0, zookeeper-0, ...) -> CPU seconds so far.
    cpu: dict[str, float]
    # ZooKeeper's ensemble-wide mntr totals (zk only).
    zk: dict[str, int] | None
    # node id -> that broker's coordinator counters (None when a broker did not answer).
    coordinator: dict[int, dict[str, float]] | None


@dataclass(frozen=True)
class Delta:
    zk_requests: int | None
    gossip_packets: int | None
    coordination_ops: int | None
    broker_cpu_s: float | None
    zk_cpu_s: float | None


def _broker_counters(cluster: Cluster) -> dict[int, dict[str, float]] | None:
    t0 = time.time_ns()
    paths = {}
    for b in cluster.brokers:
        paths[b.node_id] = cluster.root / f"broker-{b.node_id}" / "counters.json"
        b.process.signal(signal.SIGUSR1)
    out: dict[int, dict[str, float]] = {}
    deadline = time.monotonic() + DUMP_TIMEOUT_S
    while len(out) < len(paths):
        for node, path in paths.items():
            if node in out:
                continue
            try:
                doc: dict[str, Any] = json.loads(path.read_text("utf-8"))
            except (OSError, ValueError):
                continue
            if doc.get("written_unix_ns", 0) >= t0:
                out[node] = {k: float(v) for k, v in doc.get("coordinator", {}).items()}
        if len(out) < len(paths):
            if time.monotonic() > deadline:
                return None
            time.sleep(0.001)  # polling interval of the probe, not a wait for an effect
    return out


def read(cluster: Cluster) -> Reading:
    zk = cluster.zookeeper.request_counters() if cluster.zookeeper is not None else None
    return Reading(cluster.cpu_seconds(), zk, _broker_counters(cluster))


def _sum_delta(before: dict[int, dict[str, float]], after: dict[int, dict[str, float]],
               key: str) -> int | None:
    total = 0.0
    seen = False
    for node, counters in after.items():
        if key in counters:
            seen = True
            step = counters[key] - before.get(node, {}).get(key, 0.0)
            if step < 0:
                return None  # the broker restarted and its counters began again
            total += step
    return round(total) if seen else None


def _cpu_delta(before: dict[str, float], after: dict[str, float], prefix: str) -> float | None:
    # Keys carry the PID: a process that is new since `before` makes the delta unknowable.
    values = [after[k] - before.get(k, math.nan) for k in after if k.startswith(prefix)]
    if not values or any(math.isnan(v) for v in values):
        return None
    return sum(values)


def delta(arch: str, before: Reading, after: Reading) -> Delta:
    zk_requests = None
    if before.zk is not None and after.zk is not None:
        zk_requests = after.zk["zk_packets_received"] - before.zk["zk_packets_received"]
        if zk_requests < 0:
            zk_requests = None  # a server restarted (a fault session): its counters began again
    gossip = ops = None
    if before.coordinator is not None and after.coordinator is not None:
        if arch == "dsbs":
            gossip = _sum_delta(before.coordinator, after.coordinator, "gossip_packets_out")
        # The coordinator's own count of coordination-store operations when it keeps one;
        # the zk coordinator counts every ZooKeeper call it makes as zk_requests.
        ops = _sum_delta(before.coordinator, after.coordinator, "coordination_ops")
        if ops is None and arch == "zk":
            ops = _sum_delta(before.coordinator, after.coordinator, "zk_requests")
    return Delta(
        zk_requests=zk_requests,
        gossip_packets=gossip,
        coordination_ops=ops,
        broker_cpu_s=_cpu_delta(before.cpu, after.cpu, "broker-"),
        zk_cpu_s=_cpu_delta(before.cpu, after.cpu, "zookeeper-") if arch == "zk" else None,
    )
