"""The Real Kafka study's Spark passes, over the workloads where a real-Kafka architecture ran:
records/s per cell and architecture (our client's rows, verified, the paper's scenarios), and
coordination messages and broker CPU per 1,000 records per cell and architecture."""

from __future__ import annotations

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_analysis.rows import ok
from spark_analysis.schema import CELL_KEY, COORD_KEY

# The architectures of real Kafka (harness/architectures/kafka.py), and the twin each stands
# beside: the zk twin stands in for Kafka on ZooKeeper; KRaft is the design DSBS is set against.
KAFKA_ZK = "kafka-zk"
KAFKA_KRAFT = "kafka-kraft"
REAL = (KAFKA_ZK, KAFKA_KRAFT)


def _workloads(records: DataFrame) -> list[str]:
    return [r["workload"] for r in records.where(F.col("arch").isin(*REAL))
            .select("workload").distinct().collect()]


def cell_stats(records: DataFrame) -> pd.DataFrame:
    """Per cell x arch: n/mean/sd of records/s over the verified tries, in the workloads where
    real Kafka ran (``records``: the paper's rows, rows.paper_only); empty when none did."""
    workloads = _workloads(records)
    if not workloads:
        return pd.DataFrame()
    rows = records.where(F.col("workload").isin(*workloads) & ok() & (F.col("side") == "*"))
    out: pd.DataFrame = (rows.groupBy(*CELL_KEY, "arch")
                         .agg(F.count("rps").alias("n"), F.avg("rps").alias("mean"),
                              F.stddev_samp("rps").alias("sd"))
                         .toPandas())
    return out


def cost(coordination: DataFrame | None, records: DataFrame) -> pd.DataFrame:
    """Per cell (both roles together) x arch: tries, coordination messages and bytes and
    broker CPU milliseconds per 1,000 records (each architecture's own measure of its
    coordination: ZooKeeper's requests served, gossip packets, the KRaft quorum's requests),
    in the workloads where real Kafka ran."""
    workloads = _workloads(records)
    if coordination is None or not workloads:
        return pd.DataFrame()
    # coordination.csv does not repeat the policies: they come from records.csv.
    mine = F.col("workload").isin(*workloads) & (F.col("side") == "*")
    cells = records.where(mine).select("run_id", "cell_id", "scenario", "try", "offset_commit",
                                       "metadata_check").distinct()
    joined = coordination.where(mine).join(cells, ["run_id", "cell_id", "scenario", "try"],
                                           "inner")
    per_k = 1000.0
    out: pd.DataFrame = (
        joined.groupBy(*COORD_KEY, "arch")
        .agg(F.count(F.lit(1)).alias("tries"),
             (F.sum("coord_messages") * per_k / F.sum("messages")).alias("coord_per_1k"),
             (F.sum("coord_bytes") * per_k / F.sum("messages")).alias("coord_bytes_per_1k"),
             (F.sum("broker_cpu_s") * per_k * 1000.0 / F.sum("messages"))
             .alias("broker_cpu_ms_per_1k"),
             (F.sum("service_cpu_s") * per_k * 1000.0 / F.sum("messages"))
             .alias("service_cpu_ms_per_1k"))
        .toPandas())
    return out
