"""The analysis job: run directories in, tables + figures + report out.

``compute`` does the Spark work and returns small pandas tables; ``write`` puts them on disk as
CSV, figures and one Markdown report. The CLI (``twinbench analyze``), the notebook, the
regression check and the scale benchmark all call these two functions, so they cannot disagree.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
from pyspark import StorageLevel
from pyspark.sql import SparkSession

from spark_analysis import (
    aggregate,
    fault_tables,
    latency_tables,
    metadata_tables,
    paper,
    qos_tables,
    rtt_tables,
    security_tables,
    tables,
)
from spark_analysis.archs import DEFAULT, Archs
from spark_analysis.loader import RunInfo, RunLogs, load_runs, spark_input_errors
from spark_analysis.schema import AA_LABELS
from twinbench_common.errors import UserError

DEFAULT_RUNS = Path("results/runs")
DEFAULT_OUT = Path("results/report")


def _empty() -> pd.DataFrame:
    return pd.DataFrame()


@dataclass
class FaultTables:
    """The fault sessions' tables (format 2); all empty when the runs injected no faults.

    ``sessions``, ``timeline`` and ``events`` are per session / bucket / action (the figures'
    input, also written as CSV so the figures can be redrawn without Spark); ``stats``,
    ``outcomes`` and ``comparison`` are fault_tables' summaries."""

    sessions: pd.DataFrame = field(default_factory=_empty)
    stats: pd.DataFrame = field(default_factory=_empty)
    outcomes: pd.DataFrame = field(default_factory=_empty)
    comparison: pd.DataFrame = field(default_factory=_empty)
    timeline: pd.DataFrame = field(default_factory=_empty)
    events: pd.DataFrame = field(default_factory=_empty)

    @property
    def empty(self) -> bool:
        return self.sessions.empty


@dataclass
class MetadataTables:
    """The metadata sessions' tables (format 5); all empty when the runs had none.

    ``stats``: long, per case x size x arch x measure with the 95% CI over tries (the figures'
    input); ``comparison``: ZooKeeper beside DSBS with the ratio; ``scaling``: the log-log
    slope of every measure against the size."""

    stats: pd.DataFrame = field(default_factory=_empty)
    comparison: pd.DataFrame = field(default_factory=_empty)
    scaling: pd.DataFrame = field(default_factory=_empty)

    @property
    def empty(self) -> bool:
        return self.stats.empty


@dataclass
class QosTables:
    """The sampled-metrics tables (format 8); all empty when no run sampled them."""

    sessions: pd.DataFrame = field(default_factory=_empty)
    stats: pd.DataFrame = field(default_factory=_empty)
    table_ii: pd.DataFrame = field(default_factory=_empty)
    paper: pd.DataFrame = field(default_factory=_empty)

    @property
    def empty(self) -> bool:
        return self.sessions.empty


@dataclass
class RttTables:
    """Round-trip-time sweeps (format 6); all empty when the runs had none.

    ``sessions``: one row per session x role with its round trips (the model's input);
    ``stats``: per sweep point x rtt x arch, records/s with its CI and the model's prediction;
    ``comparison``: ZooKeeper beside DSBS per point and rtt, measured and modelled ratios."""

    sessions: pd.DataFrame = field(default_factory=_empty)
    stats: pd.DataFrame = field(default_factory=_empty)
    comparison: pd.DataFrame = field(default_factory=_empty)

    @property
    def empty(self) -> bool:
        return self.sessions.empty


def compute_qos(logs: RunLogs, archs: Archs = DEFAULT) -> QosTables:
    """The QoS tables; no Spark job at all when no run sampled the brokers' metrics."""
    if logs.metrics is None:
        return QosTables()
    per_session = qos_tables.sessions(aggregate.metric_spans(logs.metrics, qos_tables.SERIES))
    long = qos_tables.stats_long(per_session, archs)
    paper_values = qos_tables.load_paper()
    return QosTables(sessions=per_session, stats=long, paper=paper_values,
                     table_ii=qos_tables.table_ii(long, paper_values, archs))


@dataclass
class Analysis:
    runs: list[RunInfo]
    notes: list[str]
    cell_stats: pd.DataFrame
    tries: pd.DataFrame
    comparison: pd.DataFrame
    appendix: dict[str, pd.DataFrame]
    aa: pd.DataFrame
    noise: pd.DataFrame
    latency: pd.DataFrame
    latency_distribution: pd.DataFrame
    coordination: pd.DataFrame
    paper: pd.DataFrame
    max_try: int
    input_rows: int
    timings: dict[str, float] = field(default_factory=dict)
    faults: FaultTables = field(default_factory=FaultTables)
    metadata: MetadataTables = field(default_factory=MetadataTables)
    # The architectures shown and how (from the run manifests, spark_analysis/archs.py).
    archs: Archs = DEFAULT
    # Open-loop sessions (latency_tables.py): latency-throughput points, and the maximum
    # sustainable rates of rate searches; empty without open-loop runs.
    latency_curves: pd.DataFrame = field(default_factory=_empty)
    max_rates: pd.DataFrame = field(default_factory=_empty)
    # Workloads with secured clusters (security_tables.py): secured over plaintext per
    # architecture, and the architectures compared at each security level; empty without.
    security_cost: pd.DataFrame = field(default_factory=_empty)
    security_between: pd.DataFrame = field(default_factory=_empty)
    # Sessions that sampled the brokers' metrics (qos_tables.py): every session's QoS
    # measures, their statistics, and the Kafka + Prometheus paper's Table II layout.
    qos: QosTables = field(default_factory=lambda: QosTables())
    rtt: RttTables = field(default_factory=RttTables)


def compute_faults(logs: RunLogs, notes: list[str], archs: Archs = DEFAULT) -> FaultTables:
    """The fault tables; no Spark job at all when no run has a fault session."""
    if logs.faults is None:
        if logs.timeline is not None or logs.fault_events is not None:
            notes.append("timeline.csv or fault_events.csv has rows but no faults.csv does; "
                         "without sessions there is nothing to summarise")
        return FaultTables()
    wide = aggregate.fault_stats(logs.faults)
    sessions = fault_tables.with_keys(aggregate.fault_sessions(logs.faults))
    timeline = (fault_tables.with_policies(aggregate.fault_timeline(logs.timeline), sessions)
                if logs.timeline is not None else pd.DataFrame())
    events = (fault_tables.with_policies(aggregate.fault_events(logs.fault_events), sessions)
              if logs.fault_events is not None else pd.DataFrame())
    aa = int(sessions["side"].isin(AA_LABELS).sum())
    if aa:
        notes.append(f"{aa} fault sessions of A/A calibration runs (labels A/B) are left out of "
                     "the fault tables")
    stats_long = fault_tables.fault_stats(fault_tables.with_keys(wide), archs)
    return FaultTables(
        sessions=sessions[sessions["side"] == "*"].drop(columns=["side"]),
        stats=stats_long,
        outcomes=fault_tables.fault_outcomes(fault_tables.with_keys(wide), archs),
        comparison=fault_tables.fault_comparison(stats_long, archs),
        timeline=timeline[timeline["side"] == "*"].drop(columns=["side"])
        if not timeline.empty else timeline,
        events=events[events["side"] == "*"].drop(columns=["side"])
        if not events.empty else events,
    )


def compute_metadata(logs: RunLogs, notes: list[str], archs: Archs = DEFAULT
                     ) -> MetadataTables:
    """The metadata tables; no Spark job at all when no run has a metadata session."""
    if logs.metadata is None:
        return MetadataTables()
    wide = aggregate.metadata_stats(logs.metadata)
    aa = int(wide.loc[wide["side"] != "*", "sessions"].sum()) if not wide.empty else 0
    if aa:
        notes.append(f"{aa} metadata sessions of A/A calibration runs (labels A/B) are left "
                     "out of the metadata tables")
    long = metadata_tables.metadata_stats(wide, archs)
    return MetadataTables(stats=long,
                          comparison=metadata_tables.metadata_comparison(long, archs),
                          scaling=metadata_tables.scaling(long, archs))


def read_counters(runs: Sequence[RunInfo], cell_pattern: str) -> pd.DataFrame:
    """counters.csv rows of ``runs`` whose cell id matches ``cell_pattern`` (plain CSV: a few
    dozen rows per session; runs without the optional file contribute none)."""
    from spark_analysis.loader import check_header
    from spark_analysis.schema import COUNTER_COLUMNS

    frames = []
    for run in runs:
        path = run.path / "counters.csv"
        if not path.is_file():
            continue
        check_header(path, COUNTER_COLUMNS)
        try:
            frame = pd.read_csv(path, keep_default_na=True)
        except (OSError, ValueError) as exc:
            raise UserError(f"{path}: unreadable ({exc})") from None
        frames.append(frame[frame["cell_id"].astype(str).str.contains(cell_pattern)])
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def compute_rtt(logs: RunLogs, archs: Archs = DEFAULT) -> RttTables:
    """The round-trip-time tables; one small Spark job when no run swept rtt."""
    sessions = aggregate.rtt_sessions(logs.records, logs.coordination)
    if sessions.empty:
        return RttTables()
    ids = set(sessions["run_id"])
    counters = read_counters([r for r in logs.runs if r.run_id in ids], aggregate.RTT_CELL)
    with_trips = rtt_tables.round_trips(sessions, counters)
    st = rtt_tables.predict(rtt_tables.rtt_stats(with_trips))
    return RttTables(with_trips, st, rtt_tables.rtt_comparison(st, archs))


def compute(spark: SparkSession, paths: Sequence[Path], reference: str | None = None
            ) -> Analysis:
    """Load and validate the runs, aggregate in Spark, and derive every table; every ratio is
    relative to ``reference`` (an architecture's name; default: the labels' baseline, zk)."""
    t0 = time.perf_counter()
    logs = load_runs(spark, paths)
    archs = Archs.from_manifests((r.manifest for r in logs.runs), reference)
    timings = {"validate_s": time.perf_counter() - t0}
    # The paper's tables, figures, comparison, calibration and regression are about the split
    # and streaming scenarios only: fault sessions (scenario `faults`) never reach them.
    records = aggregate.paper_only(logs.records).persist(StorageLevel.MEMORY_AND_DISK)
    notes = list(logs.notes)
    secured = [r for r in logs.runs if r.security != "none"]
    if secured:
        levels = ", ".join(sorted({r.security for r in secured}))
        notes.append(f"{len(secured)} runs measured secured clusters ({levels}); their rows are "
                     "in the Security section only, beside the plaintext runs of the same "
                     "workloads")
    try:
        with spark_input_errors():
            t1 = time.perf_counter()
            cell_stats, cell_latency = aggregate.cell_stats(records)
            # Open-loop rows (a handful per rate): collected once, for the check below and the
            # latency curves.
            open_rows = aggregate.open_loop(logs.records)
            timings["aggregate_cells_s"] = time.perf_counter() - t1
            secured_only = cell_stats.empty and bool(
                logs.records.where("security != 'none'").limit(1).count())
            if (cell_stats.empty and logs.faults is None and logs.max_rate is None
                    and logs.metadata is None and open_rows.empty and not secured_only
                    and logs.records.where(logs.records["rtt_ms"].isNotNull()).isEmpty()):
                raise UserError("the runs hold no measurements (every records.csv is "
                                "header-only, no run injected faults and none ran metadata "
                                "scenarios)")
            t1 = time.perf_counter()
            tries = aggregate.per_try(records)
            rps_n = cell_stats.loc[cell_stats["metric"] == "rps", "n"]
            max_try = int(rps_n.max()) if not rps_n.empty else 0
            coordination = (aggregate.paper_only(logs.coordination)
                            if logs.coordination is not None else None)
            cost = (aggregate.coordination_cost(coordination, records)
                    if coordination is not None else pd.DataFrame())
            hists = (aggregate.latency_histograms(aggregate.paper_only(logs.latency), records)
                     if logs.latency is not None else pd.DataFrame())
            timings["aggregate_rest_s"] = time.perf_counter() - t1
            t1 = time.perf_counter()
            faults = compute_faults(logs, notes, archs)
            timings["aggregate_faults_s"] = time.perf_counter() - t1
            t1 = time.perf_counter()
            curves = latency_tables.curves(open_rows, archs)
            found = (logs.max_rate.toPandas() if logs.max_rate is not None
                     else pd.DataFrame())
            maxima = latency_tables.max_rates(found, archs)
            timings["aggregate_open_loop_s"] = time.perf_counter() - t1
            t1 = time.perf_counter()
            metadata = compute_metadata(logs, notes, archs)
            timings["aggregate_metadata_s"] = time.perf_counter() - t1
            t1 = time.perf_counter()
            security_long = aggregate.security_stats(logs.records)
            timings["aggregate_security_s"] = time.perf_counter() - t1
            t1 = time.perf_counter()
            qos = compute_qos(logs, archs)
            timings["aggregate_qos_s"] = time.perf_counter() - t1
            t1 = time.perf_counter()
            rtt = compute_rtt(logs, archs)
            timings["aggregate_rtt_s"] = time.perf_counter() - t1
    finally:
        records.unpersist()
    t1 = time.perf_counter()
    paper_long = paper.load_paper()
    ratios = paper.paper_ratios(paper_long)
    appendix = {}
    for table in tables.PAPER_TABLES:
        for arch in archs.names:
            t = tables.appendix(tries, cell_stats, table, arch)
            if not t.empty:
                appendix[f"{table}_{arch}"] = t
    aa = tables.aa_calibration(cell_stats)
    analysis = Analysis(
        runs=logs.runs, notes=notes, cell_stats=cell_stats, tries=tries,
        comparison=tables.comparison(cell_stats, ratios, archs), appendix=appendix, aa=aa,
        noise=tables.noise_floor(aa), latency=tables.latency(cell_latency),
        latency_distribution=tables.latency_distribution(hists),
        coordination=tables.coordination(cost), paper=paper_long, max_try=max_try,
        input_rows=int(cell_stats.loc[cell_stats["metric"] == "rps", "rows"].sum()),
        timings=timings, faults=faults, archs=archs, latency_curves=curves,
        max_rates=maxima, metadata=metadata, rtt=rtt,
        security_cost=security_tables.cost(security_long),
        security_between=security_tables.between(security_long, archs), qos=qos,
    )
    timings["tables_s"] = time.perf_counter() - t1
    return analysis


def runs_table(runs: Sequence[RunInfo]) -> pd.DataFrame:
    rows = []
    for r in runs:
        m = r.manifest
        rows.append({
            "run_id": r.run_id, "arch": r.arch, "label": r.label, "workload": r.workload,
            "started_at": m.get("started_at"), "incomplete": r.incomplete,
            "failed_cells": " ".join(r.failed_cells),
            "git_commit": (m.get("git") or {}).get("commit"),
            "cpu_model": (m.get("host") or {}).get("cpu_model"),
            "cpu_count": (m.get("host") or {}).get("cpu_count"),
            "policies": " ".join(f"{k}={v}" for k, v in (m.get("policies") or {}).items()),
        })
    return pd.DataFrame(rows)


def architectures_table(archs: Archs) -> pd.DataFrame:
    """How the report shows each architecture (figures.read_tables reads it back)."""
    return pd.DataFrame([dataclasses.asdict(a) for a in archs])


def write_tables(analysis: Analysis, out: Path) -> list[Path]:
    """Every table as CSV in ``out``; returns the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    frames: dict[str, pd.DataFrame] = {
        "runs": runs_table(analysis.runs),
        "architectures": architectures_table(analysis.archs),
        "cell_stats": analysis.cell_stats,
        "comparison": analysis.comparison,
        "latency": analysis.latency,
        "latency_distribution": analysis.latency_distribution,
        "coordination_cost": analysis.coordination,
        "aa_calibration": analysis.aa,
        "noise_floor": analysis.noise,
        **{f"appendix_{name}": t for name, t in analysis.appendix.items()},
    }
    if not analysis.faults.empty:
        # Only when there were fault sessions: a run without faults gets the same files as
        # before format 2.
        f = analysis.faults
        frames.update({"fault_sessions": f.sessions, "fault_stats": f.stats,
                       "fault_outcomes": f.outcomes, "fault_comparison": f.comparison,
                       "fault_timeline": f.timeline, "fault_events": f.events})
    if not analysis.metadata.empty:
        m = analysis.metadata
        frames.update({"metadata_stats": m.stats, "metadata_comparison": m.comparison,
                       "metadata_scaling": m.scaling})
    if not analysis.qos.empty:
        q = analysis.qos
        frames.update({"qos_sessions": q.sessions, "qos_stats": q.stats,
                       "qos_table_ii": q.table_ii})
    if not analysis.security_cost.empty or not analysis.security_between.empty:
        frames.update({"security_cost": analysis.security_cost,
                       "security_between": analysis.security_between})
    if not analysis.rtt.empty:
        r = analysis.rtt
        frames.update({"rtt_sessions": r.sessions, "rtt_stats": r.stats,
                       "rtt_comparison": r.comparison})
    if not analysis.latency_curves.empty or not analysis.max_rates.empty:
        frames.update({"latency_curves": analysis.latency_curves,
                       "max_rates": analysis.max_rates})
    written = []
    for name, frame in frames.items():
        path = out / f"{name}.csv"
        frame.to_csv(path, index=False)
        written.append(path)
    return written


def analyze(paths: Sequence[Path], out: Path, *, master: str = "local[*]",
            spark: SparkSession | None = None, figures: bool = True,
            reference: str | None = None) -> Analysis:
    """The whole job. Reuses ``spark`` when given (tests), else starts one on ``master``."""
    from spark_analysis import report
    from spark_analysis.session import build_session

    session = spark or build_session(master)
    analysis = compute(session, paths, reference)
    write_tables(analysis, out)
    drawn: list[Path] = []
    if figures:
        from spark_analysis import figures as figs

        t1 = time.perf_counter()
        drawn = figs.draw_all(analysis, out)
        analysis.timings["figures_s"] = time.perf_counter() - t1
    report.write_report(analysis, out, drawn)
    return analysis
