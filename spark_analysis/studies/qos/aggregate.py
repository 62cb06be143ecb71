"""The QoS study's Spark pass over the brokers' sampled metrics (metrics.csv, format 8)."""

from __future__ import annotations

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

METRIC_SPAN_KEY = ["run_id", "workload", "security", "side", "arch", "label", "cell_id",
                   "scenario", "try", "node_id", "metric", "labels"]


def metric_spans(metrics: DataFrame, series: tuple[str, ...]) -> pd.DataFrame:
    """Per session x broker x series (of ``series`` only): the first and the last sample by
    time, the largest value, and when the first and last were taken. A handful of rows per
    session and broker however long the session sampled."""
    return (metrics.where(F.col("metric").isin(*series))
            .withColumn("labels", F.coalesce(F.col("labels"), F.lit("")))
            .groupBy(*METRIC_SPAN_KEY)
            .agg(F.min("t_s").alias("t_first"), F.max("t_s").alias("t_last"),
                 F.min_by("value", "t_s").alias("first"), F.max_by("value", "t_s").alias("last"),
                 F.max("value").alias("max"))
            .toPandas())
