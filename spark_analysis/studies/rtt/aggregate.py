"""The rtt study's inputs: the rows of round-trip-time sweeps (format 6) from records.csv and
coordination.csv (Spark), and their sessions' counters (counters.csv, plain CSV)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_analysis.loader import RunInfo, check_header
from spark_analysis.rows import ok, ours
from spark_analysis.schema import COUNTER_COLUMNS, PAPER_SCENARIOS
from spark_analysis.storage import readable
from twinbench_common.errors import UserError

# What the round-trip-time tables read of a records.csv row, and of its coordination.csv row.
RTT_COLUMNS = (
    "run_id", "workload", "arch", "cell_id", "table", "scenario", "role", "msg_size", "batch",
    "try", "offset_commit", "metadata_check", "rtt_ms", "clients", "records", "wall_s", "rps",
)
RTT_COORDINATION_COLUMNS = ("rtt_measured_ms", "delayed_packets", "delay_cpu_s")


def rtt_sessions(records: DataFrame, coordination: DataFrame | None) -> pd.DataFrame:
    """Every verified row of a round-trip-time sweep (one per session and role, unlabelled
    sides only), with its session's delay-line columns: a few per rtt and try."""
    rows = records.where(F.col("rtt_ms").isNotNull() & ok() & (F.col("side") == "*")
                         & ours(records)
                         & F.col("scenario").isin(*PAPER_SCENARIOS)).select(*RTT_COLUMNS)
    if coordination is not None:
        coord = coordination.select("run_id", "cell_id", "scenario", "try",
                                    *RTT_COORDINATION_COLUMNS)
        rows = rows.join(coord, ["run_id", "cell_id", "scenario", "try"], "left")
    else:
        for c in RTT_COORDINATION_COLUMNS:
            rows = rows.withColumn(c, F.lit(None).cast("double"))
    return rows.toPandas()


def read_counters(runs: Sequence[RunInfo], cell_pattern: str) -> pd.DataFrame:
    """counters.csv rows of ``runs`` whose cell id matches ``cell_pattern`` (plain CSV: a few
    dozen rows per session; runs without the optional file contribute none)."""
    frames = []
    for run in runs:
        path = run.path / "counters.csv"
        if not path.is_file():
            continue
        check_header(path, COUNTER_COLUMNS)
        try:
            frame = pd.read_csv(readable(path), keep_default_na=True)
        except (OSError, ValueError) as exc:
            raise UserError(f"{path}: unreadable ({exc})") from None
        frames.append(frame[frame["cell_id"].astype(str).str.contains(cell_pattern)])
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
