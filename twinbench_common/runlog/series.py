"""series.csv: open-loop sessions, one row per second of each session."""

from __future__ import annotations

from twinbench_common.runlog.sessions import SCENARIO_SESSION
from twinbench_common.runlog.table import Column, Table, key

SERIES = Table(
    name="series", file="series.csv", kind="csv", version=1,
    by_format=dict.fromkeys(range(4, 9), 1),
    row="one open-loop session x second",
    columns=(
        *SCENARIO_SESSION, key("t_s", "double"), key("bucket_s", "double"),
        Column("produced", "long"), Column("consumed", "long"), Column("backlog", "long"),
        Column("e2e_records", "long"), Column("e2e_p99_us", "long"), Column("warmup", "bool"),
    ),
)
