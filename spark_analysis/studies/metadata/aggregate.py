"""The metadata study's Spark pass over metadata.csv (format 5)."""

from __future__ import annotations

import pandas as pd
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from spark_analysis.schema import METADATA_KEY, METADATA_METRICS

METADATA_GROUP = [*METADATA_KEY, "arch", "side"]


def metadata_stats(metadata: DataFrame) -> pd.DataFrame:
    """One grouped pass per case x size x arch x side: sessions, and n/mean/sd of every
    measure (n counts the sessions where it was measured: a ZooKeeper column has none on
    dsbs)."""
    aggs: list[Column] = [F.count(F.lit(1)).alias("sessions"),
                          F.countDistinct("run_id").alias("runs")]
    for m in METADATA_METRICS:
        aggs += [F.count(m).alias(f"{m}__n"), F.avg(m).alias(f"{m}__mean"),
                 F.stddev_samp(m).alias(f"{m}__sd")]
    return metadata.groupBy(*METADATA_GROUP).agg(*aggs).toPandas()
