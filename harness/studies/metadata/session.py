"""One metadata session: a burst of metadata changes on a fresh cluster, and what it cost.

Where the coordination designs differ most is not the data path but metadata at scale (what
moved Kafka off ZooKeeper, KIP-500): how long a change takes to reach every broker, how many
coordination messages it takes, and what a large table costs at rest. Each case kind
(``harness.studies.metadata.KINDS``) runs at each size ``n``:

* topic-storm: ``n`` topics of the case's ``partitions`` each, created at once through
  ``harness.bench.create_latency.create_topics`` (one admin connection per broker, one request in
  flight on each, topic i to broker i mod B; on Kafka all B connections go to the controller
  Metadata names, as its admin client sends them);
* partition-scale: one topic of ``n`` partitions, one CreateTopics.

What is measured, from outside the brokers through the Kafka protocol (the same way on every
architecture), into metadata.csv (docs/result-format.md):

* create: from the first CreateTopics sent until the last is answered, and each request's
  round trip. A broker may stop waiting for the new partitions before they are all led (the
  zk broker waits 30 s) and answer REQUEST_TIMED_OUT; as in Kafka the creation goes on, so
  such answers are counted (``create_timeouts``) and convergence is still waited for;
* converge: from the first CreateTopics sent until every broker's Metadata lists every topic
  with all its partitions led (a watcher polls each broker every ``probe_ms``, asking only for
  the topics that broker still lacks, so the probe's own load shrinks as the change spreads);
* coordination messages the step took: the brokers' typed counters (``coordination_ops``:
  ZooKeeper requests the brokers made, gossip datagrams they sent) and ZooKeeper's own request
  count, read before the first request and after convergence (harness/driver/counters.py);
* Metadata response time for the case's topics once converged (``METADATA_SAMPLES`` requests
  to each broker, one at a time);
* memory: every broker's resident set size after the step (psutil);
* idle coordination traffic: counters read twice ``idle_s`` apart once everything is quiet,
  per second (SWIM probes, ZooKeeper pings and watches: what the table costs at rest).

A broker that refuses the change (a limit: POLICY_VIOLATION, INVALID_PARTITIONS) or a change
that does not converge within ``timeout_s`` ends the session with one error line; the run goes
on with the next session on fresh clusters.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from brokers.core.errors import KafkaError
from brokers.core.protocol.messages.metadata import (
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
)
from harness.bench.create_latency import create_topics
from harness.cluster.external import ExternalCluster
from harness.cluster.running import ProcessCluster
from harness.driver import counters, rows
from harness.driver.kinds import RunState
from harness.driver.load import Load
from harness.driver.plan import Cell, Epoch, Session, Side
from harness.runlog import RunLog
from harness.studies.metadata import METADATA_STUDY
from harness.studies.metadata.schema import SCENARIO, MetadataCase, MetadataPlan
from harness.workload import Workload
from workloads.cluster import METADATA, ClusterClient
from workloads.connection import BrokerConnection, ConnectionClosed, ConnectionConfig
from workloads.consumer import Consumer
from workloads.group import GroupMember, GroupMemberConfig

T = TypeVar("T")
# Metadata requests per broker that time the response once the change has converged.
METADATA_SAMPLES = 5
# OffsetCommits of every partition that time the commit (group-churn).
COMMIT_SAMPLES = 20
# Group members heartbeat this often: how soon they hear of a rebalance (Kafka's default is
# 3 s; shorter, so the rebalance and not the heartbeat period is what is timed, and long
# enough that 200 members do not saturate the load client).
MEMBER_HEARTBEAT_MS = 200
# metadata.csv's columns beyond the session's identity (twinbench_common/runlog/metadata.py).
ROW_COLUMNS = (
    "kind", "n", "topics", "partitions", "brokers", "create_s", "create_p50_ms",
    "create_max_ms", "create_timeouts", "converge_s", "leave_s", "metadata_p50_ms",
    "metadata_max_ms", "commit_p50_ms", "commit_max_ms", "commit_ops", *counters.COLUMNS,
    "rss_max_bytes", "rss_total_bytes", "idle_s", "idle_ops_per_s",
    "idle_coord_messages_per_s", "status",
)


@dataclass
class MetadataOutcome:
    # metadata.csv fields beyond the session's identity (docs/result-format.md).
    row: dict[str, Any]
    # Counter increases over the step (counters.csv), from before the first request until
    # convergence.
    delta: counters.Delta


# ---------------------------------------------------------------------------------------------
# What a Metadata answer says (pure)
# ---------------------------------------------------------------------------------------------


def complete_topics(resp: MetadataResponse, partitions: int) -> set[str]:
    """Topics the answer lists without error, with ``partitions`` partitions, each led."""
    out = set()
    for t in resp.topics:
        parts = [p for p in t.partitions if p.error_code == 0 and p.leader_id >= 0]
        if t.error_code == 0 and len(parts) == partitions:
            out.add(t.name)
    return out


def ms_summary(ms: Sequence[float]) -> tuple[float | None, float | None]:
    """(median, max) of round trips in ms; (None, None) without any."""
    if not ms:
        return None, None
    return statistics.median(ms), max(ms)


def per_second(value: int | float | None, seconds: float) -> float | None:
    return None if value is None or seconds <= 0 else value / seconds


# ---------------------------------------------------------------------------------------------
# Watching a change spread
# ---------------------------------------------------------------------------------------------


async def _metadata(conn: BrokerConnection, topics: Sequence[str]) -> MetadataResponse:
    version = conn.pick_version(METADATA, 1, 8)
    req = MetadataRequest(topics=[MetadataRequestTopic(name=t) for t in topics],
                          allow_auto_topic_creation=False)
    return MetadataResponse.decode(await conn.call(METADATA, version, req.encode(version)),
                                   version)


async def watch_convergence(conns: Sequence[BrokerConnection], names: Sequence[str],
                            partitions: int, period_s: float, deadline: float) -> list[float]:
    """Poll every broker until it lists every topic of ``names`` complete; per broker, the
    perf_counter time it first did. TimeoutError past ``deadline`` (perf_counter)."""
    async def one(conn: BrokerConnection) -> float:
        missing = set(names)
        while True:
            t_next = time.perf_counter() + period_s
            resp = await _metadata(conn, sorted(missing))
            missing -= complete_topics(resp, partitions)
            now = time.perf_counter()
            if not missing:
                return now
            if now > deadline:
                raise TimeoutError(f"{conn.host}:{conn.port} still lacks {len(missing)} of "
                                   f"{len(names)} topics")
            await asyncio.sleep(max(0.0, t_next - now))

    what = f"every broker listing {len(names)} topics"
    return list(await _by(deadline, what, asyncio.gather(*(one(c) for c in conns))))


async def _by(deadline: float, what: str, aw: Awaitable[T]) -> T:
    """``aw`` within ``deadline`` (perf_counter), however its requests fare: a broker that
    takes the whole request timeout to answer one probe must not stretch the step's bound."""
    try:
        return await asyncio.wait_for(aw, max(0.0, deadline - time.perf_counter()) + 1.0)
    except TimeoutError:
        raise TimeoutError(f"{what}: not reached within the timeout (timeout_s)") from None


async def time_metadata(conns: Sequence[BrokerConnection], names: Sequence[str],
                        samples: int = METADATA_SAMPLES) -> list[float]:
    """Round trips (ms) of Metadata for ``names``, ``samples`` per broker, one at a time."""
    out = []
    for conn in conns:
        for _ in range(samples):
            t0 = time.perf_counter()
            await _metadata(conn, names)
            out.append((time.perf_counter() - t0) * 1000)
    return out


# ---------------------------------------------------------------------------------------------
# The session
# ---------------------------------------------------------------------------------------------


async def _open(cluster: ProcessCluster, timeout_s: float) -> list[BrokerConnection]:
    """One connection per broker whose requests may take ``timeout_s`` (a creation of
    thousands of partitions takes minutes on zk)."""
    config = ConnectionConfig(client_id="twinbench-metadata", request_timeout_s=timeout_s)
    conns: list[BrokerConnection] = []
    try:
        for b in cluster.brokers:
            conns.append(await BrokerConnection.open(b.host, b.port, config))
    except BaseException:
        for c in conns:
            c.close()
        raise
    return conns


async def _admin(cluster: ProcessCluster, timeout_s: float) -> list[BrokerConnection]:
    """The admin connections a storm is sent through: one per broker, each to its broker, or,
    where the architecture takes admin requests at its controller (Kafka), each to the
    broker Metadata names as controller, as Kafka's admin client sends them. Either way as
    many requests are in flight at once."""
    conns = await _open(cluster, timeout_s)
    if not cluster.spec.architecture.admin_via_controller:
        return conns
    try:
        controller = (await _metadata(conns[0], [])).controller_id
        at = {b.node_id: b for b in cluster.brokers}.get(controller)
        if at is None:
            raise TimeoutError(f"Metadata names controller {controller}, not one of the "
                               "cluster's brokers")
        config = conns[0].config
        return [await BrokerConnection.open(at.host, at.port, config) for _ in conns]
    finally:
        for c in conns:
            c.close()


async def idle_traffic(cluster: ProcessCluster, seconds: float) -> dict[str, float | None]:
    """Coordination traffic per second over ``seconds`` with nothing asked of the cluster."""
    if seconds <= 0:
        return {"idle_s": None, "idle_ops_per_s": None, "idle_coord_messages_per_s": None}
    arch = cluster.spec.architecture
    before = await asyncio.to_thread(counters.read, cluster)
    t0 = time.perf_counter()
    # A measurement window, not a wait for an effect: traffic is counted over it.
    await asyncio.sleep(seconds)
    after = await asyncio.to_thread(counters.read, cluster)
    took = time.perf_counter() - t0
    d = counters.delta(arch, before, after).columns
    return {"idle_s": round(took, 6),
            "idle_ops_per_s": per_second(d["coordination_ops"], took),
            "idle_coord_messages_per_s": per_second(d["coord_messages"], took)}


async def run_metadata_session(cluster: ProcessCluster, plan: MetadataPlan, case: MetadataCase,
                               n: int, prefix: str) -> MetadataOutcome:
    """Run ``case`` at size ``n`` on ``cluster`` (fresh: no topics but what this creates;
    broker-join: started with one standby broker); topic and group names start with
    ``prefix``."""
    if case.kind == "group-churn":
        return await _group_churn(cluster, plan, case, n, prefix)
    if case.kind == "broker-join":
        return await _broker_join(cluster, plan, n)
    return await _topics(cluster, plan, case, n, prefix)


async def _topics(cluster: ProcessCluster, plan: MetadataPlan, case: MetadataCase, n: int,
                  prefix: str) -> MetadataOutcome:
    """topic-storm and partition-scale."""
    if case.kind == "topic-storm":
        names = [f"{prefix}-{i}" for i in range(n)]
        partitions = case.partitions
    else:
        names = [prefix]
        partitions = n
    # The client's limit sits above the brokers' own (timeout_ms), so a creation that takes
    # too long comes back as the broker's REQUEST_TIMED_OUT, not a dropped connection.
    admin = await _admin(cluster, plan.timeout_s + 10)
    probes = await _open(cluster, plan.timeout_s + 10)
    try:
        arch = cluster.spec.architecture
        before = await asyncio.to_thread(counters.read, cluster)
        t0 = time.perf_counter()
        watcher = asyncio.ensure_future(watch_convergence(
            probes, names, partitions, plan.probe_ms / 1000, t0 + plan.timeout_s))
        try:
            try:
                created = await asyncio.wait_for(
                    create_topics(admin, names, partitions, concurrent=True,
                                  timeout_ms=round(plan.timeout_s * 1000), timed_out_ok=True),
                    plan.timeout_s + 5)
            except TimeoutError:
                raise TimeoutError(f"the CreateTopics requests were not all answered within "
                                   f"timeout_s={plan.timeout_s:g}") from None
            t_created = time.perf_counter()
            seen = await watcher
        finally:
            if not watcher.done():
                watcher.cancel()
            await asyncio.gather(watcher, return_exceptions=True)
        after = await asyncio.to_thread(counters.read, cluster)
        delta = counters.delta(arch, before, after)
        create_p50, create_max = ms_summary([c.ms for c in created])
        meta_p50, meta_max = ms_summary(await time_metadata(probes, names))
        rss = cluster.rss_bytes()
        idle = await idle_traffic(cluster, plan.idle_s)
    finally:
        for c in [*admin, *probes]:
            c.close()
    row = {
        **_empty_row(),
        "kind": case.kind,
        "n": n,
        "topics": len(names),
        "partitions": partitions,
        "brokers": len(cluster.brokers),
        "create_s": round(t_created - t0, 6),
        "create_p50_ms": create_p50,
        "create_max_ms": create_max,
        "create_timeouts": sum(c.timed_out for c in created),
        "converge_s": round(max(seen) - t0, 6),
        "metadata_p50_ms": meta_p50,
        "metadata_max_ms": meta_max,
        **delta.columns,
        "rss_max_bytes": max(rss.values()) if rss else None,
        "rss_total_bytes": sum(rss.values()) if rss else None,
        **idle,
        "status": "ok",
    }
    return MetadataOutcome(row, delta)


# ---------------------------------------------------------------------------------------------
# Consumer-group churn
# ---------------------------------------------------------------------------------------------


def group_settled(members: Sequence[GroupMember], partitions: int) -> int | None:
    """The generation at which every member is stable and, together, they hold every
    partition exactly once; None while they are not there."""
    gens = {m.generation for m in members}
    if len(gens) != 1 or not all(m.transitions and m.transitions[-1][1] for m in members):
        return None
    held = sorted(p for m in members for p in m.assignment)
    return gens.pop() if held == list(range(partitions)) else None


async def _until_settled(members: Sequence[GroupMember], partitions: int, after_gen: int,
                         period_s: float, deadline: float, what: str) -> tuple[float, int]:
    """(perf_counter time, generation) when the members first settled past ``after_gen``."""
    while True:
        gen = group_settled(members, partitions)
        now = time.perf_counter()
        if gen is not None and gen > after_gen:
            return now, gen
        if now > deadline:
            raise TimeoutError(f"{what}: the group did not settle (every member with its "
                               f"assignment) within the timeout")
        await asyncio.sleep(period_s)


async def commit_cost(cluster: ProcessCluster, bootstrap: str, topic: str, group: str,
                      partitions: int, commits: int) -> dict[str, float | None]:
    """``commits`` OffsetCommits of every partition of ``topic`` (the measuring consumer's
    manual-assignment commit, workloads.consumer), one at a time: round trips and the
    coordination messages per commit."""
    client = await ClusterClient.open(bootstrap)
    try:
        consumer = Consumer(client, topic, list(range(partitions)), group=group,
                            commit="none")
        before = await asyncio.to_thread(counters.read, cluster)
        for k in range(1, commits + 1):
            consumer.positions = dict.fromkeys(range(partitions), k)
            await consumer.commit()
        after = await asyncio.to_thread(counters.read, cluster)
    finally:
        await client.close()
    d = counters.delta(cluster.spec.architecture, before, after).columns
    summary = consumer.commit_latency.summary()
    ops = d["coordination_ops"]
    return {"commit_p50_ms": summary["p50_us"] / 1000 if summary["count"] else None,
            "commit_max_ms": summary["max_us"] / 1000 if summary["count"] else None,
            "commit_ops": None if ops is None else ops / commits}


async def _group_churn(cluster: ProcessCluster, plan: MetadataPlan, case: MetadataCase,
                       n: int, prefix: str) -> MetadataOutcome:
    """n members join one group at once; then the later half leave; then the cost of
    committing every partition's offset."""
    partitions = case.partitions
    topic, group = prefix, f"{prefix}-group"
    admin = await _admin(cluster, plan.timeout_s + 10)
    conns = await _open(cluster, plan.timeout_s + 10)
    try:
        await create_topics(admin[:1], [topic], partitions, concurrent=False)
        await watch_convergence(conns, [topic], partitions, plan.probe_ms / 1000,
                                time.perf_counter() + plan.timeout_s)
    finally:
        for c in [*admin, *conns]:
            c.close()
    config = GroupMemberConfig(group=group, topic=topic, session_timeout_ms=30_000,
                               rebalance_timeout_ms=30_000, heartbeat_ms=MEMBER_HEARTBEAT_MS,
                               request_timeout_s=10.0)
    clients: list[ClusterClient] = []
    stops = [asyncio.Event() for _ in range(n)]
    tasks: list[asyncio.Future[None]] = []
    period = plan.probe_ms / 1000
    try:
        for _ in range(n):
            clients.append(await ClusterClient.open(cluster.bootstrap))
        members = [GroupMember(c, config) for c in clients]
        arch = cluster.spec.architecture
        before = await asyncio.to_thread(counters.read, cluster)
        t0 = time.perf_counter()
        tasks = [asyncio.ensure_future(m.run(stop)) for m, stop in zip(members, stops,
                                                                       strict=True)]
        joined, gen = await _until_settled(members, partitions, -1, period,
                                           t0 + plan.timeout_s, f"{n} members joining")
        after = await asyncio.to_thread(counters.read, cluster)
        delta = counters.delta(arch, before, after)
        leave_s = None
        stay = n - n // 2
        if stay < n:
            t_leave = time.perf_counter()
            for stop in stops[stay:]:
                stop.set()
            left, _ = await _until_settled(members[:stay], partitions, gen, period,
                                           t_leave + plan.timeout_s,
                                           f"{n - stay} of {n} members leaving")
            leave_s = round(left - t_leave, 6)
        commit = await commit_cost(cluster, cluster.bootstrap, topic, f"{prefix}-offsets",
                                   partitions, COMMIT_SAMPLES)
        rss = cluster.rss_bytes()
    finally:
        for stop in stops:
            stop.set()
        await asyncio.gather(*tasks, return_exceptions=True)
        for client in clients:
            await client.close()
    idle = await idle_traffic(cluster, plan.idle_s)
    row = {
        **_empty_row(),
        "kind": case.kind, "n": n, "topics": 1, "partitions": partitions,
        "brokers": len(cluster.brokers),
        "converge_s": round(joined - t0, 6),
        "leave_s": leave_s,
        **delta.columns,
        **commit,
        "rss_max_bytes": max(rss.values()) if rss else None,
        "rss_total_bytes": sum(rss.values()) if rss else None,
        **idle,
        "status": "ok",
    }
    return MetadataOutcome(row, delta)


# ---------------------------------------------------------------------------------------------
# A broker joins, then leaves
# ---------------------------------------------------------------------------------------------


async def _until_brokers(conns: Sequence[BrokerConnection], want: Callable[[set[int]], bool],
                         period_s: float, deadline: float, what: str) -> float:
    """perf_counter time when every broker of ``conns`` first answered Metadata with a broker
    list ``want`` accepts."""
    async def one(conn: BrokerConnection) -> float:
        while True:
            t_next = time.perf_counter() + period_s
            resp = await _metadata(conn, [])
            now = time.perf_counter()
            if want({b.node_id for b in resp.brokers}):
                return now
            if now > deadline:
                raise TimeoutError(f"{what}: {conn.host}:{conn.port} did not see it within "
                                   "the timeout")
            await asyncio.sleep(max(0.0, t_next - now))

    return max(await _by(deadline, what, asyncio.gather(*(one(c) for c in conns))))


async def _broker_join(cluster: ProcessCluster, plan: MetadataPlan, n: int
                       ) -> MetadataOutcome:
    """A cluster of n brokers (plus one standby): the standby starts and joins, then stops
    (SIGTERM) and leaves."""
    arch = cluster.spec.architecture
    period = plan.probe_ms / 1000
    old = await _open(cluster, plan.timeout_s + 10)
    new_conns: list[BrokerConnection] = []
    try:
        before = await asyncio.to_thread(counters.read, cluster)
        t0 = time.perf_counter()
        b = await asyncio.to_thread(cluster.join_standby, plan.timeout_s)
        t_listening = time.perf_counter()
        new_conns = [await BrokerConnection.open(b.host, b.port, old[0].config)]
        everyone = {x.node_id for x in cluster.brokers}
        joined = await _until_brokers([*old, *new_conns], lambda ids: ids >= everyone, period,
                                      t0 + plan.timeout_s, f"broker {b.node_id} joining")
        after = await asyncio.to_thread(counters.read, cluster)
        delta = counters.delta(arch, before, after)
        rss = cluster.rss_bytes()
        idle = await idle_traffic(cluster, plan.idle_s)
        for c in new_conns:
            c.close()
        t_leave = time.perf_counter()
        await asyncio.to_thread(cluster.retire_broker, b.node_id)
        left = await _until_brokers(old, lambda ids: b.node_id not in ids, period,
                                    t_leave + plan.timeout_s, f"broker {b.node_id} leaving")
    finally:
        for c in [*old, *new_conns]:
            c.close()
    row = {
        **_empty_row(),
        "kind": "broker-join", "n": n, "topics": 0, "partitions": 0,
        "brokers": n + 1,
        "create_s": round(t_listening - t0, 6),
        "converge_s": round(joined - t0, 6),
        "leave_s": round(left - t_leave, 6),
        **delta.columns,
        "rss_max_bytes": max(rss.values()) if rss else None,
        "rss_total_bytes": sum(rss.values()) if rss else None,
        **idle,
        "status": "ok",
    }
    return MetadataOutcome(row, delta)


def _empty_row() -> dict[str, Any]:
    return dict.fromkeys(ROW_COLUMNS)


# --- the metadata study's sessions in a run ------------------------------------------------------


def metadata_row(run_id: str, arch: str, s: Session, o: MetadataOutcome) -> dict[str, Any]:
    """metadata.csv row of one metadata session."""
    case: MetadataCase = s.case
    return {"run_id": run_id, "arch": arch, "label": s.side.label, "cell_id": s.cell.cell_id,
            "case": case.name, "try": s.try_no, **o.row}


class MetadataSessions:
    """The metadata study's session kind (harness/driver/kinds.py)."""

    def schedule(self, workload: Workload, sides: list[Side]) -> list[Epoch]:
        """Case, then size, then try, each (size, try) on fresh clusters (one epoch: the
        sides' clusters up side by side, A B on odd tries, B A on even ones)."""
        md = workload.study(METADATA_STUDY)
        assert md is not None
        epochs: list[Epoch] = []
        for mc in workload.metadata_check:
            group = [s for s in sides if s.metadata_check == mc]
            for case in md.cases:
                for n in case.sizes:
                    cell = Cell(case.name, 0, 0, n=n)
                    for try_no in range(1, workload.tries + 1):
                        order = group if try_no % 2 else group[::-1]
                        sessions = tuple(Session(side, cell, try_no, SCENARIO, case)
                                         for side in order)
                        if sessions:
                            epochs.append(Epoch(mc, sessions))
        return epochs

    def fresh_clusters(self, session: Session) -> tuple[int, int] | None:
        """A broker-join session's cluster has its size of brokers plus one standby."""
        case: MetadataCase = session.case
        if case.kind == "broker-join" and session.cell.n is not None:
            return session.cell.n, 1
        return None

    async def run(self, run: RunState, cluster: ProcessCluster | ExternalCluster, load: Load,
                  s: Session, log: RunLog, prefix: str) -> None:
        """A metadata session on fresh clusters: one metadata.csv row, its counters."""
        md = run.workload.study(METADATA_STUDY)
        # The metadata study refuses clusters twinbench did not start (its entry).
        assert md is not None and s.cell.n is not None and isinstance(cluster, ProcessCluster)
        t0 = time.monotonic()
        try:
            outcome = await run_metadata_session(cluster, md, s.case, s.cell.n, prefix)
        except (KafkaError, ConnectionClosed, OSError, TimeoutError) as exc:
            run.could_not_run(f"{s.cell.cell_id} try {s.try_no} ({s.side.arch})", cluster, exc)
            return
        run.add_timed(time.monotonic() - t0)
        log.add_rows("metadata", [metadata_row(log.run_id, s.side.arch, s, outcome)])
        log.add_rows("counters", rows.counter_rows(log.run_id, s.side.arch, s, outcome.delta))


SESSIONS = MetadataSessions()
