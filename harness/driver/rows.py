"""A session's results as run-log rows (docs/result-format.md).

records.csv: one production row and one consumption row per session; counters.csv: one row
per counter of the counters contract per session. Loss, duplicates and
order are properties of what consumers saw, so those columns are empty on production rows;
``status`` is the cell's verdict and is the same on both rows.

Latency: production ``request`` = every Produce round trip; consumption ``request`` = every
Fetch and OffsetCommit round trip (the commit is the consumer's coordination cost, so it is in
the consumer's per-request latency); ``e2e`` = send-to-consume per record, absent for 8-byte
records, which have no room for a send timestamp.

Open-loop sessions (a target rate): the production row's latency is per record from its
intended send time, after the warm-up (what an operator's request sees; the per-request round
trip from the actual send stays in latency.jsonl as ``request``), ``target_rate``,
``achieved_rate``, ``send_delay_p99_us`` and ``behind`` say whether the client kept its
schedule; latency.jsonl adds the ``intended`` and ``send_delay`` histograms.
"""

from __future__ import annotations

from typing import Any

from harness.driver.counters import Delta
from harness.driver.plan import Session
from harness.driver.session import RoleResult, SessionResult
from workloads.latency import LatencyRecorder


def _common(run_id: str, arch: str, s: Session) -> dict[str, Any]:
    return {
        "run_id": run_id,
        "arch": arch,
        "label": s.side.label,
        "cell_id": s.cell.cell_id,
        "table": s.cell.table,
        "scenario": s.scenario,
        "msg_size": s.cell.msg_size,
        "batch": s.cell.batch,
        "try": s.try_no,
        "rtt_ms": s.cell.rtt_ms,
    }


def _lat(rec: LatencyRecorder, prefix: str, keys: tuple[str, ...]) -> dict[str, float | None]:
    summary = rec.summary()
    return {f"{prefix}_{k}_us": (float(summary[f"{k}_us"]) if summary["count"] else None)
            for k in keys}


def _role_row(base: dict[str, Any], role: RoleResult, msg_size: int) -> dict[str, Any]:
    rps = role.records / role.wall_s if role.wall_s > 0 else None
    return {
        **base,
        "role": role.role,
        "clients": role.clients,
        "records": role.records,
        "payload_bytes": role.records * msg_size,
        "wall_s": role.wall_s,
        "rps": rps,
        "kbps": rps * msg_size / 1000 if rps is not None else None,
        **_lat(role.latency, "lat", ("p50", "p90", "p99", "p999", "max")),
        "errors": role.errors,
    }


def record_rows(run_id: str, arch: str, s: Session, r: SessionResult) -> list[dict[str, Any]]:
    base = {**_common(run_id, arch, s), "offset_commit": s.side.offset_commit,
            "metadata_check": s.side.metadata_check, "client": s.side.client,
            "status": "failed" if r.failed else "ok"}
    prod = _role_row(base, r.production, s.cell.msg_size)
    cons = _role_row(base, r.consumption, s.cell.msg_size)
    assert r.consumption.e2e is not None
    cons.update(_lat(r.consumption.e2e, "e2e", ("p50", "p99", "p90", "p999", "max")))
    ol = r.open_loop
    if ol is not None:
        for row in (prod, cons):
            row.update(target_rate=ol.target_rate, behind=ol.behind)
        prod.update(achieved_rate=ol.achieved_rate,
                    **_lat(ol.send_delay, "send_delay", ("p99",)))
    cons.update(duplicates=r.report.duplicates, lost=r.report.lost,
                out_of_order=r.report.out_of_order)
    return [prod, cons]


def coordination_row(run_id: str, arch: str, s: Session, r: SessionResult,
                     d: Delta, machine: tuple[float | None, float | None] = (None, None)
                     ) -> dict[str, Any]:
    """``machine``: (background_cpu, steal) over the session (harness/conditions.py)."""
    return {
        **_common(run_id, arch, s),
        "messages": r.messages,
        **d.columns,
        **d.delay,
        "background_cpu": machine[0],
        "steal": machine[1],
    }


def counter_rows(run_id: str, arch: str, s: Session, d: Delta) -> list[dict[str, Any]]:
    """counters.csv: every counter's increase over the session, summed over brokers (source
    ``coordinator``: the architecture's class of the counters contract; ``broker``:
    ``BrokerCounters``; a service's name, e.g. ``zookeeper``: what the service counted itself,
    which the regression sets against what the brokers say they sent it; ``jmx``: real
    Kafka's own counters, harness/kafka/jmx.py). An unknown increase
    (a broker or a server restarted) is an empty field."""
    key = {"run_id": run_id, "arch": arch, "label": s.side.label, "cell_id": s.cell.cell_id,
           "scenario": s.scenario, "try": s.try_no}
    sources = [("coordinator", d.coordinator), ("broker", d.broker),
               *sorted(d.services.items()), *([("jmx", d.exported)] if d.exported else [])]
    return [{**key, "source": source, "counter": name, "increase": value}
            for source, values in sources
            for name, value in sorted(values.items())]


def latency_entries(run_id: str, s: Session, r: SessionResult) -> list[dict[str, Any]]:
    out = []
    pairs: list[tuple[str, str, LatencyRecorder | None]] = [
        ("production", "request", r.production.latency),
        ("consumption", "request", r.consumption.latency),
        ("consumption", "e2e", r.consumption.e2e),
    ]
    if r.open_loop is not None:
        pairs += [("production", "intended", r.open_loop.intended),
                  ("production", "send_delay", r.open_loop.send_delay)]
    for role, kind, rec in pairs:
        if rec is None or rec.count == 0:
            continue
        out.append({
            "run_id": run_id,
            "cell_id": s.cell.cell_id,
            "scenario": s.scenario,
            "role": role,
            "try": s.try_no,
            "kind": kind,
            "unit": "us",
            "count": rec.count,
            "histogram": rec.encode(),
        })
    return out


def session_keys(run_id: str, arch: str, s: Session) -> dict[str, Any]:
    """What identifies a session in series.csv and metrics.csv."""
    return {"run_id": run_id, "arch": arch, "label": s.side.label, "cell_id": s.cell.cell_id,
            "scenario": s.scenario, "try": s.try_no}


def series_rows(run_id: str, arch: str, s: Session, r: SessionResult) -> list[dict[str, Any]]:
    """series.csv rows of an open-loop session (none for a closed-loop one)."""
    if r.open_loop is None:
        return []
    key = session_keys(run_id, arch, s)
    return [{**key, **bucket} for bucket in r.open_loop.series]
