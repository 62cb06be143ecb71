"""metadata.csv: metadata sessions, one row per try x cell (case x size)."""

from __future__ import annotations

from twinbench_common.runlog.sessions import CASE_SESSION
from twinbench_common.runlog.table import Column, Table, key

_LONG = ("topics", "partitions", "brokers")
_TIMES = ("create_s", "create_p50_ms", "create_max_ms")
_TIMES2 = ("converge_s", "leave_s", "metadata_p50_ms", "metadata_max_ms", "commit_p50_ms",
           "commit_max_ms", "commit_ops")

METADATA = Table(
    name="metadata", file="metadata.csv", kind="csv", version=2,
    # v2 (format 9): coordination.csv's generic columns (v4), and idle_coord_messages_per_s
    # for idle_zk_requests_per_s.
    by_format=dict.fromkeys(range(5, 9), 1),
    row="one metadata session (case x size x try)",
    columns=(
        *CASE_SESSION, key("kind"), key("n", "long"),
        *(Column(c, "long") for c in _LONG), *(Column(c, "double") for c in _TIMES),
        Column("create_timeouts", "long"), *(Column(c, "double") for c in _TIMES2),
        Column("zk_requests", "long", until=2), Column("gossip_packets", "long", until=2),
        Column("coord_messages", "long", since=2, was=("zk_requests", "gossip_packets")),
        Column("coord_bytes", "long", since=2),
        Column("coordination_ops", "long"), Column("broker_cpu_s", "double"),
        Column("zk_cpu_s", "double", until=2),
        Column("service_cpu_s", "double", since=2, was=("zk_cpu_s",)),
        Column("rss_max_bytes", "long"),
        Column("rss_total_bytes", "long"), Column("idle_s", "double"),
        Column("idle_ops_per_s", "double"),
        Column("idle_zk_requests_per_s", "double", until=2),
        Column("idle_coord_messages_per_s", "double", since=2,
               was=("idle_zk_requests_per_s",)),
        Column("status", "string"),
    ),
)
