"""The run log format (docs/result-format.md, format_version 1) as explicit Spark schemas.

Spark never infers a schema here: inference costs a full extra scan on large inputs and, worse,
silently turns a column of numbers with one bad value into strings. The column order below is
the documented order; the loader checks each file's header against it before Spark reads a byte.
"""

from __future__ import annotations

from pyspark.sql.types import (
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

# The versions of docs/result-format.md this analysis understands.
SUPPORTED_FORMAT_VERSIONS: frozenset[int] = frozenset({1})
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
])

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
])

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

RECORDS_COLUMNS: tuple[str, ...] = tuple(f.name for f in RECORDS_SCHEMA.fields)
COORDINATION_COLUMNS: tuple[str, ...] = tuple(f.name for f in COORDINATION_SCHEMA.fields)

# What identifies a measured cell across runs. The workload name comes from the manifest (two
# workloads may reuse a cell_id with different message counts) and the policies from the row
# (the policy sweep reuses sizes and batches under different coordination policies).
CELL_KEY: tuple[str, ...] = (
    "workload", "table", "cell_id", "scenario", "role", "msg_size", "batch",
    "offset_commit", "metadata_check",
)
# The same without the role: coordination.csv measures a try of a cell, both roles together.
COORD_KEY: tuple[str, ...] = tuple(k for k in CELL_KEY if k != "role")

METRICS: tuple[str, ...] = ("rps", "kbps")
LATENCY_COLUMNS: tuple[str, ...] = (
    "lat_p50_us", "lat_p90_us", "lat_p99_us", "lat_p999_us", "lat_max_us",
    "e2e_p50_us", "e2e_p99_us",
)
ARCHS: tuple[str, ...] = ("zk", "dsbs")
# The A/A calibration's two sides (docs/result-format.md, manifest `label`).
AA_LABELS: tuple[str, ...] = ("A", "B")
# The paper's coordination conditions; figures prefer cells run under them.
PAPER_POLICY = ("every_fetch", "per_request")
