"""max_rate.csv: maximum-rate searches, one row per side x cell x try (the search's result)."""

from __future__ import annotations

from twinbench_common.runlog.sessions import RUN
from twinbench_common.runlog.table import Column, Table, key

MAX_RATE = Table(
    name="max_rate", file="max_rate.csv", kind="csv", version=2,
    by_format=dict.fromkeys(range(4, 9), 1),
    row="one search (side x cell x try)",
    columns=(
        *RUN, key("cell_id"), key("try", "int"), key("kept_rate", "double"),
        Column("failed_rate", "double"), Column("steps", "int"),
        # The highest rate the search could try, and whether it stopped there (no rate failed:
        # the maximum is the load client's, at least kept_rate). Version 1 runs read empty;
        # their client_bound is an empty failed_rate, as it always meant.
        Column("ceiling", "double", since=2), Column("client_bound", "bool", since=2),
    ),
)
