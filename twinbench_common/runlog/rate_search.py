"""rate_search.csv: maximum-rate searches, one row per step (a session at one rate)."""

from __future__ import annotations

from twinbench_common.runlog.sessions import RUN
from twinbench_common.runlog.table import Column, Table, key

RATE_SEARCH = Table(
    name="rate_search", file="rate_search.csv", kind="csv", version=1,
    by_format=dict.fromkeys(range(4, 9), 1),
    row="one step of a search",
    columns=(
        *RUN, key("cell_id"), key("try", "int"), key("step", "int"), key("rate", "double"),
        key("verdict"), Column("achieved_rate", "double"), Column("consumed_rate", "double"),
        Column("backlog_end", "long"), Column("e2e_p99_us", "long"),
        Column("send_delay_p99_us", "long"),
    ),
)
