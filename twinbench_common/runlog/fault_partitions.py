"""fault_partitions.csv: fault sessions, one row per partition of the session's topic.

faults.csv's ``lost`` and ``unreachable`` are these rows' sums: a record acknowledged and never
read is ``unreachable`` when its partition had no leader at the session's end (a broker that
never came back holds it), ``lost`` otherwise; each record is counted in the partition it was
acknowledged in, so one leaderless partition no longer hides another partition's loss.
"""

from __future__ import annotations

from twinbench_common.runlog.sessions import CASE_SESSION
from twinbench_common.runlog.table import Column, Table, key

FAULT_PARTITIONS = Table(
    name="fault_partitions", file="fault_partitions.csv", kind="csv", version=1,
    # New in format 9: older runs have only faults.csv's totals.
    by_format={}, optional=True,
    row="one try x cell x fault case x partition",
    columns=(
        # -1: the partitions from 254 up, counted together (workloads/verify.py, tag()).
        *CASE_SESSION, key("partition", "int"),
        Column("leader_at_end", "bool"),
        *(Column(c, "long") for c in ("acked", "lost", "unreachable", "duplicates")),
    ),
)
