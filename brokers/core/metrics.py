"""The broker's Prometheus endpoint (``--metrics HOST:PORT``), with prometheus-client.

What it serves, under Prometheus names (``twinbench_`` prefix, seconds and bytes, ``_total``
for counters):

* per API (label ``api``, Kafka's request names: Produce, Fetch, ...): requests, request and
  response bytes, and a histogram of the time to answer (brokers/core/request_meter.py);
  requests refused by kind (``twinbench_request_errors_total``); answers owed now;
* every counter of the counters contract (brokers/core/counters.py): the broker's own as
  ``twinbench_broker_<name>`` and the coordinator's as ``twinbench_coordinator_<name>`` (ZooKeeper
  requests, gossip packets, ...), a ``by_label`` family with its key as label ``label``; a new
  counter in a contract class appears here with no change;
* the bytes the data directory holds, and the process's CPU seconds, resident memory and
  open descriptors (prometheus-client's process collector).

Nothing is read across threads: the event loop rebuilds a snapshot of the families every
``REFRESH_S`` and the library's HTTP thread serves the latest one (the process collector reads
/proc by itself). So a scrape sees values at most ``REFRESH_S`` old and costs the loop nothing.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from threading import Thread
from typing import Any

from prometheus_client import CollectorRegistry, ProcessCollector, start_http_server
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from brokers.core.counters import Counters
from brokers.core.protocol.api import ApiKey
from brokers.core.request_meter import BUCKETS, MeteredDispatcher

log = logging.getLogger("twinbench.metrics")

REFRESH_S = 1.0
PREFIX = "twinbench"


def api_name(key: int) -> str:
    """Kafka's request name for an API key (PRODUCE -> Produce); unknown keys by number."""
    try:
        return "".join(word.capitalize() for word in ApiKey(key).name.split("_"))
    except ValueError:
        return str(key)


def counter_families(prefix: str, counters: Counters) -> Iterator[Metric]:
    """The families of one contract object: totals as counters, gauges as gauges, a by_label
    family as one counter with a ``label`` label."""
    for spec in counters.specs():
        name, value = f"{prefix}_{spec.name}", getattr(counters, spec.name)
        if spec.kind == "gauge":
            yield GaugeMetricFamily(name, spec.meaning, value=value)
        elif spec.kind == "total":
            yield CounterMetricFamily(name, spec.meaning, value=value)
        else:
            family = CounterMetricFamily(name, spec.meaning, labels=["label"])
            for label, n in sorted(value.items()):
                family.add_metric([label], n)
            yield family


def request_families(meter: MeteredDispatcher) -> Iterator[Metric]:
    requests = CounterMetricFamily(f"{PREFIX}_requests", "requests answered, by API",
                                   labels=["api"])
    bytes_in = CounterMetricFamily(f"{PREFIX}_request_bytes_in", "request bytes, by API",
                                   labels=["api"])
    bytes_out = CounterMetricFamily(f"{PREFIX}_request_bytes_out", "response bytes, by API",
                                    labels=["api"])
    times = HistogramMetricFamily(f"{PREFIX}_request_time_seconds",
                                  "time from dispatch to the answer being ready, by API",
                                  labels=["api"])
    for key, stats in sorted(meter.apis.items()):
        name = [api_name(key)]
        requests.add_metric(name, stats.requests)
        bytes_in.add_metric(name, stats.bytes_in)
        bytes_out.add_metric(name, stats.bytes_out)
        cumulative, buckets = 0, []
        for bound, count in zip((*BUCKETS, float("inf")), stats.time_counts, strict=True):
            cumulative += count
            buckets.append(("+Inf" if bound == float("inf") else repr(bound), cumulative))
        times.add_metric(name, buckets, stats.time_sum_s)
    errors = CounterMetricFamily(f"{PREFIX}_request_errors", "requests refused, by kind",
                                 labels=["kind"])
    for kind, n in sorted(meter.errors.items()):
        errors.add_metric([kind], n)
    yield from (requests, bytes_in, bytes_out, times, errors)


def directory_bytes(root: Path) -> int:
    """Bytes of every regular file under ``root`` (the log directory's disk use)."""
    total, stack = 0, [root]
    while stack:
        try:
            entries = list(os.scandir(stack.pop()))
        except OSError:
            continue  # a segment directory deleted by retention meanwhile
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(Path(entry.path))
                elif entry.is_file(follow_symlinks=False):
                    total += entry.stat(follow_symlinks=False).st_size
            except OSError:
                continue
    return total


class _Snapshot(Collector):
    def __init__(self) -> None:
        self.families: list[Metric] = []

    def collect(self) -> Iterable[Metric]:
        return self.families  # replaced whole by the loop, never mutated


class MetricsExporter:
    """Owns the HTTP endpoint and the snapshot; ``refresh()`` runs on the event loop."""

    def __init__(self, meter: MeteredDispatcher, broker_counters: Callable[[], Counters],
                 coordinator_counters: Callable[[], Counters], in_flight: Callable[[], int],
                 data_dir: Path) -> None:
        self._meter = meter
        self._broker = broker_counters
        self._coordinator = coordinator_counters
        self._in_flight = in_flight
        self._data_dir = data_dir
        self.registry = CollectorRegistry()
        ProcessCollector(registry=self.registry)
        self._snapshot = _Snapshot()
        self.registry.register(self._snapshot)
        self._httpd: Any = None
        self._thread: Thread | None = None

    def start(self, host: str, port: int) -> tuple[str, int]:
        self.refresh()
        self._httpd, self._thread = start_http_server(port, host, self.registry)
        bound = self._httpd.server_address
        return str(bound[0]), int(bound[1])

    def refresh(self) -> None:
        families: list[Metric] = [*request_families(self._meter)]
        families.append(GaugeMetricFamily(f"{PREFIX}_requests_in_flight",
                                          "requests read and not yet answered",
                                          value=self._in_flight()))
        families.extend(counter_families(f"{PREFIX}_broker", self._broker()))
        try:
            families.extend(counter_families(f"{PREFIX}_coordinator", self._coordinator()))
        except KeyError:
            log.exception("coordinator counters break their contract; not exported")
        families.append(GaugeMetricFamily(f"{PREFIX}_log_dir_bytes",
                                          "bytes of the files in the data directory",
                                          value=directory_bytes(self._data_dir)))
        self._snapshot.families = families

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()
