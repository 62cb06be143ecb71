"""The Spark side: every aggregation over the (possibly large) run logs, collected as small
pandas frames.

Each function is one grouped pass whose output has one row per cell (or per cell x try), so the
driver never holds raw rows. Replicate unit: one records.csv row, i.e. one (run, try); several
runs of the same architecture and side pool their tries. Rows whose ``status`` is not ``ok``
(verification failed: loss or reordering) are counted but excluded from every statistic.

``paper_only`` keeps the paper's scenarios (split, streaming): the caller applies it to
records, coordination and latency before any of the paper's aggregations.

The fault files (format 2) are small by construction - one faults.csv row per session, one
fault_events.csv row per injected action, timeline.csv one row per session and time bucket -
so ``fault_*`` collect them per session (or per bucket) for the tables and figures to use.
Fault sessions whose status is ``failed`` stay in the statistics: their timings are as valid
as any other's, and the loss is itself the finding (counted and shown beside them).
"""

from __future__ import annotations

import pandas as pd
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from spark_analysis.schema import (
    CELL_KEY,
    COORD_KEY,
    FAULT_COUNTS,
    FAULT_KEY,
    FAULT_METRICS,
    LATENCY_COLUMNS,
    METADATA_KEY,
    METADATA_METRICS,
    METRICS,
    PAPER_SCENARIOS,
    PER_1K,
)

# Tries shown as columns in the paper-layout tables; more tries are still in n, mean and sd.
MAX_TRY_COLUMNS = 10
GROUP = [*CELL_KEY, "arch", "side"]


# Open-loop cells end their cell id in -r<target rate> (format 3) or -f<percent of the side's
# maximum sustainable rate> (format 4): latency at a chosen load, not the paper's
# how-fast-can-it-go, so they stay out of its tables and go to latency_tables.py instead.
OPEN_LOOP_CELL = r"-[rf][0-9][0-9.e+]*$"
# What the latency-throughput curves read of an open-loop row.
OPEN_LOOP_COLUMNS = (
    "run_id", "workload", "side", "arch", "label", "cell_id", "table", "scenario", "role",
    "msg_size", "batch", "try", "offset_commit", "metadata_check", "status", "records", "rps",
    "target_rate", "achieved_rate", "behind", "send_delay_p99_us", "lat_p99_us",
    "e2e_p50_us", "e2e_p90_us", "e2e_p99_us", "e2e_p999_us", "e2e_max_us", "lost",
)


# Cells of a round-trip-time sweep end their cell id in -rtt<ms> (format 6): the paper's
# question on another network, so they go to rtt_tables.py, not the paper's tables.
RTT_CELL = r"-rtt[0-9][0-9.e+]*$"
# What the round-trip-time tables read of a records.csv row, and of its coordination.csv row.
RTT_COLUMNS = (
    "run_id", "workload", "arch", "cell_id", "table", "scenario", "role", "msg_size", "batch",
    "try", "offset_commit", "metadata_check", "rtt_ms", "clients", "records", "wall_s", "rps",
)
RTT_COORDINATION_COLUMNS = ("rtt_measured_ms", "delayed_packets", "delay_cpu_s")


def _plaintext(df: DataFrame) -> Column:
    """Rows of plaintext clusters (secured ones go to the security section alone); a frame
    without the derived column (latency.jsonl) is filtered through its join with records."""
    return F.col("security") == "none" if "security" in df.columns else F.lit(True)


def paper_only(df: DataFrame) -> DataFrame:
    """The rows of the paper's scenarios on plaintext clusters (``faults`` sessions,
    open-loop cells, round-trip-time sweeps, secured clusters and anything newer left out)."""
    return df.where(F.col("scenario").isin(*PAPER_SCENARIOS)
                    & ~F.col("cell_id").rlike(OPEN_LOOP_CELL)
                    & ~F.col("cell_id").rlike(RTT_CELL) & _plaintext(df))


def rtt_sessions(records: DataFrame, coordination: DataFrame | None) -> pd.DataFrame:
    """Every verified row of a round-trip-time sweep (one per session and role, unlabelled
    sides only), with its session's delay-line columns: a few per rtt and try."""
    rows = records.where(F.col("rtt_ms").isNotNull() & _ok() & (F.col("side") == "*")
                         & F.col("scenario").isin(*PAPER_SCENARIOS)).select(*RTT_COLUMNS)
    if coordination is not None:
        coord = coordination.select("run_id", "cell_id", "scenario", "try",
                                    *RTT_COORDINATION_COLUMNS)
        rows = rows.join(coord, ["run_id", "cell_id", "scenario", "try"], "left")
    else:
        for c in RTT_COORDINATION_COLUMNS:
            rows = rows.withColumn(c, F.lit(None).cast("double"))
    return rows.toPandas()


def open_loop(records: DataFrame) -> pd.DataFrame:
    """Every open-loop row of a plaintext cluster (one per session and role): a handful per
    rate and try, so the curves are computed in pandas (latency_tables.py)."""
    return (records.where(F.col("cell_id").rlike(OPEN_LOOP_CELL)
                          & F.col("target_rate").isNotNull() & _plaintext(records))
            .select(*OPEN_LOOP_COLUMNS).toPandas())


# What the security section summarises per cell (n, mean, sd over tries): throughput and the
# per-try latency percentiles.
SECURITY_METRICS = ("rps", "lat_p50_us", "lat_p99_us", "e2e_p50_us", "e2e_p99_us")


def security_stats(records: DataFrame) -> pd.DataFrame:
    """Per cell x arch x side x security, for the workloads that ran a secured cluster:
    n/mean/sd of SECURITY_METRICS over the ok tries (closed-loop paper scenarios), long."""
    secured = [r["workload"] for r in records.where(F.col("security") != "none")
               .select("workload").distinct().collect()]
    if not secured:
        return pd.DataFrame()
    ok = _ok()
    rows = records.where(F.col("workload").isin(*secured)
                         & F.col("scenario").isin(*PAPER_SCENARIOS)
                         & ~F.col("cell_id").rlike(OPEN_LOOP_CELL))
    aggs: list[Column] = []
    for m in SECURITY_METRICS:
        v = F.when(ok, F.col(m))
        aggs += [F.count(v).alias(f"{m}__n"), F.avg(v).alias(f"{m}__mean"),
                 F.stddev_samp(v).alias(f"{m}__sd")]
    wide: pd.DataFrame = rows.groupBy(*GROUP, "security").agg(*aggs).toPandas()
    frames = []
    for m in SECURITY_METRICS:
        part = wide[[*GROUP, "security"]].copy()
        part["metric"] = m
        part["n"] = wide[f"{m}__n"].astype("int64")
        part["mean"] = wide[f"{m}__mean"].astype("float64")
        part["sd"] = wide[f"{m}__sd"].astype("float64")
        frames.append(part[part["n"] > 0])
    return pd.concat(frames, ignore_index=True)


def _ok() -> Column:
    return F.coalesce(F.col("status"), F.lit("ok")) == "ok"


def cell_stats(records: DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One grouped pass per cell x arch x side. Returns (stats, latency): stats is long over the
    metrics (n, mean, sd of rps and kbps); latency holds the mean per-try latency percentiles,
    the largest maximum and the data-integrity counters."""
    ok = _ok()
    aggs: list[Column] = [
        F.count(F.lit(1)).alias("rows"),
        F.sum(F.when(~ok, 1).otherwise(0)).alias("failed_rows"),
        F.countDistinct("run_id").alias("runs"),
    ]
    for m in METRICS:
        v = F.when(ok, F.col(m))
        aggs += [F.count(v).alias(f"{m}__n"), F.avg(v).alias(f"{m}__mean"),
                 F.stddev_samp(v).alias(f"{m}__sd")]
    for c in LATENCY_COLUMNS:
        agg = F.max if c == "lat_max_us" else F.avg
        aggs.append(agg(F.when(ok, F.col(c))).alias(c))
    for c in ("lost", "duplicates", "out_of_order", "errors"):
        aggs.append(F.sum(F.col(c)).alias(c))
    # pandas ships no type stubs here: pyspark's own name for what toPandas returns is unknown.
    wide: pd.DataFrame = records.groupBy(*GROUP).agg(*aggs).toPandas()
    frames = []
    for m in METRICS:
        part = wide[[*GROUP, "rows", "failed_rows", "runs"]].copy()
        part["metric"] = m
        part["n"] = wide[f"{m}__n"].astype("int64")
        part["mean"] = wide[f"{m}__mean"].astype("float64")
        part["sd"] = wide[f"{m}__sd"].astype("float64")
        frames.append(part)
    long = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    latency = wide[[*GROUP, *LATENCY_COLUMNS, "lost", "duplicates", "out_of_order", "errors",
                    "rows", "failed_rows"]].copy()
    return long, latency


def per_try(records: DataFrame) -> pd.DataFrame:
    """Per cell x arch x side x try (try <= MAX_TRY_COLUMNS): the metric, averaged over runs
    when several runs of one side exist (with one run it is the try's own value)."""
    grouped: pd.DataFrame = (
        records.where(_ok() & (F.col("try") <= MAX_TRY_COLUMNS))
        .groupBy(*GROUP, "try")
        .agg(*(F.avg(m).alias(m) for m in METRICS))
        .toPandas()
    )
    return grouped.melt(id_vars=[*GROUP, "try"], value_vars=list(METRICS), var_name="metric",
                        value_name="value")


def max_try(records: DataFrame) -> int:
    row = records.agg(F.max("try").alias("t")).collect()[0]
    return int(row["t"] or 0)


def coordination_cost(coordination: DataFrame, records: DataFrame) -> pd.DataFrame:
    """Per cell (without role) x arch x side: coordination requests per 1,000 messages and CPU
    seconds per try. Policies come from records.csv (coordination.csv does not repeat them)."""
    policies = records.select("run_id", "cell_id", "scenario", "try", "offset_commit",
                              "metadata_check").distinct()
    joined = coordination.join(policies, ["run_id", "cell_id", "scenario", "try"], "left")
    per_k = 1000.0
    out = (
        joined.groupBy(*COORD_KEY, "arch", "side")
        .agg(
            F.count(F.lit(1)).alias("tries"),
            F.sum("messages").alias("messages"),
            *((F.sum(c) * per_k / F.sum("messages")).alias(per) for c, per in PER_1K.items()),
            F.avg("broker_cpu_s").alias("broker_cpu_s"),
            F.avg("service_cpu_s").alias("service_cpu_s"),
            (F.sum("broker_cpu_s") * per_k / F.sum("messages")).alias("broker_cpu_ms_per_1k"),
        )
        .toPandas()
    )
    return out


def latency_histograms(latency: DataFrame, records: DataFrame) -> pd.DataFrame:
    """The HDR histograms (base64) with their cell keys, arch and side, for merging in Python.
    One row per (run, try, cell, scenario, role, kind): small next to records.csv."""
    keys = records.select("run_id", "cell_id", "scenario", "role", "arch", "side",
                          *[k for k in CELL_KEY if k not in ("cell_id", "scenario", "role")]
                          ).distinct()
    joined = latency.where(F.col("histogram").isNotNull()).join(
        keys, ["run_id", "cell_id", "scenario", "role"], "inner")
    return joined.select(*GROUP, "kind", "try", "count", "histogram").toPandas()


# --- fault sessions (format 2) -----------------------------------------------------------------

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
    timeline.csv does not repeat the policies: fault_tables.with_policies adds them from the
    sessions (a pandas merge: a Spark join here would read faults.csv once more)."""
    return timeline.select(*SESSION_KEY, "side", "workload", "t_s", "bucket_s", "produced",
                           "consumed", "commits").toPandas()


def fault_events(events: DataFrame) -> pd.DataFrame:
    """Every injected action with its session's keys (the figures' markers); policies as for
    fault_timeline."""
    return events.select(*SESSION_KEY, "side", "workload", "step", "action", "target",
                         "node_id", "planned_s", "at_s", "took_s", "result").toPandas()


# --- metadata sessions (format 4) --------------------------------------------------------------

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


# --- sampled metrics (format 6) -----------------------------------------------------------------

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
