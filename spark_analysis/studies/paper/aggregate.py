"""The paper study's Spark passes: every aggregation over the (possibly large) paper-scenario
rows, collected as small pandas frames.

Each function is one grouped pass whose output has one row per cell (or per cell x try), so the
driver never holds raw rows. Replicate unit: one records.csv row, i.e. one (run, try); several
runs of the same architecture and side pool their tries. Rows whose ``status`` is not ``ok``
(verification failed: loss or reordering) are counted but excluded from every statistic.

The caller hands them the paper's rows only (rows.paper_only: split and streaming, closed loop,
plaintext): records, coordination and latency alike.
"""

from __future__ import annotations

import pandas as pd
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from spark_analysis import rows
from spark_analysis.rows import GROUP
from spark_analysis.schema import CELL_KEY, LATENCY_COLUMNS, METRICS

# Tries shown as columns in the paper-layout tables; more tries are still in n, mean and sd.
MAX_TRY_COLUMNS = 10


def cell_stats(records: DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One grouped pass per cell x arch x side. Returns (stats, latency): stats is long over the
    metrics (n, mean, sd of rps and kbps); latency holds the mean per-try latency percentiles,
    the largest maximum and the data-integrity counters."""
    ok = rows.ok()
    aggs: list[Column] = [
        F.count(F.lit(1)).alias("rows"),
        F.sum(F.when(~ok, 1).otherwise(0)).alias("failed_rows"),
        F.countDistinct("run_id").alias("runs"),
    ]
    for m in METRICS:
        v = F.when(ok, F.col(m))
        aggs += [F.count(v).alias(f"{m}__n"), F.avg(v).alias(f"{m}__mean"),
                 F.stddev_samp(v).alias(f"{m}__sd")]
    for c in LATENCY_COLUMNS:
        agg = F.max if c == "lat_max_us" else F.avg
        aggs.append(agg(F.when(ok, F.col(c))).alias(c))
    for c in ("lost", "duplicates", "out_of_order", "errors"):
        aggs.append(F.sum(F.col(c)).alias(c))
    # pandas ships no type stubs here: pyspark's own name for what toPandas returns is unknown.
    wide: pd.DataFrame = records.groupBy(*GROUP).agg(*aggs).toPandas()
    frames = []
    for m in METRICS:
        part = wide[[*GROUP, "rows", "failed_rows", "runs"]].copy()
        part["metric"] = m
        part["n"] = wide[f"{m}__n"].astype("int64")
        part["mean"] = wide[f"{m}__mean"].astype("float64")
        part["sd"] = wide[f"{m}__sd"].astype("float64")
        frames.append(part)
    long = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    latency = wide[[*GROUP, *LATENCY_COLUMNS, "lost", "duplicates", "out_of_order", "errors",
                    "rows", "failed_rows"]].copy()
    return long, latency


def per_try(records: DataFrame) -> pd.DataFrame:
    """Per cell x arch x side x try (try <= MAX_TRY_COLUMNS): the metric, averaged over runs
    when several runs of one side exist (with one run it is the try's own value)."""
    grouped: pd.DataFrame = (
        records.where(rows.ok() & (F.col("try") <= MAX_TRY_COLUMNS))
        .groupBy(*GROUP, "try")
        .agg(*(F.avg(m).alias(m) for m in METRICS))
        .toPandas()
    )
    return grouped.melt(id_vars=[*GROUP, "try"], value_vars=list(METRICS), var_name="metric",
                        value_name="value")


def latency_histograms(latency: DataFrame, records: DataFrame) -> pd.DataFrame:
    """The HDR histograms (base64) with their cell keys, arch and side, for merging in Python.
    One row per (run, try, cell, scenario, role, kind): small next to records.csv."""
    keys = records.select("run_id", "cell_id", "scenario", "role", "arch", "side",
                          *[k for k in CELL_KEY if k not in ("cell_id", "scenario", "role")]
                          ).distinct()
    joined = latency.where(F.col("histogram").isNotNull()).join(
        keys, ["run_id", "cell_id", "scenario", "role"], "inner")
    return joined.select(*GROUP, "kind", "try", "count", "histogram").toPandas()
