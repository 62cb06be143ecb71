"""The broker's Prometheus endpoint (``--metrics HOST:PORT``), with prometheus-client.

What it serves, under Prometheus names (``twinbench_`` prefix, seconds and bytes, ``_total``
for counters):

* per API (label ``api``, Kafka's request names: Produce, Fetch, ...): requests, request and
  response bytes, and a histogram of the time to answer (brokers/core/request_meter.py);
  requests refused by kind (``twinbench_request_errors_total``); answers owed now
  (``twinbench_requests_in_flight``) and requests read but held back from dispatch
  (``twinbench_request_queue_size``, Kafka's RequestQueueSize);
* every counter of the counters contract (brokers/core/counters.py): the broker's own as
  ``twinbench_broker_<name>`` and the coordinator's as ``twinbench_coordinator_<name>`` (ZooKeeper
  requests, gossip packets, ...), a ``by_label`` family with its key as label ``label``; a new
  counter in a contract class appears here with no change;
* per topic, Kafka's BrokerTopicMetrics: bytes and messages in, bytes out to consumers and
  to followers; and Kafka's ErrorsPerSec: error codes in responses by API and error name
  (brokers/core/response_meter.py);
* the bytes the data directory holds and the bytes free on its filesystem, and the process's
  CPU seconds, resident memory and open descriptors (prometheus-client's process collector).

Nothing is read across threads: a scrape (the library's HTTP thread) asks the event loop to
build a fresh snapshot of the families and serves it, so what a scrape sees is the broker's
state at that moment (a harness sampling at a session's end reads the session whole). When
the loop does not build it within ``SCRAPE_WAIT_S`` (it is busy, or stopping), the previous
snapshot is served. The process collector reads /proc by itself.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from threading import Event, Thread
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
from brokers.core.response_meter import ResponseMeter

log = logging.getLogger("twinbench.metrics")

# How long a scrape waits for the event loop to build a fresh snapshot.
SCRAPE_WAIT_S = 1.0
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


def response_families(meter: ResponseMeter) -> Iterator[Metric]:
    per_topic = [
        CounterMetricFamily(f"{PREFIX}_topic_bytes_in", "record-batch bytes appended by "
                            "Produce, by topic (Kafka's BytesInPerSec)", labels=["topic"]),
        CounterMetricFamily(f"{PREFIX}_topic_messages_in", "records appended by Produce, by "
                            "topic (Kafka's MessagesInPerSec)", labels=["topic"]),
        CounterMetricFamily(f"{PREFIX}_topic_bytes_out", "record-batch bytes fetched by "
                            "consumers, by topic (Kafka's BytesOutPerSec)", labels=["topic"]),
        CounterMetricFamily(f"{PREFIX}_topic_replication_bytes_out", "record-batch bytes "
                            "fetched by followers, by topic (ReplicationBytesOutPerSec)",
                            labels=["topic"]),
    ]
    for topic, values in sorted(meter.topics.items()):
        for family, value in zip(per_topic, values, strict=True):
            family.add_metric([topic], value)
    errors = CounterMetricFamily(f"{PREFIX}_response_errors", "error codes in responses, by "
                                 "API and Kafka error name (Kafka's ErrorsPerSec)",
                                 labels=["api", "error"])
    for (api, name), n in sorted(meter.error_counts().items()):
        errors.add_metric([api_name(api), name], n)
    yield from (*per_topic, errors)


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


def free_bytes(path: Path) -> int:
    """Bytes free for the broker on the filesystem holding ``path`` (0 when unreadable)."""
    try:
        return shutil.disk_usage(path).free
    except OSError:
        return 0


class _Snapshot(Collector):
    """The families served; collect() (HTTP thread) has the loop rebuild them first."""

    def __init__(self, refresh: Callable[[], None]) -> None:
        self.families: list[Metric] = []
        self.loop: asyncio.AbstractEventLoop | None = None
        self._refresh = refresh

    def collect(self) -> Iterable[Metric]:
        loop = self.loop
        if loop is not None:
            built = Event()

            def build() -> None:
                try:
                    self._refresh()
                finally:
                    built.set()

            try:
                loop.call_soon_threadsafe(build)
            except RuntimeError:
                pass  # the loop is closed: the last snapshot is the final state
            else:
                built.wait(SCRAPE_WAIT_S)
        return self.families  # replaced whole by the loop, never mutated


class MetricsExporter:
    """Owns the HTTP endpoint and the snapshot; ``refresh()`` runs on the event loop."""

    def __init__(self, meter: MeteredDispatcher, broker_counters: Callable[[], Counters],
                 coordinator_counters: Callable[[], Counters], in_flight: Callable[[], int],
                 data_dir: Path, responses: ResponseMeter | None = None,
                 queued: Callable[[], int] = lambda: 0) -> None:
        self._meter = meter
        self._queued = queued
        self.responses = responses or ResponseMeter()
        self._broker = broker_counters
        self._coordinator = coordinator_counters
        self._in_flight = in_flight
        self._data_dir = data_dir
        self.registry = CollectorRegistry()
        ProcessCollector(registry=self.registry)
        self._snapshot = _Snapshot(self.refresh)
        self.registry.register(self._snapshot)
        self._httpd: Any = None
        self._thread: Thread | None = None

    def start(self, host: str, port: int) -> tuple[str, int]:
        """Serve on host:port; called on the event loop that then builds every snapshot."""
        self.refresh()
        self._snapshot.loop = asyncio.get_running_loop()
        self._httpd, self._thread = start_http_server(port, host, self.registry)
        bound = self._httpd.server_address
        return str(bound[0]), int(bound[1])

    def refresh(self) -> None:
        families: list[Metric] = [*request_families(self._meter),
                                  *response_families(self.responses)]
        families.append(GaugeMetricFamily(f"{PREFIX}_requests_in_flight",
                                          "requests read and not yet answered",
                                          value=self._in_flight()))
        families.append(GaugeMetricFamily(f"{PREFIX}_request_queue_size",
                                          "requests read and waiting to be dispatched "
                                          "(Kafka's RequestQueueSize)", value=self._queued()))
        families.extend(counter_families(f"{PREFIX}_broker", self._broker()))
        try:
            families.extend(counter_families(f"{PREFIX}_coordinator", self._coordinator()))
        except KeyError:
            log.exception("coordinator counters break their contract; not exported")
        families.append(GaugeMetricFamily(f"{PREFIX}_log_dir_bytes",
                                          "bytes of the files in the data directory",
                                          value=directory_bytes(self._data_dir)))
        families.append(GaugeMetricFamily(f"{PREFIX}_log_dir_free_bytes",
                                          "bytes free on the data directory's filesystem",
                                          value=free_bytes(self._data_dir)))
        self._snapshot.families = families

    def stop(self) -> None:
        self._snapshot.loop = None  # scrapes from now on serve the last snapshot
        httpd, self._httpd = self._httpd, None
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()
