"""The latency study's Spark pass: the open-loop rows of records.csv (formats 3 and 4)."""

from __future__ import annotations

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_analysis.rows import OPEN_LOOP_CELL, plaintext

# What the latency-throughput curves read of an open-loop row.
OPEN_LOOP_COLUMNS = (
    "run_id", "workload", "side", "arch", "label", "cell_id", "table", "scenario", "role",
    "msg_size", "batch", "try", "offset_commit", "metadata_check", "status", "records", "rps",
    "target_rate", "achieved_rate", "behind", "send_delay_p99_us", "lat_p99_us",
    "e2e_p50_us", "e2e_p90_us", "e2e_p99_us", "e2e_p999_us", "e2e_max_us", "lost",
)


def open_loop(records: DataFrame) -> pd.DataFrame:
    """Every open-loop row of a plaintext cluster (one per session and role): a handful per
    rate and try, so the curves are computed in pandas (tables.py)."""
    return (records.where(F.col("cell_id").rlike(OPEN_LOOP_CELL)
                          & F.col("target_rate").isNotNull() & plaintext(records))
            .select(*OPEN_LOOP_COLUMNS).toPandas())
