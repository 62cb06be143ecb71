"""coordination.csv: what coordination cost, one row per try x cell x scenario."""

from __future__ import annotations

from twinbench_common.runlog.sessions import RUN
from twinbench_common.runlog.table import Column, Table, key

COORDINATION = Table(
    name="coordination", file="coordination.csv", kind="csv", version=4,
    # v2 (format 6): the delay line's columns; v3 (format 7): the machine's; v4 (format 9):
    # generic coordination columns, the same for every architecture (coord_messages was
    # zk_requests on zk and gossip_packets on dsbs; service_cpu_s was zk_cpu_s).
    by_format={1: 1, 2: 1, 3: 1, 4: 1, 5: 1, 6: 2, 7: 3, 8: 3},
    optional=True,
    row="one try x cell x scenario",
    columns=(
        *RUN, key("cell_id"), key("table"), key("scenario"), key("msg_size", "int"),
        key("batch", "int"), key("try", "int"),
        Column("messages", "long"),
        Column("zk_requests", "long", until=4), Column("gossip_packets", "long", until=4),
        Column("coord_messages", "long", since=4, was=("zk_requests", "gossip_packets")),
        Column("coord_bytes", "long", since=4),
        Column("coordination_ops", "long"), Column("broker_cpu_s", "double"),
        Column("zk_cpu_s", "double", until=4),
        Column("service_cpu_s", "double", since=4, was=("zk_cpu_s",)),
        Column("rtt_ms", "double", since=2), Column("rtt_measured_ms", "double", since=2),
        Column("delayed_packets", "long", since=2), Column("delay_cpu_s", "double", since=2),
        Column("background_cpu", "double", since=3), Column("steal", "double", since=3),
    ),
)
