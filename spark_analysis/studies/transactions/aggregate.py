"""The exactly-once study's Spark step: its sessions are few (one row each), so they are
brought to pandas whole, with the loader's derived columns."""

from __future__ import annotations

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from twinbench_common.runlog import TRANSACTIONS

# transactions.csv's columns, and what the loader adds to every table with an arch column.
COLUMNS = (*TRANSACTIONS.names(), "workload", "side")


def session_rows(transactions: DataFrame) -> tuple[pd.DataFrame, int, int]:
    """(rows of unlabelled runs whose reader got every record exactly once, sessions of A/A
    runs left out, failed sessions left out)."""
    # The grouping columns are already the booleans (labelled run, session ok).
    counts = {(bool(r["labelled"]), bool(r["ok"])): int(r["count"])
              for r in transactions.groupBy(
                  (F.col("side") != "*").alias("labelled"),
                  (F.col("status") == "ok").alias("ok")).count().collect()}
    aa = counts.get((True, True), 0) + counts.get((True, False), 0)
    failed = counts.get((False, False), 0)
    rows = transactions.where((F.col("side") == "*") & (F.col("status") == "ok"))
    return rows.select(*COLUMNS).toPandas(), aa, failed
