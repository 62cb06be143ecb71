"""The analysis job: run directories in, tables + figures + report out.

``compute`` loads and validates the runs and has every study (spark_analysis/studies/, in
registry order) do its Spark and pandas work; ``write_tables`` puts every study's tables on
disk as CSV; ``analyze`` adds the figures and the one Markdown report. The CLI (``twinbench
analyze``), the notebook, the regression check and the scale benchmark all call these
functions, so they cannot disagree.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_analysis import studies
from spark_analysis.analysis import Analysis, architectures_table, runs_table
from spark_analysis.archs import Archs
from spark_analysis.loader import RunLogs, load_runs, spark_input_errors
from spark_analysis.rows import OPEN_LOOP_CELL, paper_only, plaintext
from spark_analysis.study import Context, StudyResult
from twinbench_common.errors import UserError

__all__ = ["DEFAULT_OUT", "DEFAULT_RUNS", "Analysis", "analyze", "compute", "write_tables"]

DEFAULT_RUNS = Path("results/runs")
DEFAULT_OUT = Path("results/report")


def compute(spark: SparkSession, paths: Sequence[str | Path], reference: str | None = None
            ) -> Analysis:
    """Load and validate the runs and compute every study; every ratio is relative to
    ``reference`` (an architecture's name; default: the labels' baseline, zk)."""
    t0 = time.perf_counter()
    logs = load_runs(spark, paths)
    archs = Archs.from_manifests((r.manifest for r in logs.runs), reference)
    timings = {"validate_s": time.perf_counter() - t0}
    # The paper study reads the paper's scenarios several times over; fault sessions,
    # open-loop cells, rtt sweeps and secured clusters never reach them (rows.paper_only).
    records = paper_only(logs.records).persist(StorageLevel.MEMORY_AND_DISK)
    notes = list(logs.notes)
    context = Context(logs=logs, archs=archs, notes=notes, records=records)
    results: dict[str, StudyResult] = {}
    try:
        with spark_input_errors():
            for study in studies.every():
                t1 = time.perf_counter()
                results[study.name] = study.compute(context)
                timings[f"{study.name}_s"] = time.perf_counter() - t1
            if all(r.empty for r in results.values()) and not _measured(logs, records):
                raise UserError("the runs hold no measurements (every records.csv is "
                                "header-only, no run injected faults and none ran metadata "
                                "scenarios)")
    finally:
        records.unpersist()
    return Analysis(runs=logs.runs, notes=notes, archs=archs, results=results,
                    timings=timings)


def _measured(logs: RunLogs, records: DataFrame) -> bool:
    """Whether the runs hold any measurement at all: a row of the paper's scenarios, an
    open-loop row, a secured cluster's or an rtt sweep's, or any fault, rate-search or
    metadata session. Asked only when every study came back empty: A/A-only sessions of a
    study, say, are measurements its tables leave out, not an empty input."""
    if logs.faults is not None or logs.max_rate is not None or logs.metadata is not None:
        return True
    if not records.isEmpty():
        return True
    r = logs.records
    return not r.where((F.col("cell_id").rlike(OPEN_LOOP_CELL) & F.col("target_rate").isNotNull()
                        & plaintext(r))
                       | (F.col("security") != "none") | F.col("rtt_ms").isNotNull()).isEmpty()


def write_tables(analysis: Analysis, out: Path) -> list[Path]:
    """Every study's tables as CSV in ``out``, with the runs and architectures; returns the
    paths written."""
    out.mkdir(parents=True, exist_ok=True)
    frames: dict[str, pd.DataFrame] = {
        "runs": runs_table(analysis.runs),
        "architectures": architectures_table(analysis.archs),
    }
    for name, result in analysis.results.items():
        for table, frame in result.tables().items():
            if table in frames:
                raise RuntimeError(f"study {name} writes {table}.csv, which another wrote")
            frames[table] = frame
    written = []
    for name, frame in frames.items():
        path = out / f"{name}.csv"
        frame.to_csv(path, index=False)
        written.append(path)
    return written


def analyze(paths: Sequence[str | Path], out: Path, *, master: str = "local[*]",
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
        # matplotlib only when figures are drawn (`twinbench analyze --no-figures`).
        from spark_analysis import figures as figs

        t1 = time.perf_counter()
        drawn = figs.draw_all(analysis, out)
        analysis.timings["figures_s"] = time.perf_counter() - t1
    report.write_report(analysis, out, drawn)
    return analysis
