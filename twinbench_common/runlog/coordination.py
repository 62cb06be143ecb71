"""coordination.csv: what coordination cost, one row per try x cell x scenario."""

from __future__ import annotations

from twinbench_common.runlog.sessions import RUN
from twinbench_common.runlog.table import Column, Table, key

COORDINATION = Table(
    name="coordination", file="coordination.csv", kind="csv", version=3,
    # v2 (format 6): the delay line's columns; v3 (format 7): the machine's.
    by_format={1: 1, 2: 1, 3: 1, 4: 1, 5: 1, 6: 2, 7: 3, 8: 3},
    optional=True,
    row="one try x cell x scenario",
    columns=(
        *RUN, key("cell_id"), key("table"), key("scenario"), key("msg_size", "int"),
        key("batch", "int"), key("try", "int"),
        Column("messages", "long"), Column("zk_requests", "long"),
        Column("gossip_packets", "long"), Column("coordination_ops", "long"),
        Column("broker_cpu_s", "double"), Column("zk_cpu_s", "double"),
        Column("rtt_ms", "double", since=2), Column("rtt_measured_ms", "double", since=2),
        Column("delayed_packets", "long", since=2), Column("delay_cpu_s", "double", since=2),
        Column("background_cpu", "double", since=3), Column("steal", "double", since=3),
    ),
)
