"""One session: a fresh topic, ``producers`` concurrent producers, ``consumers`` concurrent
consumers in one group, and verification of every consumed record.

* split: all producers run to completion with no consumer, then all consumers read everything
  the producers had acknowledged; each phase is timed alone.
* streaming: producers and consumers start together; each consumer expects what the producers
  will send to its partitions (known in advance: round-robin of full batches).

A phase's wall time runs from the first request any of its clients sent to the last response
(producers) or last record (consumers) any of them got: the paper's rps is the group's, not
the mean of per-client rates. Each client has its own connections (its own
``workloads.cluster.ClusterClient``), like the paper's one-thread-per-client producer group.

Open loop (the cell has a target ``rate``): every producer runs its share of the rate on the
schedule of workloads/schedule.py, with ``messages`` records or, time-bounded, for
``duration_s`` (streaming only: consumers then follow the topic until the producers are done
and they have caught up). Requests due in the first ``warmup_s`` are not measured: the
production row counts records due after it, over the time after it, with latency from each
request's intended send time; consumers leave records sent before it out of the end-to-end
histogram and the consumption rate. A session whose producers fell behind their schedule is
marked ``behind`` (its achieved rate is not the target's).

Verification: one :class:`~workloads.verify.Verifier` per session sees every consumed record:
count, order within each partition, loss against what was acknowledged, duplicates.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, cast

from brokers.core.security.client import ClientSecurity
from harness.driver import plan
from harness.driver.plan import Cell
from harness.external import External
from harness.workload import Workload
from workloads.cluster import ClusterClient, ClusterClientConfig
from workloads.connection import ConnectionConfig
from workloads.consumer import Consumer, ConsumerResult
from workloads.latency import LatencyRecorder
from workloads.payload import now_us
from workloads.producer import Producer, ProducerConfig, ProducerResult
from workloads.timeline import Timeline
from workloads.verify import Verifier, VerifyReport

T = TypeVar("T")


def client_config(bootstrap: str, workload: Workload, security: ClientSecurity | None = None
                  ) -> ClusterClientConfig:
    """The load client's settings (``security``: a secured cluster's TLS and SASL login, done
    once per connection when it opens). Under faults the client behaves like a patient Kafka
    client (keeps retrying, as delivery.timeout.ms lets it) but notices a silent broker within
    seconds, so an outage shows as a gap in the timeline rather than ending the session."""
    if workload.faults is None:
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


@dataclass
class RoleResult:
    # production | consumption
    role: str
    clients: int
    # Acknowledged (production) or delivered (consumption, duplicates included) records.
    records: int
    wall_s: float
    # Per-request latency of every client merged (consumption: Fetch and OffsetCommit).
    latency: LatencyRecorder
    # Send-to-consume latency per record (consumption only).
    e2e: LatencyRecorder | None
    # Requests that ended in a Kafka error (after retries, for producers).
    errors: int


@dataclass
class OpenLoopResult:
    # Target records/s, all producers together.
    target_rate: float
    # Records sent per second after the warm-up, all producers together.
    achieved_rate: float
    # Some producer did not keep its schedule (workloads.schedule.ScheduleReport.behind).
    behind: bool
    # Per record after the warm-up: how late each request went out, and its produce latency
    # from the intended send time.
    send_delay: LatencyRecorder
    intended: LatencyRecorder
    # One dict per second from the start of production (workloads.timeline.Timeline.series):
    # the run log's series.csv.
    series: list[dict[str, Any]]


@dataclass
class SessionResult:
    production: RoleResult
    consumption: RoleResult
    report: VerifyReport
    # Records the producers sent in total (acknowledged or not).
    messages: int
    # A consumer gave up at its deadline.
    timed_out: bool
    # Open-loop sessions: schedule, achieved rate and verdict; None when closed loop.
    open_loop: OpenLoopResult | None = None

    def timed_s(self, scenario: str) -> float:
        """Wall seconds inside the measured phases: both phases one after the other (split),
        or the longer of the two running together (streaming, approximately)."""
        p, c = self.production.wall_s, self.consumption.wall_s
        return p + c if scenario == "split" else max(p, c)

    @property
    def failed(self) -> bool:
        """Data lost, reordered or corrupted: the cell's numbers cannot be trusted."""
        r = self.report
        return r.lost > 0 or r.out_of_order > 0 or r.corrupt_batches > 0


async def timed(aw: Awaitable[T]) -> tuple[T, float]:
    result = await aw
    return result, time.perf_counter()


def _merge(name: str, recorders: list[LatencyRecorder]) -> LatencyRecorder:
    out = LatencyRecorder(name)
    for r in recorders:
        out.merge(r)
    return out


def production_role(results: list[tuple[ProducerResult, float]]) -> RoleResult:
    start = min(r.t_start for r, _ in results)
    end = max(t for _, t in results)
    return RoleResult(
        role="production",
        clients=len(results),
        records=sum(r.records_acked for r, _ in results),
        wall_s=end - start,
        latency=_merge("produce", [r.latency for r, _ in results]),
        e2e=None,
        errors=sum(sum(r.errors.values()) for r, _ in results),
    )


def open_loop_production(results: list[tuple[ProducerResult, float]], target: float,
                         series: list[dict[str, Any]]) -> tuple[RoleResult, OpenLoopResult]:
    """The production row of an open-loop session: records due after the warm-up, over the
    time after it (each producer's schedule from the warm-up's end to its last send), with
    latency from the intended send time."""
    reports = [r.schedule_report for r, _ in results]
    schedules = [r.schedule for r, _ in results]
    assert all(x is not None for x in reports) and all(x is not None for x in schedules)
    wall = max(x.elapsed_s for x in reports if x is not None)
    sent = sum(x.sent_measured for x in reports if x is not None)
    intended = _merge("produce_intended", [x.latency_intended for x in schedules if x])
    role = RoleResult(
        role="production",
        clients=len(results),
        # From the schedules, not the reports: those were taken when sending ended, before the
        # last window of requests was answered.
        records=sum(x.acked_measured for x in schedules if x is not None),
        wall_s=wall,
        latency=intended,
        e2e=None,
        errors=sum(sum(r.errors.values()) for r, _ in results),
    )
    return role, OpenLoopResult(
        target_rate=target,
        achieved_rate=sent / wall if wall > 0 else 0.0,
        behind=any(x.behind for x in reports if x is not None),
        send_delay=_merge("send_delay", [x.send_delay for x in schedules if x]),
        intended=intended,
        series=series,
    )


def consumption_role(results: list[ConsumerResult], measured_from: float | None = None
                     ) -> RoleResult:
    """``measured_from`` (perf_counter; warm-up sessions): count only records sent after it
    (those with an end-to-end sample) over the time after it."""
    start = min(r.t_start for r in results)
    # wall_s of a consumer ends at its last record (its final commit is not consumption).
    end = max(r.t_start + r.wall_s for r in results)
    records = sum(r.records for r in results)
    if measured_from is not None:
        start = max(start, measured_from)
        records = sum(r.e2e_latency.count for r in results)
    return RoleResult(
        role="consumption",
        clients=len(results),
        records=records,
        wall_s=end - start,
        latency=_merge(
            "consume", [x for r in results for x in (r.fetch_latency, r.commit_latency)]
        ),
        e2e=_merge("end_to_end", [r.e2e_latency for r in results]),
        errors=sum(sum(r.errors.values()) for r in results),
    )


def _producers(clients: Clients, wl: Workload, cell: Cell, topic: str) -> list[Producer]:
    rate = None if cell.rate is None else cell.rate / wl.producers
    mode = cast(Literal["sync", "pipelined"], wl.producer_mode)
    arrivals = cast(Literal["uniform", "poisson"], wl.arrivals)
    return [
        Producer(clients.producers[i], config=ProducerConfig(
            topic=topic, msg_size=cell.msg_size, batch=cell.batch, mode=mode, window=wl.window,
            producer_id=i + 1, partitions=plan.producer_partitions(wl, i), rate=rate,
            arrivals=arrivals, seed=i + 1, warmup_s=wl.warmup_s, acks=wl.acks))
        for i in range(wl.producers)
    ]


def _producer_counts(wl: Workload, cell: Cell) -> list[int]:
    """Records each producer sends: its share of ``messages``, or, time-bounded, an upper
    bound (the schedule stops the producer at duration_s; poisson: +6 sigma)."""
    if wl.duration_s is None:
        return plan.producer_counts(cell.messages or wl.messages, wl.producers)
    assert cell.rate is not None  # the workload parser's rules
    expect = cell.rate / wl.producers * wl.duration_s
    return [math.ceil(expect + 6 * math.sqrt(expect)) + cell.batch] * wl.producers


def _consumers(clients: Clients, wl: Workload, cell: Cell, topic: str, group: str,
               offset_commit: str, verifier: Verifier) -> list[Consumer]:
    # Warm-up: records sent before this are left out of the end-to-end histogram.
    e2e_from = now_us() + round(wl.warmup_s * 1e6) if wl.warmup_s else 0
    return [
        Consumer(
            clients.consumers[j], topic, plan.consumer_partitions(wl, j), group=group,
            batch=cell.batch, msg_size=cell.msg_size, commit=plan.commit_policy(offset_commit),
            max_wait_ms=wl.fetch_max_wait_ms, verifier=verifier, consumer_id=j,
            e2e_from_us=e2e_from,
        )
        for j in range(wl.consumers)
    ]


def _follow_timeline(producers: list[Producer], consumers: list[Consumer]) -> Timeline:
    """The open-loop time series: 1-second buckets from now (production starts at once)."""
    timeline = Timeline(time.perf_counter(), bucket_s=1.0)
    for p in producers:
        p.on_ack = timeline.produced
    for c in consumers:
        c.on_records = timeline.consumed
        c.on_e2e = timeline.e2e
    return timeline


Produced = list[tuple[ProducerResult, float]]


async def _time_bounded(producers: list[Producer], consumers: list[Consumer], counts: list[int],
                        wl: Workload) -> tuple[Produced, list[ConsumerResult]]:
    """Nobody knows the count in advance: consumers follow the topic until the producers are
    done and they have caught up."""
    following = [asyncio.ensure_future(c.run(deadline_s=wl.consumer_timeout_s, follow=True))
                 for c in consumers]
    try:
        prod = await asyncio.gather(*(timed(p.run(n, wl.duration_s))
                                      for p, n in zip(producers, counts, strict=True)))
    finally:
        for c in consumers:
            c.finish()
    return list(prod), list(await asyncio.gather(*following))


async def _split(producers: list[Producer], consumers: list[Consumer], counts: list[int],
                 wl: Workload) -> tuple[Produced, list[ConsumerResult]]:
    """Producers to completion, then consumers read what was acknowledged."""
    prod = await asyncio.gather(*(timed(p.run(n)) for p, n in zip(producers, counts,
                                                                    strict=True)))
    acked: dict[int, int] = {}
    for r, _ in prod:
        for p, n in r.partition_records.items():
            acked[p] = acked.get(p, 0) + n
    cons = await asyncio.gather(*(
        c.run(expected=sum(acked.get(p, 0) for p in plan.consumer_partitions(wl, j)),
              deadline_s=wl.consumer_timeout_s)
        for j, c in enumerate(consumers)
    ))
    return list(prod), list(cons)


async def _streaming(producers: list[Producer], consumers: list[Consumer], counts: list[int],
                     wl: Workload, batch: int) -> tuple[Produced, list[ConsumerResult]]:
    """Both at once; each consumer expects what the producers will send to its partitions."""
    planned: dict[int, int] = {}
    for i, n in enumerate(counts):
        for p, k in plan.planned_per_partition(n, plan.producer_partitions(wl, i),
                                               batch).items():
            planned[p] = planned.get(p, 0) + k
    both = await asyncio.gather(
        *(timed(p.run(n)) for p, n in zip(producers, counts, strict=True)),
        *(
            c.run(expected=sum(planned.get(p, 0) for p in plan.consumer_partitions(wl, j)),
                  deadline_s=wl.consumer_timeout_s)
            for j, c in enumerate(consumers)
        ),
    )
    return (cast(Produced, list(both[: len(producers)])),
            cast(list[ConsumerResult], list(both[len(producers):])))


async def produce_only(clients: Clients, workload: Workload, cell: Cell, topic: str
                       ) -> RoleResult:
    """The production phase of a split session alone (a sink that stores nothing has nothing
    to consume: harness/perf_cluster.py's null-sink ceiling)."""
    producers = _producers(clients, workload, cell, topic)
    counts = _producer_counts(workload, cell)
    prod = await asyncio.gather(*(timed(p.run(n)) for p, n in zip(producers, counts,
                                                                    strict=True)))
    return production_role(list(prod))


async def run_session(
    clients: Clients,
    workload: Workload,
    cell: Cell,
    scenario: str,
    offset_commit: str,
    topic: str,
    group: str,
) -> SessionResult:
    """Run the scenario on ``topic`` (created by the caller, who reads counters around this
    call so topic creation is not charged to the data path) and verify."""
    wl = workload
    counts = _producer_counts(wl, cell)
    producers = _producers(clients, wl, cell, topic)
    verifier = Verifier()
    measured_from = time.perf_counter() + wl.warmup_s if wl.warmup_s else None
    consumers = _consumers(clients, wl, cell, topic, group, offset_commit, verifier)
    timeline = _follow_timeline(producers, consumers) if cell.rate is not None else None
    if wl.duration_s is not None:
        prod, cons = await _time_bounded(producers, consumers, counts, wl)
    elif scenario == "split":
        prod, cons = await _split(producers, consumers, counts, wl)
    elif scenario == "streaming":
        prod, cons = await _streaming(producers, consumers, counts, wl, cell.batch)
    else:
        raise ValueError(f"unknown scenario {scenario!r}")
    for r, _ in prod:
        verifier.expect(r.producer_id, r.acked)
    open_loop = None
    if cell.rate is None or timeline is None:
        production = production_role(prod)
    else:
        production, open_loop = open_loop_production(prod, cell.rate,
                                                     timeline.series(wl.warmup_s))
    return SessionResult(
        production=production,
        consumption=consumption_role(cons, measured_from),
        report=verifier.report(),
        messages=sum(r.records_sent for r, _ in prod),
        timed_out=any(c.timed_out for c in cons),
        open_loop=open_loop,
    )
