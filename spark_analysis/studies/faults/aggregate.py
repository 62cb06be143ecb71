"""The faults study's Spark passes over the fault files (format 2).

The fault files are small by construction - one faults.csv row per session, one
fault_events.csv row per injected action, timeline.csv one row per session and time bucket -
so these collect them per session (or per bucket) for the tables and figures to use. Fault
sessions whose status is ``failed`` stay in the statistics: their timings are as valid as any
other's, and the loss is itself the finding (counted and shown beside them).
"""

from __future__ import annotations

import pandas as pd
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from spark_analysis.schema import FAULT_COUNTS, FAULT_KEY, FAULT_METRICS

FAULT_GROUP = [*FAULT_KEY, "arch", "side"]
# What identifies one session in every fault file.
SESSION_KEY = ["run_id", "arch", "cell_id", "case", "try"]
# The per-session columns the fault tables and figures read (faults.csv minus bookkeeping).
SESSION_COLUMNS = (
    "run_id", "try", "target_node", "target_role", "was_controller", "was_coordinator",
    "fault_at_s", "closer_at_s", *FAULT_METRICS, "group_unstable_s", "group_rebalances",
    "rate", "duration_s", "sent", "acked", "consumed", *FAULT_COUNTS, "status",
)


def fault_sessions(faults: DataFrame) -> pd.DataFrame:
    """One row per fault session (a try of one case on one cell), keyed by FAULT_GROUP."""
    return faults.select(*FAULT_GROUP, *SESSION_COLUMNS).toPandas()


def fault_stats(faults: DataFrame) -> pd.DataFrame:
    """One grouped pass per case x arch x side: sessions, failed sessions, n/mean/sd of every
    duration (n counts the sessions where it was observed), and the summed counters."""
    failed = F.coalesce(F.col("status"), F.lit("ok")) != "ok"
    aggs: list[Column] = [
        F.count(F.lit(1)).alias("sessions"),
        F.sum(F.when(failed, 1).otherwise(0)).alias("failed_sessions"),
        F.countDistinct("run_id").alias("runs"),
        F.sum(F.when(F.col("was_controller"), 1).otherwise(0)).alias("hit_controller"),
        F.sum(F.when(F.col("was_coordinator"), 1).otherwise(0)).alias("hit_coordinator"),
        F.avg("rate").alias("rate"),
        F.sum("sent").alias("sent"),
        F.sum("acked").alias("acked"),
        F.sum("consumed").alias("consumed"),
        F.sum("group_rebalances").alias("group_rebalances"),
    ]
    for m in FAULT_METRICS:
        aggs += [F.count(m).alias(f"{m}__n"), F.avg(m).alias(f"{m}__mean"),
                 F.stddev_samp(m).alias(f"{m}__sd")]
    # A counter every session left empty sums to null ("not counted"), never to a false 0.
    aggs += [F.sum(c).alias(c) for c in FAULT_COUNTS]
    return faults.groupBy(*FAULT_GROUP).agg(*aggs).toPandas()


def fault_timeline(timeline: DataFrame) -> pd.DataFrame:
    """Per session and bucket: records acknowledged, consumed and committed (the figures turn
    them into rates). One row per bucket of a session, which is small next to records.csv.
    timeline.csv does not repeat the policies: tables.with_policies adds them from the
    sessions (a pandas merge: a Spark join here would read faults.csv once more)."""
    return timeline.select(*SESSION_KEY, "side", "workload", "t_s", "bucket_s", "produced",
                           "consumed", "commits").toPandas()


def fault_partitions(partitions: DataFrame) -> pd.DataFrame:
    """Every session's records per partition (format 9; policies as for fault_timeline)."""
    return partitions.select(*SESSION_KEY, "side", "workload", "partition", "leader_at_end",
                             "acked", "lost", "unreachable", "duplicates").toPandas()


def fault_events(events: DataFrame) -> pd.DataFrame:
    """Every injected action with its session's keys (the figures' markers); policies as for
    fault_timeline."""
    return events.select(*SESSION_KEY, "side", "workload", "step", "action", "target",
                         "node_id", "planned_s", "at_s", "took_s", "result").toPandas()
