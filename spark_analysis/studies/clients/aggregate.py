"""The clients study's Spark pass: n, mean and sd of records/s per cell, architecture and load
client, in the workloads where Kafka's perf tools ran."""

from __future__ import annotations

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_analysis.rows import OPEN_LOOP_CELL, RTT_CELL, ok, plaintext
from spark_analysis.schema import CELL_KEY, PAPER_SCENARIOS

TOOLS = "kafka-perf"
OURS = "twinbench"


def client_stats(records: DataFrame) -> pd.DataFrame:
    """Per cell x arch x client: n/mean/sd of rps over the verified tries; empty when no
    workload ran the tools."""
    workloads = [r["workload"] for r in records.where(F.col("client") == TOOLS)
                 .select("workload").distinct().collect()]
    if not workloads:
        return pd.DataFrame()
    rows = records.where(F.col("workload").isin(*workloads) & ok() & plaintext(records)
                         & (F.col("side") == "*") & F.col("scenario").isin(*PAPER_SCENARIOS)
                         & ~F.col("cell_id").rlike(OPEN_LOOP_CELL)
                         & ~F.col("cell_id").rlike(RTT_CELL))
    out: pd.DataFrame = (rows.groupBy(*CELL_KEY, "arch", "client")
                         .agg(F.count("rps").alias("n"), F.avg("rps").alias("mean"),
                              F.stddev_samp("rps").alias("sd"))
                         .toPandas())
    return out
