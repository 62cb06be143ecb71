"""The Real Kafka study's Spark pass, over the workloads where a real-Kafka architecture ran:
records/s per cell and architecture (our client's rows, verified, the paper's scenarios).
Coordination and CPU per 1,000 records are the shared cost table's (spark_analysis/cost.py)."""

from __future__ import annotations

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_analysis.rows import ok
from spark_analysis.schema import CELL_KEY

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
