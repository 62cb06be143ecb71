"""fault_events.csv: fault sessions, one row per fault injected."""

from __future__ import annotations

from twinbench_common.runlog.sessions import CASE_SESSION
from twinbench_common.runlog.table import Column, Table, key

FAULT_EVENTS = Table(
    name="fault_events", file="fault_events.csv", kind="csv", version=1,
    by_format=dict.fromkeys(range(2, 9), 1),
    row="one fault injected (a step of a case's schedule)",
    columns=(
        *CASE_SESSION, key("step", "int"), key("action"), Column("target", "string"),
        Column("node_id", "int"), Column("planned_s", "double"), Column("at_s", "double"),
        Column("took_s", "double"), Column("result", "string"),
    ),
)
