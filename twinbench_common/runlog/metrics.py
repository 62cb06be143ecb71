"""metrics.csv: the brokers' Prometheus metrics sampled during sessions, one row per sample."""

from __future__ import annotations

from twinbench_common.runlog.sessions import SCENARIO_SESSION
from twinbench_common.runlog.table import Column, Table, key

METRICS = Table(
    name="metrics", file="metrics.csv", kind="csv", version=1,
    by_format={8: 1},
    row="one sample of one series",
    columns=(
        *SCENARIO_SESSION, key("t_s", "double"), key("node_id", "int"), key("metric"),
        Column("labels", "string"), Column("value", "double"),
    ),
)
