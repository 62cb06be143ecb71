"""A session's load in parts: each part runs some of the producers and consumers, and the
driver merges what they return exactly.

One code path for every layout. A run on one machine has one part, :class:`LocalPart`, holding
every client in this process; ``twinbench run --hosts`` has one part per client host, each a
load worker there (harness/remote/worker.py, which runs a ``LocalPart`` itself) reached through
``harness.remote.part.RemotePart``. The session (session.py) runs each phase on every part at
once, as OpenMessaging Benchmark's driver does with its distributed workers, and merges:

* counts are summed, HDR histograms added (``LatencyRecorder.merge``), the consumers'
  verifiers merged (``Verifier.merge``) and checked against every producer's acknowledgements;
* a phase lasts from the first request any part sent to the last answer any part got;
* open-loop time series are added bucket by bucket (every part's timeline starts at the
  session's start).

Times inside a part are its own ``time.perf_counter()``; a remote part's are converted to the
driver's with that host's measured clock offset (harness/remote/part.py), so a local part needs
no conversion at all.

Phases: ``produce`` (split's first phase: the part's producers to completion), ``consume``
(split's second: its consumers, each expecting a count), and ``start`` (streaming and
time-bounded open loop: producers and consumers at once; ``produced()`` once the producers are
done, ``finish()`` tells following consumers to stop at the end of the topic, ``consumed()``).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeVar, cast

from brokers.core.security.client import ClientSecurity
from harness.cluster.external import External
from harness.driver import plan
from harness.driver.plan import Cell
from harness.studies.faults import FAULT_STUDY
from harness.workload import Workload
from workloads.cluster import ClusterClient, ClusterClientConfig
from workloads.connection import ConnectionConfig
from workloads.consumer import Consumer, ConsumerResult
from workloads.latency import LatencyRecorder
from workloads.producer import Producer, ProducerConfig, ProducerResult
from workloads.timeline import Timeline
from workloads.verify import Verifier, pack_flags, unpack_flags

T = TypeVar("T")
# Open-loop time series: one bucket per second.
SERIES_BUCKET_S = 1.0


def client_config(bootstrap: str, workload: Workload, security: ClientSecurity | None = None
                  ) -> ClusterClientConfig:
    """The load client's settings (``security``: a secured cluster's TLS and SASL login, done
    once per connection when it opens). Under faults the client behaves like a patient Kafka
    client (keeps retrying, as delivery.timeout.ms lets it) but notices a silent broker within
    seconds, so an outage shows as a gap in the timeline rather than ending the session."""
    if workload.study(FAULT_STUDY) is None:
        return ClusterClientConfig(bootstrap=tuple(bootstrap.split(",")),
                                   connection=ConnectionConfig(security=security))
    return ClusterClientConfig(
        bootstrap=tuple(bootstrap.split(",")),
        connection=ConnectionConfig(connect_timeout_s=1.0, request_timeout_s=2.0,
                                    security=security),
        retries=1_000_000, retry_backoff_ms=20, retry_backoff_max_ms=250)


@dataclass
class Clients:
    """Long-lived client connections for one cluster: reused by every session on it."""

    admin: ClusterClient
    producers: list[ClusterClient]
    consumers: list[ClusterClient]

    @classmethod
    async def open(cls, bootstrap: str, workload: Workload, external: External | None = None,
                   security: ClientSecurity | None = None) -> Clients:
        config = client_config(bootstrap, workload, security)
        if external is not None:
            config = external.client_config(config)
        admin = await ClusterClient.open(bootstrap, config)
        try:
            producers = [await ClusterClient.open(bootstrap, config)
                         for _ in range(workload.producers)]
            consumers = [await ClusterClient.open(bootstrap, config)
                         for _ in range(workload.consumers)]
        except BaseException:
            await admin.close()
            raise
        return cls(admin, producers, consumers)

    async def close(self) -> None:
        for c in [self.admin, *self.producers, *self.consumers]:
            await c.close()


# --- what every part is told ---------------------------------------------------------------
@dataclass(frozen=True)
class LoadSettings:
    """The workload's settings a part's clients use (the rest stays with the driver)."""

    producers: int
    producer_mode: str
    window: int
    arrivals: str
    warmup_s: float
    acks: int
    fetch_max_wait_ms: int
    consumer_timeout_s: float
    duration_s: float | None

    @classmethod
    def of(cls, wl: Workload) -> LoadSettings:
        return cls(wl.producers, wl.producer_mode, wl.window, wl.arrivals, wl.warmup_s, wl.acks,
                   wl.fetch_max_wait_ms, wl.consumer_timeout_s, wl.duration_s)


@dataclass(frozen=True)
class Job:
    """One session's load as every part sees it; clients are addressed by global index."""

    settings: LoadSettings
    cell: Cell
    topic: str
    group: str
    offset_commit: str
    # Records each producer sends, and each producer's and consumer's partitions.
    counts: tuple[int, ...]
    producer_partitions: tuple[tuple[int, ...], ...]
    consumer_partitions: tuple[tuple[int, ...], ...]
    # Records stamped before this wall-clock µs (the driver's clock) stay out of the
    # end-to-end histogram (the warm-up); 0: none.
    e2e_from_us: int = 0
    # Open loop: the per-second series' start (perf_counter seconds); None: no series.
    timeline_t0: float | None = None

    @classmethod
    def of(cls, wl: Workload, cell: Cell, topic: str, group: str, offset_commit: str,
           counts: list[int], e2e_from_us: int, timeline_t0: float | None) -> Job:
        return cls(LoadSettings.of(wl), cell, topic, group, offset_commit, tuple(counts),
                   tuple(plan.producer_partitions(wl, i) for i in range(wl.producers)),
                   tuple(plan.consumer_partitions(wl, j) for j in range(wl.consumers)),
                   e2e_from_us, timeline_t0)

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Job:
        return cls(LoadSettings(**doc["settings"]), Cell(**doc["cell"]), doc["topic"],
                   doc["group"], doc["offset_commit"], tuple(doc["counts"]),
                   tuple(tuple(p) for p in doc["producer_partitions"]),
                   tuple(tuple(p) for p in doc["consumer_partitions"]),
                   int(doc["e2e_from_us"]), doc["timeline_t0"])


# --- what every part returns ---------------------------------------------------------------
@dataclass
class ScheduleOutcome:
    """An open-loop producer's schedule (workloads/schedule.py), as the merge needs it."""

    # Seconds from the end of the warm-up to the end of sending.
    elapsed_s: float
    sent_measured: int
    acked_measured: int
    behind: bool
    intended: LatencyRecorder
    send_delay: LatencyRecorder

    def to_json(self) -> dict[str, Any]:
        return {"elapsed_s": self.elapsed_s, "sent_measured": self.sent_measured,
                "acked_measured": self.acked_measured, "behind": self.behind,
                "intended": self.intended.to_json(), "send_delay": self.send_delay.to_json()}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> ScheduleOutcome:
        return cls(float(doc["elapsed_s"]), int(doc["sent_measured"]),
                   int(doc["acked_measured"]), bool(doc["behind"]),
                   LatencyRecorder.from_json(doc["intended"]),
                   LatencyRecorder.from_json(doc["send_delay"]))


@dataclass
class ProducerOutcome:
    producer_id: int
    records_sent: int
    records_acked: int
    # Requests that ended in a Kafka error after retries.
    errors: int
    # The first send and the last acknowledgement (perf_counter seconds).
    t_start: float
    t_end: float
    latency: LatencyRecorder
    # Byte i != 0: sequence i was acknowledged (workloads/verify.py).
    acked: bytearray
    partition_records: dict[int, int]
    open_loop: ScheduleOutcome | None = None

    @classmethod
    def of(cls, r: ProducerResult, t_end: float) -> ProducerOutcome:
        schedule, report = r.schedule, r.schedule_report
        open_loop = None
        if schedule is not None and report is not None:
            open_loop = ScheduleOutcome(report.elapsed_s, report.sent_measured,
                                        schedule.acked_measured, report.behind,
                                        schedule.latency_intended, schedule.send_delay)
        return cls(r.producer_id, r.records_sent, r.records_acked, sum(r.errors.values()),
                   r.t_start, t_end, r.latency, r.acked, dict(r.partition_records), open_loop)

    def to_json(self) -> dict[str, Any]:
        return {"producer_id": self.producer_id, "records_sent": self.records_sent,
                "records_acked": self.records_acked, "errors": self.errors,
                "t_start": self.t_start, "t_end": self.t_end, "latency": self.latency.to_json(),
                "acked": pack_flags(self.acked),
                "partition_records": {str(k): v for k, v in self.partition_records.items()},
                "open_loop": None if self.open_loop is None else self.open_loop.to_json()}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any], shift_s: float = 0.0) -> ProducerOutcome:
        """``shift_s`` is subtracted from the times (another clock -> the driver's)."""
        ol = doc["open_loop"]
        return cls(int(doc["producer_id"]), int(doc["records_sent"]), int(doc["records_acked"]),
                   int(doc["errors"]), float(doc["t_start"]) - shift_s,
                   float(doc["t_end"]) - shift_s, LatencyRecorder.from_json(doc["latency"]),
                   unpack_flags(doc["acked"]),
                   {int(k): int(v) for k, v in doc["partition_records"].items()},
                   None if ol is None else ScheduleOutcome.from_json(ol))


@dataclass
class ConsumerOutcome:
    consumer_id: int
    # Records delivered (duplicates included).
    records: int
    # The first fetch (perf_counter seconds), and from there to the last record.
    t_start: float
    wall_s: float
    fetch_latency: LatencyRecorder
    commit_latency: LatencyRecorder
    e2e_latency: LatencyRecorder
    errors: int
    timed_out: bool

    @classmethod
    def of(cls, r: ConsumerResult) -> ConsumerOutcome:
        return cls(r.consumer_id, r.records, r.t_start, r.wall_s, r.fetch_latency,
                   r.commit_latency, r.e2e_latency, sum(r.errors.values()), r.timed_out)

    def to_json(self) -> dict[str, Any]:
        return {"consumer_id": self.consumer_id, "records": self.records,
                "t_start": self.t_start, "wall_s": self.wall_s,
                "fetch_latency": self.fetch_latency.to_json(),
                "commit_latency": self.commit_latency.to_json(),
                "e2e_latency": self.e2e_latency.to_json(), "errors": self.errors,
                "timed_out": self.timed_out}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any], shift_s: float = 0.0) -> ConsumerOutcome:
        return cls(int(doc["consumer_id"]), int(doc["records"]),
                   float(doc["t_start"]) - shift_s, float(doc["wall_s"]),
                   LatencyRecorder.from_json(doc["fetch_latency"]),
                   LatencyRecorder.from_json(doc["commit_latency"]),
                   LatencyRecorder.from_json(doc["e2e_latency"]), int(doc["errors"]),
                   bool(doc["timed_out"]))


@dataclass
class PartOutcome:
    """What one part returns from one phase."""

    producers: list[ProducerOutcome] = field(default_factory=list)
    consumers: list[ConsumerOutcome] = field(default_factory=list)
    # Everything its consumers delivered (None when the phase ran no consumer).
    verifier: Verifier | None = None
    # Its open-loop buckets (None when closed loop).
    timeline: Timeline | None = None

    def to_json(self) -> dict[str, Any]:
        return {"producers": [p.to_json() for p in self.producers],
                "consumers": [c.to_json() for c in self.consumers],
                "verifier": None if self.verifier is None else self.verifier.to_json(),
                "timeline": None if self.timeline is None else self.timeline.to_json()}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any], shift_s: float = 0.0) -> PartOutcome:
        return cls([ProducerOutcome.from_json(p, shift_s) for p in doc["producers"]],
                   [ConsumerOutcome.from_json(c, shift_s) for c in doc["consumers"]],
                   None if doc["verifier"] is None else Verifier.from_json(doc["verifier"]),
                   None if doc["timeline"] is None else Timeline.from_json(doc["timeline"]))


# --- the seam --------------------------------------------------------------------------------
class Running(Protocol):
    """Producers and consumers of one part running at once (streaming, time-bounded)."""

    async def produced(self) -> PartOutcome:
        """Once every producer of the part is done: their outcomes."""
        ...

    async def finish(self) -> None:
        """Following consumers stop once they have caught up (time-bounded sessions)."""
        ...

    async def consumed(self) -> PartOutcome:
        """Once every consumer of the part is done: theirs, the verifier and the timeline."""
        ...

    async def abort(self) -> None:
        """Cancel whatever still runs (the session failed elsewhere)."""
        ...


class LoadPart(Protocol):
    # Where it runs ("local", or a client host's name).
    name: str
    # Global indices of the producers and consumers it runs.
    producers: tuple[int, ...]
    consumers: tuple[int, ...]

    async def produce(self, job: Job) -> PartOutcome: ...

    async def consume(self, job: Job, expected: Mapping[int, int]) -> PartOutcome: ...

    async def start(self, job: Job, expected: Mapping[int, int] | None) -> Running:
        """``expected``: records per consumer (streaming); None: consumers follow the topic
        until ``finish()`` (time-bounded)."""
        ...

    async def close(self) -> None: ...


async def timed(aw: Awaitable[T]) -> tuple[T, float]:
    result = await aw
    return result, time.perf_counter()


class LocalPart:
    """Producers and consumers in this process, on the given client connections (by global
    index). The one implementation of a part: a load worker on a client host runs one too."""

    def __init__(self, producers: Mapping[int, ClusterClient],
                 consumers: Mapping[int, ClusterClient], name: str = "local") -> None:
        self.name = name
        self._producer_clients = dict(producers)
        self._consumer_clients = dict(consumers)
        self.producers = tuple(sorted(producers))
        self.consumers = tuple(sorted(consumers))

    def _timeline(self, job: Job) -> Timeline | None:
        if job.timeline_t0 is None:
            return None
        return Timeline(job.timeline_t0, bucket_s=SERIES_BUCKET_S)

    def _producers(self, job: Job, timeline: Timeline | None) -> list[Producer]:
        s, cell = job.settings, job.cell
        rate = None if cell.rate is None else cell.rate / s.producers
        mode = cast(Literal["sync", "pipelined"], s.producer_mode)
        arrivals = cast(Literal["uniform", "poisson"], s.arrivals)
        out = []
        for i in self.producers:
            p = Producer(self._producer_clients[i], config=ProducerConfig(
                topic=job.topic, msg_size=cell.msg_size, batch=cell.batch, mode=mode,
                window=s.window, producer_id=i + 1, partitions=job.producer_partitions[i],
                rate=rate, arrivals=arrivals, seed=i + 1, warmup_s=s.warmup_s, acks=s.acks))
            if timeline is not None:
                p.on_ack = timeline.produced
            out.append(p)
        return out

    def _consumers(self, job: Job, verifier: Verifier, timeline: Timeline | None
                   ) -> list[Consumer]:
        s, cell = job.settings, job.cell
        out = []
        for j in self.consumers:
            c = Consumer(
                self._consumer_clients[j], job.topic, job.consumer_partitions[j],
                group=job.group, batch=cell.batch, msg_size=cell.msg_size,
                commit=plan.commit_policy(job.offset_commit), max_wait_ms=s.fetch_max_wait_ms,
                verifier=verifier, consumer_id=j, e2e_from_us=job.e2e_from_us)
            if timeline is not None:
                c.on_records = timeline.consumed
                c.on_e2e = timeline.e2e
            out.append(c)
        return out

    async def produce(self, job: Job) -> PartOutcome:
        timeline = self._timeline(job)
        producers = self._producers(job, timeline)
        done = await asyncio.gather(*(timed(p.run(job.counts[i]))
                                      for i, p in zip(self.producers, producers, strict=True)))
        return PartOutcome([ProducerOutcome.of(r, t) for r, t in done], timeline=timeline)

    async def consume(self, job: Job, expected: Mapping[int, int]) -> PartOutcome:
        verifier = Verifier()
        timeline = self._timeline(job)
        consumers = self._consumers(job, verifier, timeline)
        done = await asyncio.gather(*(
            c.run(expected=expected[j], deadline_s=job.settings.consumer_timeout_s)
            for j, c in zip(self.consumers, consumers, strict=True)))
        return PartOutcome(consumers=[ConsumerOutcome.of(r) for r in done], verifier=verifier,
                           timeline=timeline)

    async def start(self, job: Job, expected: Mapping[int, int] | None) -> Running:
        return _LocalRunning(self, job, expected)

    async def close(self) -> None:
        for c in [*self._producer_clients.values(), *self._consumer_clients.values()]:
            await c.close()


class _LocalRunning:
    def __init__(self, part: LocalPart, job: Job, expected: Mapping[int, int] | None) -> None:
        self.verifier = Verifier()
        self.timeline = part._timeline(job)
        producers = part._producers(job, self.timeline)
        self.consumer_objects = part._consumers(job, self.verifier, self.timeline)
        timeout = job.settings.consumer_timeout_s
        self.consumer_tasks = [
            asyncio.ensure_future(c.run(deadline_s=timeout, follow=True) if expected is None
                                  else c.run(expected=expected[j], deadline_s=timeout))
            for j, c in zip(part.consumers, self.consumer_objects, strict=True)]
        duration = job.settings.duration_s
        self.producer_task = asyncio.ensure_future(asyncio.gather(*(
            timed(p.run(job.counts[i], duration))
            for i, p in zip(part.producers, producers, strict=True))))

    async def produced(self) -> PartOutcome:
        done = await self.producer_task
        return PartOutcome([ProducerOutcome.of(r, t) for r, t in done])

    async def finish(self) -> None:
        for c in self.consumer_objects:
            c.finish()

    async def consumed(self) -> PartOutcome:
        done = await asyncio.gather(*self.consumer_tasks)
        return PartOutcome(consumers=[ConsumerOutcome.of(r) for r in done],
                           verifier=self.verifier, timeline=self.timeline)

    async def abort(self) -> None:
        tasks: list[asyncio.Future[Any]] = [self.producer_task, *self.consumer_tasks]
        for t in tasks:
            t.cancel()
        with contextlib.suppress(BaseException):
            await asyncio.gather(*tasks, return_exceptions=True)


@dataclass
class Load:
    """The load clients of one cluster: the driver's admin client (topics) and the parts that
    run producers and consumers."""

    admin: ClusterClient
    parts: list[LoadPart]
    # The in-process clients when the load is local (fault sessions drive them directly).
    local: Clients | None = None

    @classmethod
    def of(cls, clients: Clients) -> Load:
        """Every client of ``clients`` in one local part: the run on one machine."""
        part = LocalPart(dict(enumerate(clients.producers)), dict(enumerate(clients.consumers)))
        return cls(clients.admin, [part], clients)

    @classmethod
    async def open(cls, bootstrap: str, workload: Workload, external: External | None = None,
                   security: ClientSecurity | None = None) -> Load:
        return cls.of(await Clients.open(bootstrap, workload, external, security))

    async def close(self) -> None:
        for part in self.parts:
            with contextlib.suppress(Exception):
                await part.close()
        await self.admin.close()


def share(n: int, parts: int) -> list[tuple[int, ...]]:
    """Clients 0..n-1 dealt round-robin to ``parts`` parts (client i to part i mod parts)."""
    return [tuple(range(k, n, parts)) for k in range(parts)]
