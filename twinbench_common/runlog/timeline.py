"""timeline.csv: fault sessions, records per time bucket."""

from __future__ import annotations

from twinbench_common.runlog.sessions import CASE_SESSION
from twinbench_common.runlog.table import Column, Table, key

TIMELINE = Table(
    name="timeline", file="timeline.csv", kind="csv", version=1,
    by_format=dict.fromkeys(range(2, 9), 1),
    row="one fault session x time bucket",
    columns=(
        *CASE_SESSION, key("t_s", "double"), key("bucket_s", "double"),
        Column("produced", "long"), Column("consumed", "long"), Column("commits", "long"),
    ),
)
