"""The security study's Spark pass: per-cell statistics of the workloads that ran secured
clusters (format 8), plaintext and secured alike."""

from __future__ import annotations

import pandas as pd
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from spark_analysis.rows import GROUP, OPEN_LOOP_CELL, ok, ours
from spark_analysis.schema import PAPER_SCENARIOS

# What the security section summarises per cell (n, mean, sd over tries): throughput and the
# per-try latency percentiles.
SECURITY_METRICS = ("rps", "lat_p50_us", "lat_p99_us", "e2e_p50_us", "e2e_p99_us")


def security_stats(records: DataFrame) -> pd.DataFrame:
    """Per cell x arch x side x security, for the workloads that ran a secured cluster:
    n/mean/sd of SECURITY_METRICS over the ok tries (closed-loop paper scenarios), long."""
    secured = [r["workload"] for r in records.where(F.col("security") != "none")
               .select("workload").distinct().collect()]
    if not secured:
        return pd.DataFrame()
    passed = ok()
    rows = records.where(F.col("workload").isin(*secured) & ours(records)
                         & F.col("scenario").isin(*PAPER_SCENARIOS)
                         & ~F.col("cell_id").rlike(OPEN_LOOP_CELL))
    aggs: list[Column] = []
    for m in SECURITY_METRICS:
        v = F.when(passed, F.col(m))
        aggs += [F.count(v).alias(f"{m}__n"), F.avg(v).alias(f"{m}__mean"),
                 F.stddev_samp(v).alias(f"{m}__sd")]
    wide: pd.DataFrame = rows.groupBy(*GROUP, "security").agg(*aggs).toPandas()
    frames = []
    for m in SECURITY_METRICS:
        part = wide[[*GROUP, "security"]].copy()
        part["metric"] = m
        part["n"] = wide[f"{m}__n"].astype("int64")
        part["mean"] = wide[f"{m}__mean"].astype("float64")
        part["sd"] = wide[f"{m}__sd"].astype("float64")
        frames.append(part[part["n"] > 0])
    return pd.concat(frames, ignore_index=True)
