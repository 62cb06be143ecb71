"""Run logs written before the house was rebuilt still analyse, to the same tables.

tests/fixtures/format8/<workload>/runs holds the run logs `twinbench run --arch both` wrote for
each smoke workload at commit 1db6b21 (format_version 8, the last single-number format), and
<workload>/tables the CSV tables `twinbench analyze` made of them at that commit. Every
analysis since must read those runs and give the same tables: the same files, columns and
values, but for what format 9 renamed on purpose (``migrate``: the generic coordination
columns that replaced zk_requests, gossip_packets and zk_cpu_s, docs/result-format.md). So a
restructuring of the analysis cannot change a measured figure unnoticed, and old run logs stay
readable.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
from pyspark.sql import SparkSession

from spark_analysis import job
from spark_analysis.session import SPARK_PANDAS_WARNINGS

pytestmark = [pytest.mark.integration,
              *(pytest.mark.filterwarnings(f"ignore:{m}") for m in SPARK_PANDAS_WARNINGS)]

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "format8"
WORKLOADS = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir())
# (old table, old column) -> new column; a table renamed as a whole maps its column None.
RENAMED: dict[tuple[str, str | None], str] = {}
# Format 9 (coordination.csv version 4): one generic column for each architecture's own
# coordination traffic and one for its services' CPU, where tables named the twins' (old
# columns of a table -> the new column they fill, the first non-empty of them).
MERGED_COLUMNS: dict[str, tuple[str, ...]] = {
    "coord_messages_per_1k": ("zk_requests_per_1k", "gossip_packets_per_1k"),
    "service_cpu_s": ("zk_cpu_s",),
    "service_cpu_mcores": ("zk_cpu_mcores",),
}
# ... and the measures' names where tables list them as values.
RENAMED_VALUES: dict[str, str] = {
    "zk_requests": "coord_messages", "gossip_packets": "coord_messages",
    "zk_cpu_s": "service_cpu_s", "idle_zk_requests_per_s": "idle_coord_messages_per_s",
    "zk_cpu_mcores": "service_cpu_mcores",
    "CPU usage (m core), ZooKeeper": "CPU usage (m core), services (ZooKeeper)",
}
# Rows that cannot match: format 9 puts ZooKeeper's requests and DSBS's gossip packets in one
# row of the metadata comparison (with their ratio), where format 8 had a row for each.
NEW_ROWS: dict[str, tuple[str, str]] = {"metadata_comparison": ("metric", "coord_messages")}
# Tables new since format 8, and what they hold for a format-8 run.
NEW_TABLES: dict[str, str] = {
    # Per-partition loss needs fault_partitions.csv, which format 8 runs lack: empty.
    "fault_partitions": "empty",
    # The decomposition needs zk, raft and dsbs in one analysis; format 8 runs had no raft.
    "decomposition": "empty",
}
# Columns new since format 8 -> their value for a format-8 run, per row (a function of the row).
NEW_COLUMNS: dict[str, dict[str, str | set[str]]] = {
    # A format-8 search that reached its ceiling left failed_rate empty; none of the fixture's
    # did, so no maximum is client-bound and nothing is known of the ceiling.
    "max_rates": {"client_bound": "0", "at_least": "False", "ceiling": "", "ratio_bound": ""},
    # Coordination bytes are a format-9 column of coordination.csv: unknown in format 8.
    "coordination_cost": {"coord_bytes_per_1k": ""},
    # Round trips per data-path coordination request (the RTT model's c): one on the zk
    # twin (a ZooKeeper request is one), none on DSBS (it makes no such request: empty).
    "rtt_sessions": {"coord_round_trips": {"1.0", ""}},
    "rtt_stats": {"coord_round_trips": {"1.0", ""}},
}
# (table, column) -> the factor a format-8 value is multiplied by: broker_cpu_ms_per_1k held CPU
# seconds per 1,000 records under its name until 2026-11-28 (now milliseconds, as it says).
RESCALED: dict[tuple[str, str], float] = {("coordination_cost", "broker_cpu_ms_per_1k"): 1000.0}


def migrate(name: str, old: pd.DataFrame) -> pd.DataFrame:
    """A format-8 table as format 9 names its columns and measures."""
    if not len(old.columns):
        return old
    for new, olds in MERGED_COLUMNS.items():
        present = [c for c in olds if c in old.columns]
        if present:
            at = list(old.columns).index(present[0])
            merged = old[present].replace("", pd.NA).bfill(axis=1).iloc[:, 0].fillna("")
            old = old.drop(columns=present)
            old.insert(at, new, merged)
    for (table, column), factor in RESCALED.items():
        if table == name and column in old.columns:
            old[column] = [repr(float(v) * factor) if v else v for v in old[column]]
    old = old.rename(columns={c: RENAMED.get((name, c), c) for c in old.columns})
    return old.map(lambda v: RENAMED_VALUES.get(v, v))


def _same(old: str, new: str) -> bool:
    if old == new:
        return True
    try:
        a, b = float(old), float(new)
    except ValueError:
        return False
    return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def _read(path: Path) -> pd.DataFrame:
    """Every field as its text (an empty table, written without a header, as no columns)."""
    if not path.read_text("utf-8").strip():
        return pd.DataFrame()
    return pd.read_csv(path, dtype=str, keep_default_na=False)


@pytest.mark.parametrize("workload", WORKLOADS)
def test_the_tables_of_a_format_8_run_are_unchanged(spark: SparkSession, workload: str,
                                                    tmp_path: Path) -> None:
    analysis = job.compute(spark, [FIXTURES / workload / "runs"])
    job.write_tables(analysis, tmp_path)
    before = {p.stem: p for p in (FIXTURES / workload / "tables").glob("*.csv")}
    after = {p.stem: p for p in tmp_path.glob("*.csv")}
    expected = {RENAMED.get((name, None), name) for name in before}
    for name, holds in NEW_TABLES.items():
        if name in after and name not in expected:
            assert holds == "empty" and _read(after.pop(name)).empty, name
    assert sorted(after) == sorted(expected)
    for name, path in sorted(before.items()):
        old = migrate(name, _read(path))
        new = _read(after[RENAMED.get((name, None), name)])
        for column, value in NEW_COLUMNS.get(name, {}).items():
            if column in new.columns:
                allowed = value if isinstance(value, set) else {value}
                assert set(new[column]) <= allowed, (name, column, set(new[column]))
                new = new.drop(columns=[column])
        if name in NEW_ROWS:
            column, value = NEW_ROWS[name]
            old, new = old[old[column] != value], new[new[column] != value]
        assert list(new.columns) == list(old.columns), name
        assert len(new) == len(old), name
        # Spark gives no row order where a table does not sort: compare the rows as a set.
        old = old.sort_values(list(old.columns), ignore_index=True)
        new = new.sort_values(list(new.columns), ignore_index=True)
        for column in old.columns:
            bad = [(i, a, b) for i, (a, b) in enumerate(zip(old[column], new[column],
                                                            strict=True))
                   if not _same(a, b)]
            assert not bad, f"{name}.{column}: (row, before, now) {bad[:3]}"
