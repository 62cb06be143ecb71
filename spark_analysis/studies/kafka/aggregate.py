"""The Real Kafka study's Spark passes, over the workloads where a real-Kafka architecture ran:
records/s per cell and architecture (our client's rows, verified, the paper's scenarios), and
the times of the fidelity table's events (topic creation from metadata.csv, failover from
faults.csv). Coordination and CPU per 1,000 records are the shared cost table's
(spark_analysis/cost.py)."""

from __future__ import annotations

import pandas as pd
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from spark_analysis.rows import ok
from spark_analysis.schema import CELL_KEY

# The architectures of real Kafka (harness/architectures/kafka.py), and the twin each stands
# beside: the zk twin stands in for Kafka on ZooKeeper; KRaft is the design DSBS is set against.
KAFKA_ZK = "kafka-zk"
KAFKA_KRAFT = "kafka-kraft"
REAL = (KAFKA_ZK, KAFKA_KRAFT)
# The events the fidelity table times, per source table: the metadata kinds that create topics
# (a CreateTopics round trip's median; until every broker lists the topics) and every fault
# case (detection; unavailability, the longest produce gap).
CREATION_KINDS = ("topic-storm", "partition-scale")
EVENT_MEASURES: dict[str, tuple[str, ...]] = {
    "metadata": ("create_p50_ms", "converge_s"),
    "faults": ("detection_s", "produce_gap_s"),
}
# One row of event_stats: where it comes from, which event, which size (metadata's n; 0 for a
# fault case), the measure, the architecture and its n/mean/sd over tries.
EVENT_COLUMNS = ["source", "workload", "case", "size", "measure", "arch", "n", "mean", "sd"]


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


def _event_pass(df: DataFrame, source: str, size: Column, where: Column) -> pd.DataFrame:
    """Per workload x case x size x arch x measure of ``source``: n/mean/sd over tries, in the
    workloads where real Kafka ran; long (EVENT_COLUMNS)."""
    workloads = _workloads(df)
    if not workloads:
        return pd.DataFrame(columns=EVENT_COLUMNS)
    measures = EVENT_MEASURES[source]
    aggs: list[Column] = []
    for m in measures:
        aggs += [F.count(m).alias(f"{m}__n"), F.avg(m).alias(f"{m}__mean"),
                 F.stddev_samp(m).alias(f"{m}__sd")]
    mine = F.col("workload").isin(*workloads) & (F.col("side") == "*") & where
    wide: pd.DataFrame = (df.where(mine).withColumn("size", size)
                          .groupBy("workload", "case", "size", "arch").agg(*aggs).toPandas())
    rows = [{"source": source, "workload": r["workload"], "case": r["case"],
             "size": int(r["size"]), "measure": m, "arch": r["arch"], "n": int(r[f"{m}__n"]),
             "mean": r[f"{m}__mean"], "sd": r[f"{m}__sd"]}
            for _, r in wide.iterrows() for m in measures if int(r[f"{m}__n"]) > 0]
    return pd.DataFrame(rows, columns=EVENT_COLUMNS)


def event_stats(metadata: DataFrame | None, faults: DataFrame | None) -> pd.DataFrame:
    """The fidelity table's events on every architecture, long (EVENT_COLUMNS): topic creation
    (metadata sessions of CREATION_KINDS, per size) and failover (every fault case)."""
    parts = []
    if metadata is not None:
        parts.append(_event_pass(metadata, "metadata", F.col("n"),
                                 F.col("kind").isin(*CREATION_KINDS)))
    if faults is not None:
        parts.append(_event_pass(faults, "faults", F.lit(0), F.lit(True)))
    parts = [p for p in parts if not p.empty]
    if not parts:
        return pd.DataFrame(columns=EVENT_COLUMNS)
    return pd.concat(parts, ignore_index=True)
