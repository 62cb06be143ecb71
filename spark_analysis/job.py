"""The analysis job: run directories in, tables + figures + report out.

``compute`` does the Spark work and returns small pandas tables; ``write`` puts them on disk as
CSV, figures and one Markdown report. The CLI (``twinbench analyze``), the notebook, the
regression check and the scale benchmark all call these two functions, so they cannot disagree.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
from pyspark import StorageLevel
from pyspark.sql import SparkSession

from brokers.core.errors import UserError
from spark_analysis import aggregate, paper, tables
from spark_analysis.loader import RunInfo, load_runs, spark_input_errors
from spark_analysis.schema import ARCHS

DEFAULT_RUNS = Path("results/runs")
DEFAULT_OUT = Path("results/report")


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


def compute(spark: SparkSession, paths: Sequence[Path]) -> Analysis:
    """Load and validate the runs, aggregate in Spark, and derive every table."""
    t0 = time.perf_counter()
    logs = load_runs(spark, paths)
    timings = {"validate_s": time.perf_counter() - t0}
    records = logs.records.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        with spark_input_errors():
            t1 = time.perf_counter()
            cell_stats, cell_latency = aggregate.cell_stats(records)
            timings["aggregate_cells_s"] = time.perf_counter() - t1
            if cell_stats.empty:
                raise UserError("the runs hold no measurements (every records.csv is header-only)")
            t1 = time.perf_counter()
            tries = aggregate.per_try(records)
            max_try = int(cell_stats.loc[cell_stats["metric"] == "rps", "n"].max())
            cost = (aggregate.coordination_cost(logs.coordination, records)
                    if logs.coordination is not None else pd.DataFrame())
            hists = (aggregate.latency_histograms(logs.latency, records)
                     if logs.latency is not None else pd.DataFrame())
            timings["aggregate_rest_s"] = time.perf_counter() - t1
    finally:
        records.unpersist()
    t1 = time.perf_counter()
    paper_long = paper.load_paper()
    ratios = paper.paper_ratios(paper_long)
    appendix = {}
    for table in tables.PAPER_TABLES:
        for arch in ARCHS:
            t = tables.appendix(tries, cell_stats, table, arch)
            if not t.empty:
                appendix[f"{table}_{arch}"] = t
    aa = tables.aa_calibration(cell_stats)
    analysis = Analysis(
        runs=logs.runs, notes=logs.notes, cell_stats=cell_stats, tries=tries,
        comparison=tables.comparison(cell_stats, ratios), appendix=appendix, aa=aa,
        noise=tables.noise_floor(aa), latency=tables.latency(cell_latency),
        latency_distribution=tables.latency_distribution(hists),
        coordination=tables.coordination(cost), paper=paper_long, max_try=max_try,
        input_rows=int(cell_stats.loc[cell_stats["metric"] == "rps", "rows"].sum()),
        timings=timings,
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


def write_tables(analysis: Analysis, out: Path) -> list[Path]:
    """Every table as CSV in ``out``; returns the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    frames: dict[str, pd.DataFrame] = {
        "runs": runs_table(analysis.runs),
        "cell_stats": analysis.cell_stats,
        "comparison": analysis.comparison,
        "latency": analysis.latency,
        "latency_distribution": analysis.latency_distribution,
        "coordination_cost": analysis.coordination,
        "aa_calibration": analysis.aa,
        "noise_floor": analysis.noise,
        **{f"appendix_{name}": t for name, t in analysis.appendix.items()},
    }
    written = []
    for name, frame in frames.items():
        path = out / f"{name}.csv"
        frame.to_csv(path, index=False)
        written.append(path)
    return written


def analyze(paths: Sequence[Path], out: Path, *, master: str = "local[*]",
            spark: SparkSession | None = None, figures: bool = True) -> Analysis:
    """The whole job. Reuses ``spark`` when given (tests), else starts one on ``master``."""
    from spark_analysis import report
    from spark_analysis.session import build_session

    session = spark or build_session(master)
    analysis = compute(session, paths)
    write_tables(analysis, out)
    drawn: list[Path] = []
    if figures:
        from spark_analysis import figures as figs

        t1 = time.perf_counter()
        drawn = figs.draw_all(analysis, out)
        analysis.timings["figures_s"] = time.perf_counter() - t1
    report.write_report(analysis, out, drawn)
    return analysis
