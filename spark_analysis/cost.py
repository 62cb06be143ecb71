"""Coordination cost per 1,000 records, shared by the studies that report it (the paper's
coordination table, the Real Kafka section).

``coordination_cost``: per cell (without role: coordination.csv measures a try of a cell, both
roles together) x arch x side, from coordination.csv joined with records.csv's policies (which
coordination.csv does not repeat): tries, messages, every traffic column of ``PER_1K`` per
1,000 messages, the mean broker and service CPU seconds per try, and the brokers' CPU
milliseconds per 1,000 messages.
"""

from __future__ import annotations

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_analysis.schema import COORD_KEY, PER_1K

PER_K = 1000.0


def coordination_cost(coordination: DataFrame, records: DataFrame) -> pd.DataFrame:
    policies = records.select("run_id", "cell_id", "scenario", "try", "offset_commit",
                              "metadata_check").distinct()
    joined = coordination.join(policies, ["run_id", "cell_id", "scenario", "try"], "left")
    out: pd.DataFrame = (
        joined.groupBy(*COORD_KEY, "arch", "side")
        .agg(
            F.count(F.lit(1)).alias("tries"),
            F.sum("messages").alias("messages"),
            *((F.sum(c) * PER_K / F.sum("messages")).alias(per) for c, per in PER_1K.items()),
            F.avg("broker_cpu_s").alias("broker_cpu_s"),
            F.avg("service_cpu_s").alias("service_cpu_s"),
            # Seconds to milliseconds, then per 1,000 messages.
            (F.sum("broker_cpu_s") * 1000.0 * PER_K / F.sum("messages"))
            .alias("broker_cpu_ms_per_1k"),
        )
        .toPandas()
    )
    return out
