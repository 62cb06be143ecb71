"""One place that builds the SparkSession, so the CLI, the tests and the benchmarks agree.

Defaults are tuned for what twinbench feeds Spark: small inputs (hundreds of rows per run) where
the default 200 shuffle partitions would spend seconds scheduling empty tasks, on a laptop or a
2-core VM. A cluster user passes ``--master spark://...`` and nothing else changes.
"""

from __future__ import annotations

import logging
import os
import warnings

from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[*]"
# PySpark-internal warnings about pandas 3 that say nothing about our data (tests filter the same).
SPARK_PANDAS_WARNINGS = (
    "PySpark does not yet fully support pandas",
    "The copy keyword is deprecated",
    "toPandas attempted Arrow optimization",
)


def build_session(master: str = DEFAULT_MASTER, *, shuffle_partitions: int = 4,
                  app_name: str = "twinbench-analyze",
                  driver_memory: str | None = None) -> SparkSession:
    """Start (or reuse) a quiet SparkSession on ``master``."""
    # Bind the driver to loopback unless the user chose otherwise: a VM whose hostname resolves
    # to an unroutable address otherwise hangs for a minute before failing.
    if master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
        .config("spark.default.parallelism", str(shuffle_partitions))
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        # Results are small pandas frames; Arrow makes toPandas() cheap and exact.
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.sql.session.timeZone", "UTC")
    )
    # PySpark 4.3 warns on every toPandas() that pandas 3 is "not yet fully supported"; the
    # analysis only moves plain numeric/string columns through Arrow, which the tests pin down.
    for message in SPARK_PANDAS_WARNINGS:
        warnings.filterwarnings("ignore", message=message)
    if driver_memory:
        builder = builder.config("spark.driver.memory", driver_memory)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    # py4j logs every gateway call at INFO when the root logger is configured by a caller.
    logging.getLogger("py4j").setLevel(logging.WARNING)
    return spark
