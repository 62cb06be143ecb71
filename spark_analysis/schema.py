"""The run log format (docs/result-format.md, format_versions 1 to 8) as explicit Spark schemas.

Spark never infers a schema here: inference costs a full extra scan on large inputs and, worse,
silently turns a column of numbers with one bad value into strings. The column order below is
the documented order; the loader checks each file's header against it before Spark reads a byte.
"""

from __future__ import annotations

from pyspark.sql.types import (
    BooleanType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

# The versions of docs/result-format.md this analysis understands.
SUPPORTED_FORMAT_VERSIONS: frozenset[int] = frozenset({1, 2, 3, 4, 5, 6, 7, 8})
# From this version on every run directory holds the three open-loop files (possibly
# header-only): series.csv, rate_search.csv, max_rate.csv.
OPEN_LOOP_FILES_SINCE = 4
# From this version on records.csv has the full end-to-end percentiles and open-loop columns.
OPEN_LOOP_COLUMNS_SINCE = 3
# From this version on every run directory holds the three fault files (possibly header-only).
FAULT_FILES_SINCE = 2
# From this version on every run directory holds metadata.csv (possibly header-only).
METADATA_FILE_SINCE = 5
# From this version on records.csv and coordination.csv carry the delay line's columns.
RTT_COLUMNS_SINCE = 6
# From this version on coordination.csv ends with the machine's columns (background_cpu, steal).
MACHINE_COLUMNS_SINCE = 7
# From this version on every run directory holds metrics.csv (possibly header-only).
METRICS_FILE_SINCE = 8
MANIFEST_KIND = "twinbench.run"

RECORDS_SCHEMA = StructType([
    StructField("run_id", StringType(), False),
    StructField("arch", StringType(), False),
    StructField("label", StringType(), True),
    StructField("cell_id", StringType(), False),
    StructField("table", StringType(), False),
    StructField("scenario", StringType(), False),
    StructField("role", StringType(), False),
    StructField("msg_size", IntegerType(), False),
    StructField("batch", IntegerType(), False),
    StructField("try", IntegerType(), False),
    StructField("clients", IntegerType(), True),
    StructField("records", LongType(), True),
    StructField("payload_bytes", LongType(), True),
    StructField("wall_s", DoubleType(), True),
    StructField("rps", DoubleType(), True),
    StructField("kbps", DoubleType(), True),
    StructField("lat_p50_us", DoubleType(), True),
    StructField("lat_p90_us", DoubleType(), True),
    StructField("lat_p99_us", DoubleType(), True),
    StructField("lat_p999_us", DoubleType(), True),
    StructField("lat_max_us", DoubleType(), True),
    StructField("e2e_p50_us", DoubleType(), True),
    StructField("e2e_p99_us", DoubleType(), True),
    StructField("duplicates", LongType(), True),
    StructField("lost", LongType(), True),
    StructField("out_of_order", LongType(), True),
    StructField("errors", LongType(), True),
    StructField("offset_commit", StringType(), True),
    StructField("metadata_check", StringType(), True),
    StructField("status", StringType(), True),
    StructField("e2e_p90_us", DoubleType(), True),
    StructField("e2e_p999_us", DoubleType(), True),
    StructField("e2e_max_us", DoubleType(), True),
    StructField("target_rate", DoubleType(), True),
    StructField("achieved_rate", DoubleType(), True),
    StructField("send_delay_p99_us", DoubleType(), True),
    StructField("behind", BooleanType(), True),
    StructField("rtt_ms", DoubleType(), True),
])


def _up_to(schema: StructType, last: str) -> StructType:
    """An older format's schema: the same columns up to ``last``."""
    names = [f.name for f in schema.fields]
    return StructType(schema.fields[: names.index(last) + 1])


# records.csv of formats 1 and 2: the same columns up to `status`; of formats 3 to 5, up to
# `behind`.
RECORDS_SCHEMA_V2 = _up_to(RECORDS_SCHEMA, "status")
RECORDS_SCHEMA_V5 = _up_to(RECORDS_SCHEMA, "behind")

COORDINATION_SCHEMA = StructType([
    StructField("run_id", StringType(), False),
    StructField("arch", StringType(), False),
    StructField("label", StringType(), True),
    StructField("cell_id", StringType(), False),
    StructField("table", StringType(), False),
    StructField("scenario", StringType(), False),
    StructField("msg_size", IntegerType(), False),
    StructField("batch", IntegerType(), False),
    StructField("try", IntegerType(), False),
    StructField("messages", LongType(), True),
    StructField("zk_requests", LongType(), True),
    StructField("gossip_packets", LongType(), True),
    StructField("coordination_ops", LongType(), True),
    StructField("broker_cpu_s", DoubleType(), True),
    StructField("zk_cpu_s", DoubleType(), True),
    StructField("rtt_ms", DoubleType(), True),
    StructField("rtt_measured_ms", DoubleType(), True),
    StructField("delayed_packets", LongType(), True),
    StructField("delay_cpu_s", DoubleType(), True),
    StructField("background_cpu", DoubleType(), True),
    StructField("steal", DoubleType(), True),
])
# coordination.csv of formats 1 to 5: up to `zk_cpu_s`; of format 6: up to `delay_cpu_s`.
COORDINATION_SCHEMA_V5 = _up_to(COORDINATION_SCHEMA, "zk_cpu_s")
COORDINATION_SCHEMA_V6 = _up_to(COORDINATION_SCHEMA, "delay_cpu_s")

LATENCY_SCHEMA = StructType([
    StructField("run_id", StringType(), False),
    StructField("cell_id", StringType(), False),
    StructField("scenario", StringType(), False),
    StructField("role", StringType(), False),
    StructField("try", IntegerType(), False),
    StructField("kind", StringType(), False),
    StructField("unit", StringType(), True),
    StructField("count", LongType(), True),
    StructField("histogram", StringType(), True),
])

# Format 2: fault sessions. The first six columns identify a session (a try of one fault case).
_SESSION_FIELDS = [
    StructField("run_id", StringType(), False),
    StructField("arch", StringType(), False),
    StructField("label", StringType(), True),
    StructField("cell_id", StringType(), False),
    StructField("case", StringType(), False),
    StructField("try", IntegerType(), False),
]

FAULTS_SCHEMA = StructType([
    *_SESSION_FIELDS,
    StructField("target_node", IntegerType(), True),
    StructField("target_role", StringType(), True),
    StructField("was_controller", BooleanType(), True),
    StructField("was_coordinator", BooleanType(), True),
    StructField("fault_at_s", DoubleType(), True),
    StructField("closer_at_s", DoubleType(), True),
    StructField("detection_s", DoubleType(), True),
    StructField("rejoin_s", DoubleType(), True),
    StructField("produce_gap_s", DoubleType(), True),
    StructField("produce_gap_partition", IntegerType(), True),
    StructField("consume_gap_s", DoubleType(), True),
    StructField("commit_gap_s", DoubleType(), True),
    StructField("group_recovery_s", DoubleType(), True),
    StructField("group_unstable_s", DoubleType(), True),
    StructField("group_rebalances", LongType(), True),
    StructField("rate", DoubleType(), True),
    StructField("duration_s", DoubleType(), True),
    StructField("sent", LongType(), True),
    StructField("acked", LongType(), True),
    StructField("consumed", LongType(), True),
    StructField("lost", LongType(), True),
    StructField("duplicates", LongType(), True),
    StructField("unreachable", LongType(), True),
    StructField("produce_errors", LongType(), True),
    StructField("offset_commit", StringType(), True),
    StructField("metadata_check", StringType(), True),
    StructField("status", StringType(), True),
])

FAULT_EVENTS_SCHEMA = StructType([
    *_SESSION_FIELDS,
    StructField("step", IntegerType(), False),
    StructField("action", StringType(), False),
    StructField("target", StringType(), True),
    StructField("node_id", IntegerType(), True),
    StructField("planned_s", DoubleType(), True),
    StructField("at_s", DoubleType(), True),
    StructField("took_s", DoubleType(), True),
    StructField("result", StringType(), True),
])

TIMELINE_SCHEMA = StructType([
    *_SESSION_FIELDS,
    StructField("t_s", DoubleType(), False),
    StructField("bucket_s", DoubleType(), False),
    StructField("produced", LongType(), True),
    StructField("consumed", LongType(), True),
    StructField("commits", LongType(), True),
])

_OPEN_SESSION_FIELDS = [
    StructField("run_id", StringType(), False),
    StructField("arch", StringType(), False),
    StructField("label", StringType(), True),
    StructField("cell_id", StringType(), False),
    StructField("scenario", StringType(), False),
    StructField("try", IntegerType(), False),
]

SERIES_SCHEMA = StructType([
    *_OPEN_SESSION_FIELDS,
    StructField("t_s", DoubleType(), False),
    StructField("bucket_s", DoubleType(), False),
    StructField("produced", LongType(), True),
    StructField("consumed", LongType(), True),
    StructField("backlog", LongType(), True),
    StructField("e2e_records", LongType(), True),
    StructField("e2e_p99_us", LongType(), True),
    StructField("warmup", BooleanType(), True),
])

RATE_SEARCH_SCHEMA = StructType([
    StructField("run_id", StringType(), False),
    StructField("arch", StringType(), False),
    StructField("label", StringType(), True),
    StructField("cell_id", StringType(), False),
    StructField("try", IntegerType(), False),
    StructField("step", IntegerType(), False),
    StructField("rate", DoubleType(), False),
    StructField("verdict", StringType(), False),
    StructField("achieved_rate", DoubleType(), True),
    StructField("consumed_rate", DoubleType(), True),
    StructField("backlog_end", LongType(), True),
    StructField("e2e_p99_us", LongType(), True),
    StructField("send_delay_p99_us", LongType(), True),
])

MAX_RATE_SCHEMA = StructType([
    StructField("run_id", StringType(), False),
    StructField("arch", StringType(), False),
    StructField("label", StringType(), True),
    StructField("cell_id", StringType(), False),
    StructField("try", IntegerType(), False),
    StructField("kept_rate", DoubleType(), False),
    StructField("failed_rate", DoubleType(), True),
    StructField("steps", IntegerType(), True),
])

# metadata.csv (format 5): one row per metadata session.
_METADATA_INTS = ("n", "topics", "partitions", "brokers", "create_timeouts", "zk_requests",
                  "gossip_packets", "coordination_ops", "rss_max_bytes", "rss_total_bytes")
_METADATA_TEXT = ("kind", "status")
METADATA_SCHEMA = StructType([
    *_SESSION_FIELDS,
    *(StructField(c, StringType() if c in _METADATA_TEXT else
                  LongType() if c in _METADATA_INTS else DoubleType(), c not in ("kind", "n"))
      for c in (
          "kind", "n", "topics", "partitions", "brokers", "create_s", "create_p50_ms",
          "create_max_ms", "create_timeouts", "converge_s", "leave_s", "metadata_p50_ms",
          "metadata_max_ms", "commit_p50_ms", "commit_max_ms", "commit_ops", "zk_requests",
          "gossip_packets",
          "coordination_ops", "broker_cpu_s", "zk_cpu_s", "rss_max_bytes", "rss_total_bytes",
          "idle_s", "idle_ops_per_s", "idle_zk_requests_per_s", "status")),
])

# metrics.csv (format 6): the brokers' Prometheus samples during sessions, long.
METRICS_SCHEMA = StructType([
    *_OPEN_SESSION_FIELDS,
    StructField("t_s", DoubleType(), False),
    StructField("node_id", IntegerType(), False),
    StructField("metric", StringType(), False),
    StructField("labels", StringType(), True),
    StructField("value", DoubleType(), True),
])

RECORDS_COLUMNS: tuple[str, ...] = tuple(f.name for f in RECORDS_SCHEMA.fields)
METRICS_COLUMNS: tuple[str, ...] = tuple(f.name for f in METRICS_SCHEMA.fields)
RECORDS_COLUMNS_V2: tuple[str, ...] = tuple(f.name for f in RECORDS_SCHEMA_V2.fields)
RECORDS_COLUMNS_V5: tuple[str, ...] = tuple(f.name for f in RECORDS_SCHEMA_V5.fields)
COORDINATION_COLUMNS: tuple[str, ...] = tuple(f.name for f in COORDINATION_SCHEMA.fields)
COORDINATION_COLUMNS_V5: tuple[str, ...] = tuple(f.name for f in COORDINATION_SCHEMA_V5.fields)
COORDINATION_COLUMNS_V6: tuple[str, ...] = tuple(f.name for f in COORDINATION_SCHEMA_V6.fields)
FAULTS_COLUMNS: tuple[str, ...] = tuple(f.name for f in FAULTS_SCHEMA.fields)
FAULT_EVENTS_COLUMNS: tuple[str, ...] = tuple(f.name for f in FAULT_EVENTS_SCHEMA.fields)
TIMELINE_COLUMNS: tuple[str, ...] = tuple(f.name for f in TIMELINE_SCHEMA.fields)
SERIES_COLUMNS: tuple[str, ...] = tuple(f.name for f in SERIES_SCHEMA.fields)
RATE_SEARCH_COLUMNS: tuple[str, ...] = tuple(f.name for f in RATE_SEARCH_SCHEMA.fields)
MAX_RATE_COLUMNS: tuple[str, ...] = tuple(f.name for f in MAX_RATE_SCHEMA.fields)
METADATA_COLUMNS: tuple[str, ...] = tuple(f.name for f in METADATA_SCHEMA.fields)
# counters.csv (optional in format 2): read as plain CSV by the regression (regress.py), not by
# Spark, so it has columns but no Spark schema.
COUNTER_COLUMNS: tuple[str, ...] = (
    "run_id", "arch", "label", "cell_id", "scenario", "try", "source", "counter", "increase")

# coordination.csv's traffic columns -> their per-1,000-messages columns in the coordination
# cost table (aggregate.coordination_cost); an architecture's labels name one as its cost.
PER_1K: dict[str, str] = {"zk_requests": "zk_requests_per_1k",
                          "gossip_packets": "gossip_packets_per_1k",
                          "coordination_ops": "coord_ops_per_1k"}

# What identifies a measured cell across runs. The workload name comes from the manifest (two
# workloads may reuse a cell_id with different message counts) and the policies from the row
# (the policy sweep reuses sizes and batches under different coordination policies).
CELL_KEY: tuple[str, ...] = (
    "workload", "table", "cell_id", "scenario", "role", "msg_size", "batch",
    "offset_commit", "metadata_check",
)
# The same without the role: coordination.csv measures a try of a cell, both roles together.
COORD_KEY: tuple[str, ...] = tuple(k for k in CELL_KEY if k != "role")

# The paper's scenarios: the only ones the appendix tables, the comparison, fig01-fig15, the A/A
# calibration and the ratio regression are about. Format 2 adds ``faults`` (paced load while
# faults are injected), whose throughput says nothing about the paper's question; every
# consumer of records.csv / coordination.csv / latency.jsonl keeps to these.
PAPER_SCENARIOS: tuple[str, ...] = ("split", "streaming")

# A fault session's identity in the fault tables: the workload (from the manifest), the cell and
# the case, under the policies in force; arch beside it. Several runs of one architecture pool
# their tries, as for records.csv.
FAULT_KEY: tuple[str, ...] = ("workload", "cell_id", "case", "offset_commit", "metadata_check")
# The durations the fault tables summarise (mean, sd, n, 95% CI over tries), in report order.
FAULT_METRICS: tuple[str, ...] = (
    "detection_s", "rejoin_s", "produce_gap_s", "consume_gap_s", "commit_gap_s",
    "group_recovery_s",
)
# The counters they sum (lost must be 0 wherever the broker came back).
FAULT_COUNTS: tuple[str, ...] = ("lost", "duplicates", "unreachable", "produce_errors")

METRICS: tuple[str, ...] = ("rps", "kbps")
LATENCY_COLUMNS: tuple[str, ...] = (
    "lat_p50_us", "lat_p90_us", "lat_p99_us", "lat_p999_us", "lat_max_us",
    "e2e_p50_us", "e2e_p99_us",
)
# The A/A calibration's two sides (docs/result-format.md, manifest `label`).
AA_LABELS: tuple[str, ...] = ("A", "B")
# The paper's coordination conditions; figures prefer cells run under them.
PAPER_POLICY = ("every_fetch", "per_request")

# A metadata session's identity in the metadata tables: the workload, the case (its kind) and
# the size swept; arch beside it. Several runs of one architecture pool their tries.
METADATA_KEY: tuple[str, ...] = ("workload", "case", "kind", "n")
# The measures the metadata tables summarise (mean, sd, n, 95% CI over tries).
METADATA_METRICS: tuple[str, ...] = (
    "create_s", "create_p50_ms", "converge_s", "leave_s", "metadata_p50_ms", "commit_p50_ms",
    "commit_ops", "coordination_ops", "zk_requests", "gossip_packets", "broker_cpu_s",
    "zk_cpu_s", "rss_max_bytes", "idle_ops_per_s", "idle_zk_requests_per_s",
)
