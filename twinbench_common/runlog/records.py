"""records.csv: the measurements, one row per try x cell x scenario x role."""

from __future__ import annotations

from twinbench_common.runlog.sessions import RUN
from twinbench_common.runlog.table import Column, Table, key


def _d(name: str, since: int = 1) -> Column:
    return Column(name, "double", since=since)


def _n(name: str) -> Column:
    return Column(name, "long")


RECORDS = Table(
    name="records", file="records.csv", kind="csv", version=4,
    # v2 (format 3): the rest of the end-to-end percentiles and the open-loop columns;
    # v3 (format 6): the delay line's round-trip time; v4: the load client.
    by_format={1: 1, 2: 1, 3: 2, 4: 2, 5: 2, 6: 3, 7: 3, 8: 3},
    row="one try x cell x scenario x role",
    columns=(
        *RUN, key("cell_id"), key("table"), key("scenario"), key("role"),
        key("msg_size", "int"), key("batch", "int"), key("try", "int"),
        Column("clients", "int"), _n("records"), _n("payload_bytes"),
        _d("wall_s"), _d("rps"), _d("kbps"),
        _d("lat_p50_us"), _d("lat_p90_us"), _d("lat_p99_us"), _d("lat_p999_us"),
        _d("lat_max_us"), _d("e2e_p50_us"), _d("e2e_p99_us"),
        _n("duplicates"), _n("lost"), _n("out_of_order"), _n("errors"),
        Column("offset_commit", "string"), Column("metadata_check", "string"),
        Column("status", "string"),
        _d("e2e_p90_us", 2), _d("e2e_p999_us", 2), _d("e2e_max_us", 2),
        _d("target_rate", 2), _d("achieved_rate", 2), _d("send_delay_p99_us", 2),
        Column("behind", "bool", since=2),
        _d("rtt_ms", 3),
        Column("client", "string", since=4),
    ),
)
