"""faults.csv: fault sessions, one row per try x cell x fault case."""

from __future__ import annotations

from twinbench_common.runlog.sessions import CASE_SESSION
from twinbench_common.runlog.table import Column, Table

_D = ("fault_at_s", "closer_at_s", "detection_s", "rejoin_s", "produce_gap_s")
_D2 = ("consume_gap_s", "commit_gap_s", "group_recovery_s", "group_unstable_s")
_N = ("sent", "acked", "consumed", "lost", "duplicates", "unreachable", "produce_errors")

FAULTS = Table(
    name="faults", file="faults.csv", kind="csv", version=1,
    by_format=dict.fromkeys(range(2, 9), 1),
    row="one try x cell x fault case",
    columns=(
        *CASE_SESSION, Column("target_node", "int"), Column("target_role", "string"),
        Column("was_controller", "bool"), Column("was_coordinator", "bool"),
        *(Column(c, "double") for c in _D), Column("produce_gap_partition", "int"),
        *(Column(c, "double") for c in _D2), Column("group_rebalances", "long"),
        Column("rate", "double"), Column("duration_s", "double"),
        *(Column(c, "long") for c in _N),
        Column("offset_commit", "string"), Column("metadata_check", "string"),
        Column("status", "string"),
    ),
)
