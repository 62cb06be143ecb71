"""counters.csv: every counter's increase, one row per try x cell x scenario x counter."""

from __future__ import annotations

from twinbench_common.runlog.sessions import SCENARIO_SESSION
from twinbench_common.runlog.table import Column, Table, key

COUNTERS = Table(
    name="counters", file="counters.csv", kind="csv", version=1,
    # Added to format 2 after its first runs: a format 2-8 run may lack it.
    by_format=dict.fromkeys(range(2, 9), 1), optional=True,
    row="one try x cell x scenario x counter (long format)",
    columns=(*SCENARIO_SESSION, key("source"), key("counter"), Column("increase", "double")),
)
