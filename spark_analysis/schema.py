"""The run-log format as Spark sees it: schemas derived from twinbench_common.runlog, and keys.

Spark never infers a schema here: inference costs a full extra scan on large inputs and, worse,
silently turns a column of numbers with one bad value into strings. Every schema is built from
the table's declaration (twinbench_common/runlog/), in the documented column order, for any
version of the table; the loader checks each file's header against it before Spark reads a byte.
"""

from __future__ import annotations

from pyspark.sql.types import (
    BooleanType,
    DataType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from twinbench_common import runlog as fmt
from twinbench_common.runlog import Table
from twinbench_common.runlog.manifest import KIND as MANIFEST_KIND
from twinbench_common.runlog.manifest import SUPPORTED_FORMAT_VERSIONS

__all__ = ["MANIFEST_KIND", "SUPPORTED_FORMAT_VERSIONS", "spark_schema"]

_TYPES: dict[str, DataType] = {
    "string": StringType(), "int": IntegerType(), "long": LongType(), "double": DoubleType(),
    "bool": BooleanType(),
}


def spark_schema(table: Table, version: int | None = None) -> StructType:
    """The Spark schema of a file of ``table`` at ``version`` (default: the current one)."""
    return StructType([StructField(c.name, _TYPES[c.type], c.nullable)
                       for c in table.columns_at(version)])


RECORDS_SCHEMA = spark_schema(fmt.RECORDS)
COORDINATION_SCHEMA = spark_schema(fmt.COORDINATION)
LATENCY_SCHEMA = spark_schema(fmt.LATENCY)
FAULTS_SCHEMA = spark_schema(fmt.FAULTS)
FAULT_EVENTS_SCHEMA = spark_schema(fmt.FAULT_EVENTS)
TIMELINE_SCHEMA = spark_schema(fmt.TIMELINE)
SERIES_SCHEMA = spark_schema(fmt.SERIES)
RATE_SEARCH_SCHEMA = spark_schema(fmt.RATE_SEARCH)
MAX_RATE_SCHEMA = spark_schema(fmt.MAX_RATE)
METADATA_SCHEMA = spark_schema(fmt.METADATA)
METRICS_SCHEMA = spark_schema(fmt.METRICS)

RECORDS_COLUMNS: tuple[str, ...] = fmt.RECORDS.names()
COORDINATION_COLUMNS: tuple[str, ...] = fmt.COORDINATION.names()
FAULTS_COLUMNS: tuple[str, ...] = fmt.FAULTS.names()
FAULT_EVENTS_COLUMNS: tuple[str, ...] = fmt.FAULT_EVENTS.names()
TIMELINE_COLUMNS: tuple[str, ...] = fmt.TIMELINE.names()
SERIES_COLUMNS: tuple[str, ...] = fmt.SERIES.names()
RATE_SEARCH_COLUMNS: tuple[str, ...] = fmt.RATE_SEARCH.names()
MAX_RATE_COLUMNS: tuple[str, ...] = fmt.MAX_RATE.names()
METADATA_COLUMNS: tuple[str, ...] = fmt.METADATA.names()
METRICS_COLUMNS: tuple[str, ...] = fmt.METRICS.names()
# counters.csv is read as plain CSV by the regression (regress.py), not by Spark.
COUNTER_COLUMNS: tuple[str, ...] = fmt.COUNTERS.names()

# coordination.csv's traffic columns -> their per-1,000-messages columns in the coordination
# cost table (cost.coordination_cost); an architecture's labels name one as its cost.
PER_1K: dict[str, str] = {"coord_messages": "coord_messages_per_1k",
                          "coord_bytes": "coord_bytes_per_1k",
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

# The paper's scenarios: the only ones the appendix tables, the comparison, the paper study's
# figures, the A/A calibration and the ratio regression are about. Format 2 adds ``faults``
# (paced load while faults are injected), whose throughput says nothing about the paper's
# question; every consumer of records.csv / coordination.csv / latency.jsonl keeps to these.
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
    "commit_ops", "coordination_ops", "coord_messages", "broker_cpu_s",
    "service_cpu_s", "rss_max_bytes", "idle_ops_per_s", "idle_coord_messages_per_s",
)
