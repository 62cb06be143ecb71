"""The metadata tables, their report section and figure, on hand-made frames (no Spark):
intervals computed by hand, measures one side does not have, ratios, log-log slopes."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from spark_analysis.archs import DEFAULT
from spark_analysis.schema import METADATA_METRICS
from spark_analysis.studies.metadata import tables as metadata_tables
from spark_analysis.studies.metadata.study import MetadataTables

T975_2 = 4.302652729749464  # t(0.975, 2): three tries


def wide_row(n: int, arch: str, values: dict[str, list[float]], *, side: str = "*"
             ) -> dict[str, object]:
    """One row as aggregate.metadata_stats returns it, from per-try values of some measures."""
    row: dict[str, object] = {"workload": "metadata", "case": "storm", "kind": "topic-storm",
                              "n": n, "arch": arch, "side": side, "sessions": 3, "runs": 1}
    for m in METADATA_METRICS:
        v = pd.Series(values.get(m, []), dtype=float)
        row[f"{m}__n"] = len(v)
        row[f"{m}__mean"] = v.mean() if len(v) else None
        row[f"{m}__sd"] = v.std(ddof=1) if len(v) > 1 else None
    return row


WIDE = pd.DataFrame([
    wide_row(10, "zk", {"converge_s": [1.0, 2.0, 3.0], "service_cpu_s": [1.0, 1.1, 1.2],
                        "coordination_ops": [90, 100, 110]}),
    wide_row(10, "dsbs", {"converge_s": [0.1, 0.2, 0.3], "coord_messages": [10, 10, 10],
                          "coordination_ops": [10, 10, 10]}),
    wide_row(100, "zk", {"converge_s": [10.0, 20.0, 30.0], "coordination_ops": [900, 1000,
                                                                                1100]}),
    wide_row(100, "dsbs", {"converge_s": [0.5, 1.0, 1.5], "coordination_ops": [40, 40, 40]}),
    # An A/A side never enters the tables.
    wide_row(100, "dsbs", {"converge_s": [99.0, 99.0, 99.0]}, side="A"),
])


def test_stats_have_the_t_interval_and_drop_what_a_side_did_not_measure():
    long = metadata_tables.metadata_stats(WIDE, DEFAULT)
    row = long[(long["n"] == 10) & (long["arch"] == "zk") & (long["metric"] == "converge_s")]
    (r,) = row.to_dict("records")
    assert r["mean"] == 2.0 and r["tries"] == 3 and r["sd"] == 1.0
    assert r["ci_lo"] == pytest.approx(2.0 - T975_2 / math.sqrt(3))
    assert r["ci_hi"] == pytest.approx(2.0 + T975_2 / math.sqrt(3))
    # No service on dsbs, a measure zk did not take, and A/A rows left out.
    assert long[(long["arch"] == "dsbs") & (long["metric"] == "service_cpu_s")].empty
    assert long[(long["arch"] == "zk") & (long["metric"] == "coord_messages")].empty
    assert 99.0 not in set(long["mean"])
    # Sizes ascend within a measure; zk before dsbs at each size.
    conv = long[long["metric"] == "converge_s"]
    assert list(zip(conv["n"], conv["arch"], strict=True)) == [
        (10, "zk"), (10, "dsbs"), (100, "zk"), (100, "dsbs")]


def test_comparison_puts_zk_beside_dsbs_with_the_ratio():
    long = metadata_tables.metadata_stats(WIDE, DEFAULT)
    cmp = metadata_tables.metadata_comparison(long, DEFAULT)
    (r,) = cmp[(cmp["n"] == 10) & (cmp["metric"] == "converge_s")].to_dict("records")
    assert r["ratio"] == pytest.approx(0.1)
    assert r["ratio_ci_lo"] < 0.1 < r["ratio_ci_hi"]
    (z,) = cmp[(cmp["n"] == 10) & (cmp["metric"] == "service_cpu_s")].to_dict("records")
    assert z["dsbs_sessions"] == 0 and z["dsbs_tries"] == 0 and math.isnan(z["ratio"])


def test_slope_is_the_exponent_of_a_power_law():
    assert metadata_tables.loglog_slope([1, 10, 100], [2, 20, 200]) == 1.0
    assert metadata_tables.loglog_slope([1, 10, 100], [5, 5, 5]) == 0.0
    assert metadata_tables.loglog_slope([10, 100], [1, 100]) == 2.0
    # Non-positive means are left out; one point has no slope.
    assert math.isnan(metadata_tables.loglog_slope([1, 10], [0.0, 3.0]))
    long = metadata_tables.metadata_stats(WIDE, DEFAULT)
    sc = metadata_tables.scaling(long, DEFAULT)
    ops = sc[sc["metric"] == "coordination_ops"].set_index("arch")["slope"]
    assert ops["zk"] == 1.0 and ops["dsbs"] == pytest.approx(math.log10(4), abs=1e-3)


@pytest.mark.filesystem
def test_report_section_and_figure(tmp_path: Path):
    long = metadata_tables.metadata_stats(WIDE, DEFAULT)
    tables = MetadataTables(stats=long,
                            comparison=metadata_tables.metadata_comparison(long, DEFAULT),
                            scaling=metadata_tables.scaling(long, DEFAULT), archs=DEFAULT)
    md = tables.section()
    assert "**storm** (topic-storm" in md and "| converged (s) | 10 | 2 ± 1 (3) |" in md
    assert "DSBS/ZK" in md and "How each cost grows with the size" in md
    line = tables.headline()
    assert line.startswith("- Metadata storm (n = 100, metadata): converged ZK 20 vs DSBS 1 s;")
    paths = tables.figures(tmp_path, DEFAULT)
    assert [p.name for p in paths] == ["metadata-storm.png", "metadata-storm.svg"]
    assert all(p.stat().st_size > 0 for p in paths)
    empty = MetadataTables()
    assert empty.empty and empty.tables() == {} and empty.figures(tmp_path, DEFAULT) == []
    assert "No metadata sessions" in empty.section()
    assert empty.headline() == ""
