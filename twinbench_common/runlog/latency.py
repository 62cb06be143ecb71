"""latency.jsonl: HDR histograms, one object per try x cell x scenario x role x kind."""

from __future__ import annotations

from twinbench_common.runlog.table import Column, Table, key

LATENCY = Table(
    name="latency", file="latency.jsonl", kind="jsonl", version=1,
    by_format=dict.fromkeys(range(1, 9), 1),
    # Empty (or absent) when no session measured latency.
    optional=True,
    row="one try x cell x scenario x role x kind (request, e2e, intended, send_delay)",
    columns=(
        key("run_id"), key("cell_id"), key("scenario"), key("role"), key("try", "int"),
        key("kind"), Column("unit", "string"), Column("count", "long"),
        Column("histogram", "string"),
    ),
)
