"""Coordination cost, read from outside the processes before and after every session.

* Brokers: each broker writes its counters to ``<data_dir>/counters.json`` when sent SIGUSR1
  (brokers/core/broker.py). We note each file's ``written_unix_ns``, signal every broker, then
  poll until each file carries another (a readiness probe with a deadline, not a sleep; files
  are read through the broker's machine, so brokers on other hosts are read alike). The
  file's ``coordinator`` and ``broker`` objects are read back through the counters contract
  (brokers/core/counters.py): the architecture's counter class (its registry entry's
  ``counters``, harness/architectures/) and ``BrokerCounters``.
  ``delta`` takes the increase of every total and every family label, summed over brokers,
  whatever the class declares, so a counter added to a class needs no change here.
* Every service of the cluster (harness/services): its own counters (ZooKeeper: ``mntr``,
  summed over the ensemble: ``packets_received`` is the requests it served).
* Real Kafka's brokers (``ProcessSpec.counters`` "jmx-exporter"): what each node's JMX exporter
  serves (harness/kafka/jmx.py), the ``jmx`` source: kafka-kraft's quorum traffic, per-API
  request counts.
* CPU seconds of every broker and service process (psutil, via ``ProcessCluster.cpu_seconds``).
* The delay line, where the cluster has one (harness/netdelay): packets it held, how long on
  average a packet from the root namespace (client, ZooKeeper) waited (the round trip added
  there), and its own CPU seconds, which are the network's and never a broker's.

* A cluster twinbench did not start (``--bootstrap``) is read only through the Prometheus
  endpoints ``--metrics-url`` names (``scraped``: the session's first and last scrape of the
  same counters, brokers/core/metrics.py), or not at all.

coordination.csv's measured columns (docs/result-format.md) are generic: ``coord_messages``
and ``coord_bytes`` are the counters the architecture's entry names for them
(``Architecture.coordination``: zk's is ZooKeeper's ``packets_received``, dsbs's its brokers'
``gossip_packets_out``), ``coordination_ops`` the counter every coordinator reports,
``broker_cpu_s`` the brokers' CPU and ``service_cpu_s`` the services' processes'. Every
counter, the services' included, is also a counters.csv row.

A reading that cannot be taken (a broker that does not answer in time, a counters file that
lacks a counter of the contract, a process restarted between the readings) leaves the field
empty rather than guessing.
"""

from __future__ import annotations

import json
import math
import signal
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from brokers.core.counters import BrokerCounters, CoordinatorCounters, Counters
from harness.architectures.entry import Architecture
from harness.cluster.running import SERVICE_CPU, BrokerProcess, ProcessCluster
from harness.kafka import jmx
from harness.netdelay.control import DelayStats
from harness.netdelay.control import change as delay_change
from harness.studies.qos.sampler import Sample

# How long a broker may take to answer SIGUSR1 (it is one JSON dump on its event loop; a busy
# broker finishes the request in hand first).
DUMP_TIMEOUT_S = 5.0
# coordination.csv's measured columns, in the file's order (twinbench_common/runlog).
COLUMNS = ("coord_messages", "coord_bytes", "coordination_ops", "broker_cpu_s", "service_cpu_s")
# coordination.csv's delay-line columns (format 6; empty without a delay line).
DELAY_COLUMNS = ("rtt_measured_ms", "delayed_packets", "delay_cpu_s")


@dataclass(frozen=True)
class BrokerReading:
    coordinator: CoordinatorCounters
    broker: BrokerCounters
    # Declared counters the broker's document lacked (a broker older than this harness, as the
    # regression's base is), of its coordinator and of the broker: their increase is unknown;
    # every other counter is read. A family (by_label) cannot be missing: a label never seen
    # reads as 0 in any document.
    coordinator_unknown: frozenset[str] = frozenset()
    broker_unknown: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Reading:
    # Process name and PID (broker-0:123, service-zookeeper-0:456, ...) -> CPU seconds so far.
    cpu: dict[str, float]
    # Each service's own counters (ZooKeeper's ensemble-wide mntr totals); None: it has none.
    services: dict[str, dict[str, int] | None]
    # node id -> that broker's counters (None when a broker did not answer).
    brokers: dict[int, BrokerReading] | None
    # The delay line's counters (None: the cluster has none).
    delay: DelayStats | None = None
    # node id -> what its JMX exporter served (harness/kafka/jmx.py; None: it did not answer);
    # None: the brokers have no exporter.
    exported: dict[int, dict[str, float] | None] | None = None


@dataclass(frozen=True)
class Delta:
    # coordination.csv's measured columns (COLUMNS); None = not measured.
    columns: dict[str, int | float | None]
    # Increase of every total and family label of the coordinators' counters (to_json names),
    # summed over brokers; None = unknown (a broker restarted, or a reading is missing).
    coordinator: dict[str, int | float | None]
    # The same for the brokers' own counters (BrokerCounters).
    broker: dict[str, int | float | None]
    # Per service, the increase of each of its counters (None: unknown, a server restarted).
    services: dict[str, dict[str, int | float | None]] = field(default_factory=dict)
    # The delay line's columns (DELAY_COLUMNS); None = no delay line, or not read.
    delay: dict[str, int | float | None] = field(
        default_factory=lambda: dict.fromkeys(DELAY_COLUMNS))
    # Real Kafka's own counters, their increase summed over the nodes (harness/kafka/jmx.py;
    # empty: not a Kafka cluster).
    exported: dict[str, int | float | None] = field(default_factory=dict)


def _parse(doc: Mapping[str, Any], counters: type[CoordinatorCounters]) -> BrokerReading | None:
    try:
        coordinator, lacking = counters.read_json(doc["coordinator"])
        broker, lacking_too = BrokerCounters.read_json(doc["broker"])
    except (KeyError, TypeError, ValueError, AttributeError):
        return None  # not the contract this harness reads: the reading is unknown
    return BrokerReading(coordinator, broker, lacking, lacking_too)


def _written(b: BrokerProcess, path: Path) -> tuple[int | None, dict[str, Any] | None]:
    """The counters file's ``written_unix_ns`` and content (None, None when unreadable)."""
    try:
        doc: dict[str, Any] = json.loads(b.machine.read_text(path))
    except (OSError, ValueError):
        return None, None
    stamp = doc.get("written_unix_ns")
    return (stamp if isinstance(stamp, int) else None), doc


def _broker_counters(cluster: ProcessCluster) -> dict[int, BrokerReading] | None:
    """Every broker's counters, as its architecture reports them (``ProcessSpec.counters``:
    today "signal-dump"); None when a broker does not answer, or reports none."""
    if any(b.spec is None or b.spec.counters != "signal-dump" for b in cluster.brokers):
        return None
    counters = cluster.spec.architecture.counters_class()
    paths = {b.node_id: (b, b.data_dir / "counters.json") for b in cluster.brokers}
    # A dump is new when its stamp differs from the one before the signal: no clock is
    # compared, so a broker on a host whose clock differs from ours is read the same way.
    before = {node: _written(b, path)[0] for node, (b, path) in paths.items()}
    for b, _ in paths.values():
        b.process.signal(signal.SIGUSR1)
    out: dict[int, BrokerReading] = {}
    deadline = time.monotonic() + DUMP_TIMEOUT_S
    while len(out) < len(paths):
        for node, (b, path) in paths.items():
            if node in out:
                continue
            stamp, doc = _written(b, path)
            if doc is not None and stamp is not None and stamp != before[node]:
                reading = _parse(doc, counters)
                if reading is None:
                    return None
                out[node] = reading
        if len(out) < len(paths):
            if time.monotonic() > deadline:
                return None
            time.sleep(0.001)  # polling interval of the probe, not a wait for an effect
    return out


def _exported(cluster: ProcessCluster) -> dict[int, dict[str, float] | None] | None:
    """Every broker's JMX exporter page, where its architecture serves one
    (``ProcessSpec.counters`` "jmx-exporter")."""
    ports = {b.node_id: (b.host, b.spec.metrics_port) for b in cluster.brokers
             if b.spec is not None and b.spec.counters == "jmx-exporter"}
    if not ports or len(ports) != len(cluster.brokers):
        return None
    return {node: jmx.scrape(host, port) if port else None
            for node, (host, port) in ports.items()}


def read(cluster: ProcessCluster) -> Reading:
    services = {name: running.counters() for name, running in cluster.services.items()}
    delay = cluster.delay.stats() if cluster.delay is not None else None
    return Reading(cluster.cpu_seconds(), services, _broker_counters(cluster), delay,
                   _exported(cluster))


def increase(before: Iterable[tuple[int, Counters]], after: Iterable[tuple[int, Counters]]
             ) -> dict[str, int | float | None]:
    """Per total and family label (to_json names): the increase from ``before`` to ``after``,
    summed over brokers (node id, counters); a label or broker absent before counts from 0.
    A value that went down (the broker restarted and its counters began again) makes that
    counter's increase unknown: None, never a negative number."""
    old = dict(before)
    out: dict[str, int | float | None] = {}
    for node, counters in after:
        was = _totals(old[node]) if node in old else {}
        for name, value in _totals(counters).items():
            step = value - was.get(name, 0)
            total = out.get(name, 0)
            out[name] = None if step < 0 or total is None else total + step
    return out


def _totals(counters: Counters) -> dict[str, int | float]:
    """Every total and family label of ``counters`` (gauges are levels, not costs)."""
    gauges = {s.name for s in counters.specs() if s.kind == "gauge"}
    return {k: v for k, v in counters.to_json().items() if k not in gauges}


def _cpu_delta(before: dict[str, float], after: dict[str, float], prefix: str) -> float | None:
    # Keys carry the PID: a process that is new since `before` makes the delta unknowable.
    values = [after[k] - before.get(k, math.nan) for k in after if k.startswith(prefix)]
    if not values or any(math.isnan(v) for v in values):
        return None
    return sum(values)


def unmeasured() -> Delta:
    """A session on a cluster twinbench did not start (harness/cluster/external.py): nothing
    read."""
    return Delta(dict.fromkeys(COLUMNS), {}, {})


def _service_increase(before: dict[str, int] | None, after: dict[str, int] | None
                      ) -> dict[str, int | float | None]:
    """Each counter's increase; None where it went down (a server restarted, as in a fault
    session: its counters began again)."""
    if before is None or after is None:
        return {}
    return {k: (v - before[k] if k in before and v >= before[k] else None)
            for k, v in after.items()}


def pick(name: str | None, parts: dict[str, dict[str, int | float | None]]
         ) -> int | float | None:
    """The value of ``source:counter`` (Architecture.coordination's spelling) in ``parts``;
    ``a:x+b:y`` is the sum of both, unknown when either is."""
    if name is None:
        return None
    total: int | float = 0
    for term in name.split("+"):
        source, _, counter = term.strip().partition(":")
        value = parts.get(source, {}).get(counter)
        if value is None:
            return None
        total += value
    return total


def delta(arch: Architecture, before: Reading, after: Reading) -> Delta:
    svc = {name: _service_increase(before.services.get(name), value)
           for name, value in after.services.items()}
    coordinator: dict[str, int | float | None] = {}
    broker: dict[str, int | float | None] = {}
    if before.brokers is not None and after.brokers is not None:
        coordinator = increase(((n, r.coordinator) for n, r in before.brokers.items()),
                               ((n, r.coordinator) for n, r in after.brokers.items()))
        broker = increase(((n, r.broker) for n, r in before.brokers.items()),
                          ((n, r.broker) for n, r in after.brokers.items()))
        # A counter some broker's document lacked: its sum is unknown, the rest are read.
        for r in (*before.brokers.values(), *after.brokers.values()):
            for part, names in ((coordinator, r.coordinator_unknown),
                                (broker, r.broker_unknown)):
                for name in names:
                    if name in part:
                        part[name] = None
    exported: dict[str, int | float | None] = {}
    if before.exported is not None and after.exported is not None:
        exported = dict(jmx.change(before.exported, after.exported))
    parts = {"coordinator": coordinator, **svc, "jmx": exported}
    columns: dict[str, int | float | None] = dict.fromkeys(COLUMNS)
    columns.update(
        coord_messages=pick(arch.coordination.messages, parts),
        coord_bytes=pick(arch.coordination.bytes, parts),
        coordination_ops=coordinator.get("coordination_ops"),
        broker_cpu_s=_cpu_delta(before.cpu, after.cpu, "broker-"),
        service_cpu_s=(_cpu_delta(before.cpu, after.cpu, SERVICE_CPU)
                       if arch.services else None),
    )
    delay: dict[str, int | float | None] = dict.fromkeys(DELAY_COLUMNS)
    if before.delay is not None and after.delay is not None:
        line = delay_change(before.delay, after.delay)
        delay.update(rtt_measured_ms=line.gateway_held_ms, delayed_packets=line.packets,
                     delay_cpu_s=_cpu_delta(before.cpu, after.cpu, "netdelay:"))
    return Delta(columns, coordinator, broker, svc, delay, exported)


# Prometheus names of the counters contract (brokers/core/metrics.py): prefix -> Delta part.
_SCRAPED = (("twinbench_coordinator_", "coordinator"), ("twinbench_broker_", "broker"))


def scraped(samples: Iterable[Sample], columns: Mapping[str, Sequence[str]] | None = None
            ) -> Delta:
    """The session's Delta from the metrics endpoints of a cluster twinbench did not start
    (``--metrics-url``): per broker (node id), the last sample minus the first of every
    counter of the contract, summed over brokers as ``increase`` does (a value that went down:
    unknown). ``coordination_ops`` and ``broker_cpu_s`` (``process_cpu_seconds_total``) fill
    their columns, ``columns`` maps further ones to ``coordinator:<counter>`` candidates (what
    the architectures' entries name their coordination messages and bytes by, where their
    brokers count them; the first served wins); services are not read. An endpoint that
    serves none of these
    names (not a twin) leaves everything unknown, and so does one that missed the session's
    first or last scrape (its difference would cover part of the session)."""
    first: dict[tuple[int, str], tuple[float, float]] = {}
    last: dict[tuple[int, str], tuple[float, float]] = {}
    samples = list(samples)
    if not samples:
        return unmeasured()
    start, end = min(s.t_s for s in samples), max(s.t_s for s in samples)
    for s in samples:
        key = (s.node_id, _contract_name(s.metric, s.labels))
        if key[1] == "":
            continue
        if key not in first or s.t_s < first[key][0]:
            first[key] = (s.t_s, s.value)
        if key not in last or s.t_s >= last[key][0]:
            last[key] = (s.t_s, s.value)
    parts: dict[str, dict[str, int | float | None]] = {"coordinator": {}, "broker": {},
                                                       "process": {}}
    for (node, name), (t_last, value) in sorted(last.items()):
        part, _, counter = name.partition(":")
        t_first, value_first = first[(node, name)]
        step = value - value_first
        total = parts[part].get(counter, 0)
        if t_first != start or t_last != end or step < 0 or total is None:
            parts[part][counter] = None
        else:
            # Prometheus carries every number as a float; the contract's counts are integers.
            whole = part != "process" and step.is_integer()
            parts[part][counter] = total + (int(step) if whole else step)
    out: dict[str, int | float | None] = dict.fromkeys(COLUMNS)
    coordinator, broker = parts["coordinator"], parts["broker"]
    out["coordination_ops"] = coordinator.get("coordination_ops")
    out["broker_cpu_s"] = parts["process"].get("cpu_s")
    for column, candidates in (columns or {}).items():
        found = next((v for c in candidates
                      if (v := pick(c, {"coordinator": coordinator})) is not None), None)
        if found is not None:
            out[column] = found
    return Delta(out, coordinator, broker)


def _contract_name(metric: str, labels: str) -> str:
    """``part:name`` of a scraped sample (``coordinator:gossip_packets_out``,
    ``broker:kafka_requests_Produce`` for a family's label, ``process:cpu_s``), or "" for a
    sample that is none of these (gauges, histograms, per-topic series)."""
    if metric == "process_cpu_seconds_total" and not labels:
        return "process:cpu_s"
    if not metric.endswith("_total"):
        return ""
    for prefix, part in _SCRAPED:
        if metric.startswith(prefix):
            name = metric[len(prefix):-len("_total")]
            if not labels:
                return f"{part}:{name}"
            key, _, value = labels.partition("=")
            return f"{part}:{name}_{value}" if key == "label" and "," not in labels else ""
    return ""
