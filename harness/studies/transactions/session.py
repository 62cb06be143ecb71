"""The exactly-once study's sessions in a run: their plan, how one runs, its row.

Plan: the paper's grid (each workload cell, try after try, on one cluster per architecture
unless ``restart`` asks for more), each try's sessions one per case (``TransactionsPlan.cases``:
shape x transaction size, transactional then plain) and per side, the sides alternating case by
case and their order flipping every try (A B, B A): the harness's own interleaving.

A session: fresh topics (and, for ctp, a fresh input filled before the timed part), the
clients of client.py in a worker thread, the coordination counters read just before the timed
part and once its output is readable, one transactions.csv row and its counters.csv rows. A
session whose reader did not get every record exactly once fails its cell, as data loss does.
A fresh cluster first runs the workload's ``warmup_sessions`` unrecorded copies of its first
session (ZooKeeper's JVM compiles its hot paths over its first thousands of requests).
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import confluent_kafka as ck

from brokers.core.errors import KafkaError
from harness.cluster.external import ExternalCluster
from harness.cluster.running import ProcessCluster
from harness.driver import counters, plan, rows
from harness.driver.kinds import RunState
from harness.driver.load import Load
from harness.driver.plan import Cell, Epoch, Session, Side
from harness.runlog import RunLog
from harness.studies.transactions import TRANSACTIONS_STUDY
from harness.studies.transactions.client import (
    ClientConfig,
    Outcome,
    SessionFailed,
    TxnSession,
    percentile,
)
from harness.studies.transactions.schema import SCENARIO, TransactionsPlan, TxnCase
from harness.workload import Workload
from twinbench_common.runlog.transactions import REQUESTS
from workloads.cluster import ClusterClient
from workloads.connection import ConnectionClosed

# What a session may raise that ends it alone (one error line), not the run.
SESSION_ERRORS = (KafkaError, ConnectionClosed, OSError, TimeoutError, ck.KafkaException,
                  SessionFailed)


@dataclass(frozen=True)
class Measured:
    # What the clients did and what the output's reader found.
    outcome: Outcome
    # Counter increases over the timed part until the output was readable.
    delta: counters.Delta


def client_config(bootstrap: str, workload: Workload, txn: TransactionsPlan, cell: Cell,
                  case: TxnCase, topic: str) -> ClientConfig:
    """The clients of one session on ``topic`` (the output; ctp reads ``<topic>-in``)."""
    return ClientConfig(
        bootstrap=bootstrap, output=topic,
        source=f"{topic}-in" if case.shape == "ctp" else None, group=f"{topic}-group",
        transactional_id=f"{topic}-txn" if case.transactional else None,
        partitions=workload.partitions, msg_size=cell.msg_size, batch=cell.batch,
        batches_per_unit=case.batches, records=workload.messages,
        linger_ms=txn.linger_ms, retry_backoff_ms=txn.retry_backoff_ms,
        fetch_max_wait_ms=workload.fetch_max_wait_ms,
        transaction_timeout_ms=txn.transaction_timeout_ms,
        deadline=time.monotonic() + txn.timeout_s)


async def measure(cluster: ProcessCluster, admin: ClusterClient, workload: Workload,
                  txn: TransactionsPlan, cell: Cell, case: TxnCase, topic: str) -> Measured:
    """One session on fresh topics named from ``topic``."""
    config = client_config(cluster.bootstrap, workload, txn, cell, case, topic)
    for name in filter(None, (config.source, config.output)):
        await admin.create_topic(name, workload.partitions,
                                         workload.replication_factor)
    session = TxnSession(config)
    try:
        await asyncio.to_thread(session.prepare)
        before = await asyncio.to_thread(counters.read, cluster)
        await asyncio.to_thread(session.run)
        outcome = await asyncio.to_thread(session.drain)
        after = await asyncio.to_thread(counters.read, cluster)
    finally:
        # Also on Ctrl-C: the worker thread's loops see it and give up.
        session.stop.set()
        await asyncio.to_thread(session.close)
    return Measured(outcome, counters.delta(cluster.spec.architecture, before, after))


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 3)


def transactions_row(run_id: str, arch: str, s: Session, m: Measured, partitions: int
                     ) -> dict[str, Any]:
    """transactions.csv row of one session (docs/result-format.md)."""
    case: TxnCase = s.case
    o = m.outcome
    ends = o.unit_end_s
    # Request counts: an API no broker served in the session is 0, unless the brokers'
    # counters could not be read at all.
    known = bool(m.delta.broker)
    requests = {r: (m.delta.broker.get(f"kafka_requests_{r}", 0) if known else None)
                for r in REQUESTS}
    return {
        "run_id": run_id, "arch": arch, "label": s.side.label, "cell_id": s.cell.cell_id,
        "case": case.name, "try": s.try_no, "shape": case.shape, "txn_batches": case.batches,
        "transactional": case.transactional, "msg_size": s.cell.msg_size,
        "batch": s.cell.batch, "partitions": partitions, "records": o.records,
        "wall_s": round(o.wall_s, 6),
        "rps": o.records / o.wall_s if o.wall_s > 0 else None,
        "units": o.units, "transactions": o.transactions, "aborts": o.aborts,
        "offset_commits": o.offset_commits,
        "commit_p50_ms": _ms(percentile(ends, 0.5)), "commit_p99_ms": _ms(percentile(ends, 0.99)),
        "commit_max_ms": _ms(max(ends) if ends else None),
        "commit_mean_ms": _ms(sum(ends) / len(ends) if ends else None),
        "read": o.read, "read_s": None if o.read_s is None else round(o.read_s, 6),
        "duplicates": o.duplicates, "missing": o.missing,
        **m.delta.columns, **requests,
        "status": "ok" if o.exactly_once else "failed",
    }


class TransactionsSessions:
    """The exactly-once study's session kind (harness/driver/kinds.py)."""

    def __init__(self) -> None:
        # Clusters whose warm-up sessions ran (a fresh cluster object per epoch).
        self._warm: weakref.WeakSet[ProcessCluster] = weakref.WeakSet()

    def schedule(self, workload: Workload, sides: list[Side]) -> list[Epoch]:
        txn = workload.study(TRANSACTIONS_STUDY)
        assert txn is not None
        cases = txn.cases()

        def sessions_of(cell: Cell, try_no: int, order: Sequence[Side]) -> list[Session]:
            # Named after the case, so no two cases' rows share a cell id.
            return [Session(side, Cell(case.name, cell.msg_size, cell.batch), try_no,
                            SCENARIO, case) for case in cases for side in order]
        return plan.grid_schedule(workload, sides, sessions_of)

    def fresh_clusters(self, session: Session) -> tuple[int, int] | None:
        return None

    async def run(self, run: RunState, cluster: ProcessCluster | ExternalCluster, load: Load,
                  s: Session, log: RunLog, topic: str) -> None:
        wl = run.workload
        txn = wl.study(TRANSACTIONS_STUDY)
        # The study refuses clusters twinbench did not start and hosts (its entry).
        assert txn is not None and isinstance(cluster, ProcessCluster)
        arch = s.side.arch
        if cluster not in self._warm:
            self._warm.add(cluster)
            for i in range(1, wl.warmup_sessions + 1):
                run.note(f"[{arch}] warm-up {i}/{wl.warmup_sessions}: {s.cell.cell_id}")
                try:
                    await measure(cluster, load.admin, wl, txn, s.cell, s.case,
                                  f"{topic}-warmup{i}")
                except SESSION_ERRORS as exc:
                    run.could_not_run(f"{arch} warm-up {i}", cluster, exc)
                    return
        try:
            m = await measure(cluster, load.admin, wl, txn, s.cell, s.case, topic)
        except SESSION_ERRORS as exc:
            run.could_not_run(f"{s.cell.cell_id} try {s.try_no} ({arch})", cluster, exc)
            return
        run.add_timed(m.outcome.wall_s)
        row = transactions_row(log.run_id, arch, s, m, wl.partitions)
        log.add_rows("transactions", [row])
        log.add_rows("counters", rows.counter_rows(log.run_id, arch, s, m.delta))
        if row["status"] == "failed":
            o = m.outcome
            run.data_lost(s, log, s.cell.cell_id,
                          f"NOT EXACTLY ONCE in {s.cell.cell_id} try {s.try_no} ({arch}): "
                          f"{o.missing} of {wl.messages} records never read, "
                          f"{o.duplicates} read twice")


SESSIONS = TransactionsSessions()
