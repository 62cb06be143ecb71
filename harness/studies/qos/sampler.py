"""The brokers' Prometheus metrics sampled into the run log (metrics.csv, format 8).

A workload with ``metrics: true`` starts every broker with ``--metrics`` (ClusterSpec.metrics)
and the driver scrapes each broker's endpoint, as Prometheus would: once just before a
session's producers start, every ``metrics_interval_s`` while it runs, and once after its
consumers finish. A scrape makes the broker build its snapshot there and then
(brokers/core/metrics.py), so the first and last samples bracket the session exactly and
their difference is what the session did.

What is kept of a scrape: every sample of every family but histogram buckets (the time
histograms' ``_sum`` and ``_count`` stay) and ``_created`` stamps, and of the per-topic series
only the session's own topic (the topics of earlier sessions linger on the brokers). One row
per sample: the time since the first scrape of the session, the broker, the sample's name, its
labels (``key=value`` pairs joined by ``,``, sorted) and its value.

Scrapes are plain HTTP/1.0 GETs on asyncio streams (the event loop is the load client's, so a
scrape must never block it), all brokers at once; the text is parsed with prometheus-client's
own parser. A broker that does not answer within the timeout yields no rows for that sample
(the gap shows in t_s), never a failed session.

ZooKeeper serves no such endpoint here, so at every scrape the harness reads its servers'
CPU seconds and resident memory itself (psutil) under the same names as the brokers'
(``process_cpu_seconds_total``, ``process_resident_memory_bytes``), as nodes -1, -2, ...
(server 0, 1, ...): ZooKeeper's cost over exactly the session's window.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import psutil
from prometheus_client.parser import text_string_to_metric_families

# One scrape of one broker gives up after this long.
SCRAPE_TIMEOUT_S = 5.0
# A scrape's body is refused beyond this (a broker serves a few hundred lines).
MAX_BODY_BYTES = 16 * 1024 * 1024
_DROPPED_SUFFIXES = ("_bucket", "_created")


@dataclass(frozen=True)
class Sample:
    t_s: float
    node_id: int
    metric: str
    labels: str
    value: float


def keep(name: str, labels: dict[str, str], topic: str) -> bool:
    """Whether a sample goes into the run log (see the module docstring)."""
    if name.endswith(_DROPPED_SUFFIXES):
        return False
    return labels.get("topic", topic) == topic


def process_samples(processes: Sequence[tuple[int, int]], t_s: float) -> list[Sample]:
    """CPU seconds and resident memory of processes read directly (gone ones: no rows)."""
    out = []
    for node_id, pid in processes:
        try:
            proc = psutil.Process(pid)
            with proc.oneshot():
                cpu, rss = proc.cpu_times(), proc.memory_info().rss
        except psutil.Error:
            continue
        out += [Sample(t_s, node_id, "process_cpu_seconds_total", "", cpu.user + cpu.system),
                Sample(t_s, node_id, "process_resident_memory_bytes", "", float(rss))]
    return out


def parse(text: str, t_s: float, node_id: int, topic: str) -> list[Sample]:
    out = []
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if keep(s.name, s.labels, topic):
                labels = ",".join(f"{k}={v}" for k, v in sorted(s.labels.items()))
                out.append(Sample(t_s, node_id, s.name, labels, float(s.value)))
    return out


async def scrape(address: str, timeout_s: float = SCRAPE_TIMEOUT_S) -> str:
    """GET http://ADDRESS/metrics (ADDRESS: HOST:PORT, or HOST:PORT/PATH for another path);
    the body as text (OSError / TimeoutError otherwise)."""
    address, slash, rest = address.partition("/")
    path = slash + rest if slash else "/metrics"
    host, _, port = address.rpartition(":")

    async def get() -> bytes:
        reader, writer = await asyncio.open_connection(host, int(port))
        try:
            writer.write(f"GET {path} HTTP/1.0\r\nHost: {address}\r\n\r\n".encode())
            await writer.drain()
            chunks, size = [], 0
            while chunk := await reader.read(65536):  # HTTP/1.0: the body ends at EOF
                chunks.append(chunk)
                size += len(chunk)
                if size > MAX_BODY_BYTES:
                    raise ValueError(f"{address}: metrics body over {MAX_BODY_BYTES} bytes")
            return b"".join(chunks)
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    raw = await asyncio.wait_for(get(), timeout_s)
    head, sep, body = raw.partition(b"\r\n\r\n")
    status = head.split(b"\r\n", 1)[0]
    if not sep or status.split()[1:2] != [b"200"]:
        raise OSError(f"{address}: metrics endpoint answered {status[:80]!r}")
    return body.decode("utf-8", "replace")


@dataclass
class MetricsSampler:
    """Samples ``endpoints`` (node id -> HOST:PORT) for one session on ``topic``."""

    endpoints: Sequence[tuple[int, str]]
    topic: str
    interval_s: float = 1.0
    # (node id, pid) of processes without an endpoint (ZooKeeper servers: -1, -2, ...).
    processes: Sequence[tuple[int, int]] = ()
    samples: list[Sample] = field(default_factory=list)
    # Scrapes that failed (a broker that did not answer): counted, not fatal.
    failures: int = 0
    _t0: float = 0.0
    _task: asyncio.Task[None] | None = None

    async def sample(self) -> None:
        t_s = time.perf_counter() - self._t0
        self.samples.extend(process_samples(self.processes, t_s))
        texts = await asyncio.gather(*(scrape(a) for _, a in self.endpoints),
                                     return_exceptions=True)
        for (node_id, _), text in zip(self.endpoints, texts, strict=True):
            if isinstance(text, BaseException):
                if not isinstance(text, OSError | TimeoutError | ValueError):
                    raise text
                self.failures += 1
                continue
            try:
                self.samples.extend(parse(text, t_s, node_id, self.topic))
            except ValueError:
                self.failures += 1  # not the exposition format: no rows from it

    async def start(self) -> None:
        """The first sample (the session's t_s = 0), then one every interval until stop()."""
        self._t0 = time.perf_counter()
        await self.sample()
        self._task = asyncio.ensure_future(self._every())

    async def _every(self) -> None:
        while True:
            await asyncio.sleep(self.interval_s)
            await self.sample()

    async def stop(self) -> None:
        """Stop sampling and take the last sample."""
        await self.cancel()
        await self.sample()

    async def cancel(self) -> None:
        """Stop sampling without a last sample (the session failed)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def rows(self, common: dict[str, Any]) -> list[dict[str, Any]]:
        """metrics.csv rows, ``common`` holding run_id, arch, label, cell_id, scenario, try."""
        return [{**common, "t_s": round(s.t_s, 6), "node_id": s.node_id, "metric": s.metric,
                 "labels": s.labels, "value": s.value} for s in self.samples]
