"""Run logs written before the house was rebuilt still analyse, to the same tables.

tests/fixtures/format8/<workload>/runs holds the run logs `twinbench run --arch both` wrote for
each smoke workload at commit 1db6b21 (format_version 8, the last single-number format), and
<workload>/tables the CSV tables `twinbench analyze` made of them at that commit. Every
analysis since must read those runs and give the same tables: the same files, columns and
values (a renamed column or table is listed in RENAMED with the commit that renamed it). So a
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
    assert sorted(after) == sorted(expected)
    for name, path in sorted(before.items()):
        old = _read(path)
        new = _read(after[RENAMED.get((name, None), name)])
        old = old.rename(columns={c: RENAMED.get((name, c), c) for c in old.columns})
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
