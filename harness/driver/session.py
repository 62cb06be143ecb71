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

Verification: every consumed record is checked (count, order within each partition, loss
against what was acknowledged, duplicates) by the merged verifiers of the consumers.

Where the clients run is the session's :class:`~harness.driver.load.Load`: one part in this
process, or one load worker per client host (``twinbench run --hosts``); every phase runs on
all parts at once and their outcomes are merged exactly (load.py). A run on one machine is the
one-part case of the same code.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.driver import plan
from harness.driver.load import (
    ConsumerOutcome,
    Job,
    Load,
    LoadPart,
    PartOutcome,
    ProducerOutcome,
    Running,
)
from harness.driver.plan import Cell
from harness.workload import Workload
from workloads.latency import LatencyRecorder
from workloads.payload import now_us
from workloads.timeline import Timeline
from workloads.verify import Verifier, VerifyReport


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


def _merge(name: str, recorders: Sequence[LatencyRecorder]) -> LatencyRecorder:
    out = LatencyRecorder(name)
    for r in recorders:
        out.merge(r)
    return out


def production_role(results: Sequence[ProducerOutcome]) -> RoleResult:
    return RoleResult(
        role="production",
        clients=len(results),
        records=sum(r.records_acked for r in results),
        wall_s=max(r.t_end for r in results) - min(r.t_start for r in results),
        latency=_merge("produce", [r.latency for r in results]),
        e2e=None,
        errors=sum(r.errors for r in results),
    )


def open_loop_production(results: Sequence[ProducerOutcome], target: float,
                         series: list[dict[str, Any]]) -> tuple[RoleResult, OpenLoopResult]:
    """The production row of an open-loop session: records due after the warm-up, over the
    time after it (each producer's schedule from the warm-up's end to its last send), with
    latency from the intended send time."""
    schedules = [r.open_loop for r in results if r.open_loop is not None]
    assert len(schedules) == len(results)
    wall = max(x.elapsed_s for x in schedules)
    sent = sum(x.sent_measured for x in schedules)
    intended = _merge("produce_intended", [x.intended for x in schedules])
    role = RoleResult(
        role="production",
        clients=len(results),
        # From the schedules, not the reports: those were taken when sending ended, before the
        # last window of requests was answered.
        records=sum(x.acked_measured for x in schedules),
        wall_s=wall,
        latency=intended,
        e2e=None,
        errors=sum(r.errors for r in results),
    )
    return role, OpenLoopResult(
        target_rate=target,
        achieved_rate=sent / wall if wall > 0 else 0.0,
        behind=any(x.behind for x in schedules),
        send_delay=_merge("send_delay", [x.send_delay for x in schedules]),
        intended=intended,
        series=series,
    )


def consumption_role(results: Sequence[ConsumerOutcome], measured_from: float | None = None
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
        errors=sum(r.errors for r in results),
    )


def _producer_counts(wl: Workload, cell: Cell) -> list[int]:
    """Records each producer sends: its share of ``messages``, or, time-bounded, an upper
    bound (the schedule stops the producer at duration_s; poisson: +6 sigma)."""
    if wl.duration_s is None:
        return plan.producer_counts(cell.messages or wl.messages, wl.producers)
    assert cell.rate is not None  # the workload parser's rules
    expect = cell.rate / wl.producers * wl.duration_s
    return [math.ceil(expect + 6 * math.sqrt(expect)) + cell.batch] * wl.producers


async def _concurrent(parts: Sequence[LoadPart], job: Job,
                      expected: Mapping[int, int] | None) -> list[PartOutcome]:
    """Producers and consumers at once on every part. Time-bounded (``expected`` None):
    consumers follow the topic until every producer everywhere is done and they have caught
    up."""
    running: list[Running] = []
    try:
        running = list(await asyncio.gather(*(p.start(job, expected) for p in parts)))
        produced = await asyncio.gather(*(r.produced() for r in running))
        if expected is None:
            await asyncio.gather(*(r.finish() for r in running))
        consumed = await asyncio.gather(*(r.consumed() for r in running))
    except BaseException:
        await asyncio.gather(*(r.abort() for r in running), return_exceptions=True)
        raise
    return [*produced, *consumed]


async def _split(parts: Sequence[LoadPart], job: Job, wl: Workload) -> list[PartOutcome]:
    """Producers to completion, then consumers read what was acknowledged."""
    produced = await asyncio.gather(*(p.produce(job) for p in parts))
    acked: dict[int, int] = {}
    for outcome in produced:
        for r in outcome.producers:
            for p, n in r.partition_records.items():
                acked[p] = acked.get(p, 0) + n
    expected = {j: sum(acked.get(p, 0) for p in plan.consumer_partitions(wl, j))
                for j in range(wl.consumers)}
    consumed = await asyncio.gather(*(p.consume(job, expected) for p in parts))
    return [*produced, *consumed]


def _planned(wl: Workload, counts: list[int], batch: int) -> dict[int, int]:
    """Streaming: what each consumer will get (the producers' round-robin of full batches)."""
    planned: dict[int, int] = {}
    for i, n in enumerate(counts):
        for p, k in plan.planned_per_partition(n, plan.producer_partitions(wl, i),
                                               batch).items():
            planned[p] = planned.get(p, 0) + k
    return {j: sum(planned.get(p, 0) for p in plan.consumer_partitions(wl, j))
            for j in range(wl.consumers)}


def _verifier(outcomes: Sequence[PartOutcome]) -> Verifier:
    """Every part's verifier merged, checked against every producer's acknowledgements."""
    verifiers = [o.verifier for o in outcomes if o.verifier is not None]
    verifier = verifiers[0] if verifiers else Verifier()
    for v in verifiers[1:]:
        verifier.merge(v)
    for o in outcomes:
        for r in o.producers:
            verifier.expect(r.producer_id, r.acked)
    return verifier


def _timeline(outcomes: Sequence[PartOutcome]) -> Timeline | None:
    timelines = [o.timeline for o in outcomes if o.timeline is not None]
    if not timelines:
        return None
    merged = timelines[0]
    for t in timelines[1:]:
        merged.merge(t)
    return merged


async def produce_only(load: Load, workload: Workload, cell: Cell, topic: str) -> RoleResult:
    """The production phase of a split session alone (a sink that stores nothing has nothing
    to consume: harness/bench/perf_cluster.py's null-sink ceiling)."""
    job = Job.of(workload, cell, topic, f"{topic}-group", "none",
                 _producer_counts(workload, cell), 0, None)
    produced = await asyncio.gather(*(p.produce(job) for p in load.parts))
    return production_role([r for o in produced for r in o.producers])


async def run_session(
    load: Load,
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
    measured_from = time.perf_counter() + wl.warmup_s if wl.warmup_s else None
    # Warm-up: records sent before this are left out of the end-to-end histogram.
    e2e_from = now_us() + round(wl.warmup_s * 1e6) if wl.warmup_s else 0
    job = Job.of(wl, cell, topic, group, offset_commit, counts, e2e_from,
                 time.perf_counter() if cell.rate is not None else None)
    if wl.duration_s is not None:
        outcomes = await _concurrent(load.parts, job, None)
    elif scenario == "split":
        outcomes = await _split(load.parts, job, wl)
    elif scenario == "streaming":
        outcomes = await _concurrent(load.parts, job, _planned(wl, counts, cell.batch))
    else:
        raise ValueError(f"unknown scenario {scenario!r}")
    producers = [r for o in outcomes for r in o.producers]
    consumers = [c for o in outcomes for c in o.consumers]
    verifier = _verifier(outcomes)
    timeline = _timeline(outcomes)
    open_loop = None
    if cell.rate is None or timeline is None:
        production = production_role(producers)
    else:
        production, open_loop = open_loop_production(producers, cell.rate,
                                                     timeline.series(wl.warmup_s))
    return SessionResult(
        production=production,
        consumption=consumption_role(consumers, measured_from),
        report=verifier.report(),
        messages=sum(r.records_sent for r in producers),
        timed_out=any(c.timed_out for c in consumers),
        open_loop=open_loop,
    )
