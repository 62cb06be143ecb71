"""One fault session: paced streaming load while a fault case's schedule runs, and what each
architecture did about it.

Timeline of a session (t = 0 when production starts)::

    probe group joins and settles ─┐
    metadata monitor polls every broker ──────────────────────────────────────────────────┐
    producers, paced at `rate` ───[t=0 ........................ duration_s]                │
    consumers (static) ───────────[t=0 ...................................... drained]     │
    schedule ─────────────────────────── at_s: kill ....... at_s: restart ...              │

What is measured (docs/result-format.md, faults.csv), all from outside the brokers, through
the Kafka protocol only, so both architectures are measured the same way:

* detection: the metadata monitor asks every broker for Metadata every ``probe_ms``; from the
  first fault until every *surviving* broker's answer no longer lists the target.
* rejoin: from the closing step (restart, resume, heal, start-zookeeper) until every broker
  answers listing every broker and a leader for every partition.
* unavailability: the longest gap between two acknowledged produce requests on one partition
  (``workloads.timeline``), and the same for consumed records and for offset commits.
* group recovery: a probe group (``workloads.group``: members that join, sync and heartbeat,
  separate from the measuring consumers, whose static assignment keeps rebalances out of the
  throughput numbers) - how long after the fault until it is stable again.
* loss and duplicates: the session's ``Verifier``, against what producers had acknowledged.

Fault actions block (a restart waits for the broker to listen), so they run in a worker
thread: the event loop that drives the load never stalls on them.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from brokers.core.errors import KafkaError, UserError
from brokers.core.protocol.messages.metadata import (
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
)
from harness import architectures
from harness.cluster import fault_actions
from harness.cluster.external import ExternalCluster
from harness.cluster.running import ProcessCluster
from harness.driver import counters, plan, rows
from harness.driver.kinds import ClusterDied, RunState
from harness.driver.load import Clients, ConsumerOutcome, Load, ProducerOutcome, timed
from harness.driver.plan import Cell, Epoch, Session, Side
from harness.driver.session import SessionResult, consumption_role, production_role
from harness.kafka import jmx
from harness.runlog import RunLog
from harness.studies.faults import FAULT_STUDY
from harness.studies.faults.schema import SCENARIO, FaultCase
from harness.workload import Workload
from workloads.cluster import ClusterClient, ClusterClientConfig
from workloads.connection import BrokerConnection, ConnectionClosed, ConnectionConfig
from workloads.consumer import Consumer
from workloads.group import GroupMember, GroupMemberConfig, stable_intervals
from workloads.producer import Producer, ProducerResult
from workloads.timeline import Timeline
from workloads.verify import Verifier, VerifyReport

METADATA = 3
# How long the probe group may take to settle before production starts.
GROUP_SETTLE_S = 30.0


# ---------------------------------------------------------------------------------------------
# What the metadata monitor sees, and what it means (pure)
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Sample:
    # time.perf_counter() when the answer arrived (or the attempt failed).
    t: float
    node: int
    # False: no answer (connection refused or timed out).
    ok: bool
    # Node ids the broker listed as live.
    brokers: frozenset[int] = frozenset()
    # Leader per partition of the session's topic (-1: none); empty when unknown.
    leaders: tuple[int, ...] = ()


def detection_time(samples: Sequence[Sample], target: int, survivors: Sequence[int],
                   since: float) -> float | None:
    """Seconds from ``since`` until every survivor had answered without listing ``target``;
    None if some survivor never did."""
    first: dict[int, float] = {}
    for s in samples:
        if s.t >= since and s.ok and s.node in survivors and s.node not in first and (
                target not in s.brokers):
            first[s.node] = s.t
    if any(n not in first for n in survivors):
        return None
    return max(first.values()) - since if first else None


def rejoin_time(samples: Sequence[Sample], nodes: Sequence[int], partitions: int,
                since: float) -> float | None:
    """Seconds from ``since`` until every broker's latest answer lists every broker and a
    leader for each of ``partitions``; None if that never happened."""
    want = set(nodes)
    whole: dict[int, bool] = {}
    for s in sorted((s for s in samples if s.t >= since), key=lambda s: s.t):
        whole[s.node] = (s.ok and s.brokers >= want and len(s.leaders) == partitions
                         and all(x >= 0 for x in s.leaders))
        if len(whole) == len(want) and all(whole.values()):
            return s.t - since
    return None


def group_recovery(stable: Sequence[tuple[float, float]], fault_at: float,
                   closer_at: float | None, start: float, end: float
                   ) -> tuple[float, float]:
    """(recovery, unstable): seconds from the fault until the end of the last unstable stretch
    that began before the closer (0 if the fault never unsettled the group), and the total
    unstable time in [start, end]. ``stable`` are the group's stable intervals."""
    gaps, cursor = [], start
    for a, b in sorted(stable):
        if a > cursor:
            gaps.append((cursor, min(a, end)))
        cursor = max(cursor, b)
    if cursor < end:
        gaps.append((cursor, end))
    unstable = sum(b - a for a, b in gaps if b > a)
    horizon = closer_at if closer_at is not None else end
    hit = [b for a, b in gaps if b > fault_at and a < horizon]
    recovery = max(hit) - fault_at if hit else 0.0
    return max(recovery, 0.0), unstable


# ---------------------------------------------------------------------------------------------
# The monitor
# ---------------------------------------------------------------------------------------------


class MetadataMonitor:
    """Polls every broker's Metadata for one topic; keeps every answer as a ``Sample``."""

    def __init__(self, brokers: dict[int, tuple[str, int]], topic: str, period_s: float
                 ) -> None:
        self.brokers = brokers
        self.topic = topic
        self.period_s = period_s
        # A broker that does not answer within this long counts as unreachable for the sample.
        self.timeout_s = max(0.25, 4 * period_s)
        self.samples: list[Sample] = []

    async def run(self, stop: asyncio.Event) -> None:
        await asyncio.gather(*(self._poll(n, h, p, stop) for n, (h, p) in self.brokers.items()))

    async def _poll(self, node: int, host: str, port: int, stop: asyncio.Event) -> None:
        conn: BrokerConnection | None = None
        config = ConnectionConfig(client_id="twinbench-monitor", connect_timeout_s=self.timeout_s,
                                  request_timeout_s=None)
        while not stop.is_set():
            t_next = time.perf_counter() + self.period_s
            try:
                if conn is None or conn.closed:
                    conn = await BrokerConnection.open(host, port, config)
                version = conn.pick_version(METADATA, 1, 8)
                req = MetadataRequest(topics=[MetadataRequestTopic(name=self.topic)],
                                      allow_auto_topic_creation=False)
                body = await asyncio.wait_for(conn.call(METADATA, version, req.encode(version)),
                                              self.timeout_s)
                resp = MetadataResponse.decode(body, version)
                leaders: tuple[int, ...] = ()
                for t in resp.topics:
                    if t.name == self.topic and t.error_code == 0:
                        parts = sorted(t.partitions, key=lambda p: p.partition_index)
                        leaders = tuple(p.leader_id if p.error_code == 0 else -1 for p in parts)
                self.samples.append(Sample(time.perf_counter(), node, True,
                                           frozenset(b.node_id for b in resp.brokers), leaders))
            except (TimeoutError, OSError, ConnectionClosed, KafkaError):
                if conn is not None:
                    conn.close()  # an unanswered request blocks the connection for good
                conn = None
                self.samples.append(Sample(time.perf_counter(), node, False))
            delay = t_next - time.perf_counter()
            if delay > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), delay)
        if conn is not None:
            conn.close()


# ---------------------------------------------------------------------------------------------
# The schedule
# ---------------------------------------------------------------------------------------------


@dataclass
class Event:
    step: int
    action: str
    target: str
    node_id: int | None
    planned_s: float
    at_s: float
    took_s: float
    result: str
    # Whether the target was the controller / the consumers' group coordinator when hit.
    was_controller: bool | None = None
    was_coordinator: bool | None = None


async def _controller(admin: ClusterClient, cluster: ProcessCluster) -> int:
    """The cluster's controller: KRaft's active controller as its quorum says (a KRaft
    broker's Metadata names a random broker), else the one Metadata names (the twins, Kafka on
    ZooKeeper). The admin client's metadata must be fresh."""
    exporters = [(b.host, b.spec.metrics_port) for b in cluster.brokers
                 if b.spec is not None and b.spec.counters == "jmx-exporter"
                 and b.spec.metrics_port and b.state == "running"]
    if exporters:
        found = await asyncio.to_thread(jmx.active_controller, exporters)
        if found is not None:
            return found
    return admin.controller_id


def _voter(cluster: ProcessCluster, active: int) -> int:
    """The lowest-numbered quorum voter that is not the active controller."""
    voters = sorted(b.node_id for b in cluster.brokers
                    if b.spec is not None and b.spec.voter and b.node_id != active)
    if not voters:
        raise UserError("voter: the cluster has no quorum voter besides its active controller")
    return voters[0]


async def _resolve(target: str, admin: ClusterClient, topic: str, group: str,
                   cluster: ProcessCluster, controller: int) -> int:
    """A schedule's broker target -> node id, asked of the cluster through the protocol (and,
    for KRaft's controller, of its quorum: ``controller``, read with the metadata fresh)."""
    if target.isdigit():
        return int(target)
    if target == "coordinator":
        return await admin.coordinator_id(group)
    if target == "controller":
        node = controller
    elif target == "voter":
        node = _voter(cluster, controller)
    else:
        node = admin.leader_of(topic, int(target.split(":", 1)[1]))
    if node < 0:
        raise UserError(f"{target} is not known right now")
    return node


async def run_schedule(case: FaultCase, t0: float, cluster: ProcessCluster, admin: ClusterClient,
                       topic: str, group: str) -> list[Event]:
    events: list[Event] = []
    resolved: dict[str, int] = {}
    for i, step in enumerate(case.steps):
        delay = t0 + step.at_s - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        t = time.perf_counter()
        node: int | None = None
        roles: dict[str, bool | None] = {}
        try:
            if step.broker is not None:
                node = resolved.get(step.broker)
                if node is None:
                    # The controller read once per new target: it resolves the target and says
                    # whether the target was the controller (KRaft: a scrape of its quorum).
                    await admin.refresh_metadata([topic])
                    controller = await _controller(admin, cluster)
                    node = resolved[step.broker] = await _resolve(
                        step.broker, admin, topic, group, cluster, controller)
                    roles = await _roles(admin, node, group, controller)
            t = time.perf_counter()
            await asyncio.to_thread(fault_actions.apply, cluster, step.action, node, step.server)
            result = "ok"
        except (UserError, KafkaError, ConnectionClosed, OSError) as exc:
            result = f"{type(exc).__name__}: {exc}"
        events.append(Event(i, step.action, step.target, node, step.at_s, t - t0,
                            time.perf_counter() - t, result, **roles))
    return events


async def _roles(admin: ClusterClient, node: int, group: str, controller: int
                 ) -> dict[str, bool | None]:
    with contextlib.suppress(KafkaError, ConnectionClosed, OSError, TimeoutError):
        coordinator = await asyncio.wait_for(admin.coordinator_id(group), 2.0)
        return {"was_controller": controller == node,
                "was_coordinator": coordinator == node}
    return {}


# ---------------------------------------------------------------------------------------------
# The session
# ---------------------------------------------------------------------------------------------


@dataclass
class FaultOutcome:
    result: SessionResult
    # faults.csv fields beyond the session's identity (run_id, arch, label, cell, case, try).
    row: dict[str, Any]
    events: list[Event]
    timeline: list[tuple[float, int, int, int]]
    bucket_s: float
    samples: list[Sample] = field(default_factory=list)
    # fault_partitions.csv fields per partition (attribute()).
    partitions: list[dict[str, Any]] = field(default_factory=list)


async def _settle(members: list[GroupMember], timeout_s: float) -> None:
    deadline = time.perf_counter() + timeout_s
    while time.perf_counter() < deadline:
        gens = {m.generation for m in members}
        if all(m.transitions and m.transitions[-1][1] for m in members) and len(gens) == 1:
            return
        await asyncio.sleep(0.02)
    raise UserError(f"the probe group did not settle within {timeout_s:.0f} s")


async def run_fault_session(cluster: ProcessCluster, clients: Clients, workload: Workload,
                            cell: Cell, case: FaultCase, offset_commit: str, topic: str,
                            group: str) -> FaultOutcome:
    """Run one fault case on ``topic`` (created by the caller) and measure it."""
    wl = workload
    fp = wl.study(FAULT_STUDY)
    assert fp is not None
    counts = plan.producer_counts(max(wl.producers, round(fp.rate * fp.duration_s)),
                                  wl.producers)
    # The probe group is the one whose coordinator matters for group recovery: a schedule's
    # "coordinator" target and faults.csv's was_coordinator refer to it.
    probe = await _ProbeGroup.start(cluster.bootstrap, f"{group}-probe", topic, wl.consumers)
    stop_monitor = asyncio.Event()
    brokers = {b.node_id: (b.host, b.port) for b in cluster.brokers}
    monitor = MetadataMonitor(brokers, topic, fp.probe_ms / 1000)
    monitor_task = asyncio.ensure_future(monitor.run(stop_monitor))
    schedule_task: asyncio.Future[list[Event]] | None = None
    try:
        await _settle(probe.members, GROUP_SETTLE_S)
        t0 = time.perf_counter()
        timeline = Timeline(t0, fp.bucket_ms / 1000)
        verifier = Verifier()
        producers = _producers(clients, wl, cell, topic, timeline)
        consumers = _consumers(clients, wl, cell, topic, group, offset_commit, verifier,
                               timeline)
        schedule_task = asyncio.ensure_future(
            run_schedule(case, t0, cluster, clients.admin, topic, probe.group))
        cons_tasks = [asyncio.ensure_future(c.run(deadline_s=fp.duration_s + fp.drain_s,
                                                  follow=True)) for c in consumers]
        prod = await asyncio.gather(*(timed(p.run(n)) for p, n in zip(producers, counts,
                                                                        strict=True)))
        t_prod_end = time.perf_counter()
        # Everything acknowledged is in the logs now: read up to the high watermarks.
        for c in consumers:
            c.finish()
        events = await schedule_task
        probe.stop.set()
        cons = await asyncio.gather(*cons_tasks)
    finally:
        probe.stop.set()
        stop_monitor.set()
        if schedule_task is not None and not schedule_task.done():
            schedule_task.cancel()
        await asyncio.gather(*probe.tasks, monitor_task, return_exceptions=True)
        if schedule_task is not None:
            await asyncio.gather(schedule_task, return_exceptions=True)
        await probe.close()
    for r, _ in prod:
        verifier.expect(r.producer_id, r.acked)
    result = SessionResult(production=production_role([ProducerOutcome.of(r, t)
                                                        for r, t in prod]),
                           consumption=consumption_role([ConsumerOutcome.of(c) for c in cons]),
                           report=verifier.report(),
                           messages=sum(r.records_sent for r, _ in prod),
                           timed_out=any(c.timed_out for c in cons))
    partitions = attribute(result.report, leaderless_at_end(monitor.samples, wl.partitions))
    # When each partition's producing ended: its producer's last acknowledgement. A producer
    # that finished its records is done, not stalled, while a slower one still catches up
    # (raft-dc's producers ran past the load after a fault, and the first to finish showed
    # its idle tail as a 7 to 13 s "produce gap").
    produced_until = {p: end for i, (_, end) in enumerate(prod)
                      for p in plan.producer_partitions(wl, i)}
    row = _measure(monitor.samples, events, probe.members, timeline, result, cluster, wl, t0,
                   t_prod_end, [r for r, _ in prod], partitions, produced_until)
    return FaultOutcome(result, row, events, timeline.rows(), timeline.bucket_s,
                        monitor.samples, partitions)


class _ProbeGroup:
    """The probe group: one member per consumer, each on its own client connections, joining,
    syncing and heartbeating until ``stop`` is set."""

    def __init__(self, group: str) -> None:
        self.group = group
        self.stop = asyncio.Event()
        self.members: list[GroupMember] = []
        self.clusters: list[ClusterClient] = []
        self.tasks: list[asyncio.Future[Any]] = []

    @classmethod
    async def start(cls, bootstrap: str, group: str, topic: str, size: int) -> _ProbeGroup:
        probe = cls(group)
        config = ClusterClientConfig(bootstrap=tuple(bootstrap.split(",")),
                               connection=ConnectionConfig(client_id="twinbench-probe",
                                                           connect_timeout_s=1.0,
                                                           request_timeout_s=None),
                               retries=3, retry_backoff_ms=20, retry_backoff_max_ms=100)
        for _ in range(size):
            pc = await ClusterClient.open(bootstrap, config)
            probe.clusters.append(pc)
            probe.members.append(GroupMember(pc, GroupMemberConfig(group=group, topic=topic)))
        probe.tasks = [asyncio.ensure_future(m.run(probe.stop)) for m in probe.members]
        return probe

    async def close(self) -> None:
        for pc in self.clusters:
            await pc.close()


def _producers(clients: Clients, wl: Workload, cell: Cell, topic: str, timeline: Timeline
               ) -> list[Producer]:
    """The session's producers, paced to share the fault case's rate, acks on the timeline."""
    fp = wl.study(FAULT_STUDY)
    assert fp is not None
    producers = []
    for i in range(wl.producers):
        p = Producer(clients.producers[i], topic, msg_size=cell.msg_size, batch=cell.batch,
                     producer_id=i + 1, partitions=plan.producer_partitions(wl, i),
                     rate=fp.rate / wl.producers, acks=wl.acks)
        p.on_ack = timeline.produced
        producers.append(p)
    return producers


def _consumers(clients: Clients, wl: Workload, cell: Cell, topic: str, group: str,
               offset_commit: str, verifier: Verifier, timeline: Timeline) -> list[Consumer]:
    """The session's consumers (static assignment, one verifier), records and commits on the
    timeline."""
    consumers = []
    for j in range(wl.consumers):
        c = Consumer(clients.consumers[j], topic, plan.consumer_partitions(wl, j), group=group,
                     batch=cell.batch, msg_size=cell.msg_size,
                     commit=plan.commit_policy(offset_commit),
                     max_wait_ms=wl.fetch_max_wait_ms, verifier=verifier, consumer_id=j)
        c.on_records = timeline.consumed
        c.on_commit = timeline.committed
        consumers.append(c)
    return consumers


def _measure(samples: list[Sample], events: list[Event], members: list[GroupMember],
             timeline: Timeline, result: SessionResult, cluster: ProcessCluster, wl: Workload,
             t0: float, t_prod_end: float, prod: list[ProducerResult],
             partitions: list[dict[str, Any]],
             produced_until: Mapping[int, float]) -> dict[str, Any]:
    fp = wl.study(FAULT_STUDY)
    assert fp is not None
    nodes = [b.node_id for b in cluster.brokers]
    opener = next((e for e in events if fault_actions.ACTIONS[e.action].undo and e.result == "ok"),
                  None)
    closer = None
    if opener is not None:
        undo = fault_actions.ACTIONS[opener.action].undo
        closer = next((e for e in events if e.step > opener.step and e.action == undo
                       and e.result == "ok"), None)
    fault_at = t0 + opener.at_s if opener is not None else None
    closer_at = t0 + closer.at_s if closer is not None else None
    detection = None
    if opener is not None and opener.node_id is not None:
        survivors = [n for n in nodes if n != opener.node_id]
        detection = detection_time(samples, opener.node_id, survivors, t0 + opener.at_s)
    rejoin = (rejoin_time(samples, nodes, wl.partitions, closer_at)
              if closer_at is not None else None)
    produce_gap = timeline.longest_gap("produced", until=produced_until)
    consume_gap = timeline.longest_gap("consumed", until=t_prod_end)
    commit_gap = timeline.longest_gap("commits", until=t_prod_end)
    histories = [m.transitions for m in members]
    stable = stable_intervals(histories, t_prod_end)
    recovery = unstable = None
    if fault_at is not None:
        recovery, unstable = group_recovery(stable, fault_at, closer_at, t0, t_prod_end)
    report = result.report
    lost = sum(p["lost"] for p in partitions)
    target = next((e for e in events if e.node_id is not None), None)
    first = opener or (events[0] if events else None)

    def rel(x: float | None) -> float | None:
        return None if x is None else round(x, 6)

    return {
        "target_node": target.node_id if target else None,
        "target_role": _role_name(first) if first else None,
        "was_controller": target.was_controller if target else None,
        "was_coordinator": target.was_coordinator if target else None,
        "fault_at_s": rel(opener.at_s) if opener else None,
        "closer_at_s": rel(closer.at_s) if closer else None,
        "detection_s": rel(detection),
        "rejoin_s": rel(rejoin),
        "produce_gap_s": rel(produce_gap.seconds) if produce_gap else None,
        "produce_gap_partition": produce_gap.partition if produce_gap else None,
        "consume_gap_s": rel(consume_gap.seconds) if consume_gap else None,
        "commit_gap_s": rel(commit_gap.seconds) if commit_gap else None,
        "group_recovery_s": rel(recovery),
        "group_unstable_s": rel(unstable),
        # Settled stretches after the first: each began with a completed rebalance. (Counting
        # generations would miss a coordinator move, after which numbering can start again.)
        "group_rebalances": max(0, len(stable) - 1),
        "rate": fp.rate,
        "duration_s": fp.duration_s,
        "sent": result.messages,
        "acked": sum(r.records_acked for r in prod),
        "consumed": report.records,
        "lost": lost,
        "duplicates": report.duplicates,
        "unreachable": sum(p["unreachable"] for p in partitions),
        "produce_errors": sum(sum(r.errors.values()) for r in prod),
        "status": "failed" if lost or report.out_of_order or report.corrupt_batches else "ok",
    }


def leaderless_at_end(samples: Sequence[Sample], partitions: int) -> set[int]:
    """The partitions some broker, in its last answer, named no leader for (all of them when
    its answer did not cover the topic)."""
    last: dict[int, Sample] = {}
    for s in samples:
        if s.ok:
            last[s.node] = s
    out: set[int] = set()
    for s in last.values():
        out.update(p for p in range(partitions) if p >= len(s.leaders) or s.leaders[p] == -1)
    return out


def attribute(report: VerifyReport, leaderless: set[int]) -> list[dict[str, Any]]:
    """fault_partitions.csv's fields: each partition's acknowledged records that were never
    read are ``unreachable`` if it had no leader at the end (a broker that never came back
    holds them), ``lost`` if it had one. Per partition, so a leaderless partition does not hide
    another partition's loss. Partition -1 (254 and up, counted together) is leaderless if any
    of those is."""
    rows = []
    for p, part in sorted(report.by_partition.items()):
        gone = p in leaderless or (p == -1 and any(q >= 254 for q in leaderless))
        rows.append({"partition": p, "leader_at_end": not gone, "acked": part.expected,
                     "lost": 0 if gone else part.lost, "unreachable": part.lost if gone else 0,
                     "duplicates": part.duplicates})
    return rows


def _role_name(e: Event) -> str:
    t = e.target
    if t.isdigit():
        return f"broker:{t}"
    return t



# --- the fault study's sessions in a run --------------------------------------------------------


def fault_rows(run_id: str, arch: str, s: Session, o: FaultOutcome
               ) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]],
                          list[dict[str, Any]]]:
    """faults.csv row, fault_events.csv, timeline.csv and fault_partitions.csv rows of one
    fault session."""
    case: FaultCase = s.case
    key = {"run_id": run_id, "arch": arch, "label": s.side.label, "cell_id": s.cell.cell_id,
           "case": case.name, "try": s.try_no}
    row = {**key, **o.row, "offset_commit": s.side.offset_commit,
           "metadata_check": s.side.metadata_check}
    events = [{**key, "step": e.step, "action": e.action, "target": e.target,
               "node_id": e.node_id, "planned_s": e.planned_s, "at_s": round(e.at_s, 6),
               "took_s": round(e.took_s, 6), "result": e.result} for e in o.events]
    timeline = [{**key, "t_s": t, "bucket_s": o.bucket_s, "produced": p, "consumed": c,
                 "commits": k} for t, p, c, k in o.timeline]
    partitions = [{**key, **p} for p in o.partitions]
    return row, events, timeline, partitions


def _applies(case: FaultCase, arch: str) -> bool:
    """Whether a case has a counterpart on ``arch``: the services it acts on are there, a
    quorum if it kills a voter, and a controller that is a broker if it acts on the
    controller (dedicated controllers are a service's, acted on by its own actions)."""
    entry = architectures.get(arch)
    return (case.services <= set(entry.services) and (entry.quorum or not case.needs_quorum)
            and (entry.controller_is_a_broker or not case.targets_controller))


class FaultSessions:
    """The fault study's session kind (harness/driver/kinds.py)."""

    def schedule(self, workload: Workload, sides: list[Side]) -> list[Epoch]:
        """The paper's grid, one session per fault case instead of per scenario; a case that
        acts on a service, or on a quorum voter, has no session on an architecture without
        it."""
        fp = workload.study(FAULT_STUDY)
        assert fp is not None

        def sessions_of(cell: Cell, try_no: int, order: Sequence[Side]) -> list[Session]:
            out: list[Session] = []
            for case in fp.cases:
                # Named after the case, so no two cases' rows share a key anywhere in the run
                # log (records.csv has no case column).
                case_cell = Cell(case.name, cell.msg_size, cell.batch)
                out.extend(Session(side, case_cell, try_no, SCENARIO, case) for side in order
                           if _applies(case, side.arch))
            return out
        return plan.grid_schedule(workload, sides, sessions_of)

    def fresh_clusters(self, session: Session) -> tuple[int, int] | None:
        return None

    async def run(self, run: RunState, cluster: ProcessCluster | ExternalCluster, load: Load,
                  s: Session, log: RunLog, topic: str) -> None:
        """A fault session; the cluster is made whole again afterwards, whatever happened."""
        case: FaultCase = s.case
        # A fault study refuses clusters twinbench did not start and hosts (its entry), so
        # the cluster and the load are here.
        assert isinstance(cluster, ProcessCluster) and load.local is not None
        clients = load.local
        wl = run.workload
        arch = s.side.arch
        try:
            await clients.admin.create_topic(topic, wl.partitions, wl.replication_factor)
            before = counters.read(cluster)
            outcome = await run_fault_session(cluster, clients, wl, s.cell, case,
                                              s.side.offset_commit, topic, f"{topic}-group")
            after = counters.read(cluster)
        except (KafkaError, ConnectionClosed, OSError, TimeoutError, UserError) as exc:
            run.session_error(f"{s.cell.cell_id} {case.name} try {s.try_no}: could not run: "
                              f"{type(exc).__name__}: {exc}")
            return
        finally:
            try:
                await asyncio.to_thread(cluster.repair)
            except UserError as exc:
                raise ClusterDied(f"could not repair the {arch} cluster after "
                                  f"{case.name}: {exc}") from exc
        result = outcome.result
        run.add_timed(result.timed_s(s.scenario))
        run_id = log.run_id
        rec = rows.record_rows(run_id, arch, s, result)
        log.add_records(rec)
        coord = rows.coordination_row(run_id, arch, s, result,
                                      counters.delta(cluster.spec.architecture, before, after))
        log.add_coordination(coord)
        log.add_latency(rows.latency_entries(run_id, s, result))
        fault, events, timeline, partitions = fault_rows(run_id, arch, s, outcome)
        log.add_rows("faults", [fault])
        log.add_rows("fault_events", events)
        log.add_rows("fault_partitions", partitions)
        log.add_rows("timeline", timeline)
        run.summarise(s.side, rec, coord)
        if fault["status"] == "failed":
            run.data_lost(s, log, f"{s.cell.cell_id}/{case.name}",
                          f"DATA LOSS in {s.cell.cell_id}/{case.name} try {s.try_no}: "
                          f"lost={fault['lost']} (acked {fault['acked']}, consumed "
                          f"{fault['consumed']})")
        if any(e.result != "ok" for e in outcome.events):
            bad = "; ".join(f"{e.action} {e.target}: {e.result}" for e in outcome.events
                            if e.result != "ok")
            run.note(f"[yellow]{case.name} try {s.try_no}: {bad}[/]")


SESSIONS = FaultSessions()
