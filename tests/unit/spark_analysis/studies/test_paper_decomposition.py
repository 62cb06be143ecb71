"""The decomposition table: DSBS/ZK through the Raft twin, each step with its interval, only
for cells all three architectures measured."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from spark_analysis.studies.paper import section
from spark_analysis.studies.paper.tables import DECOMPOSITION, decomposition


def _stats(means: dict[str, float], cells: tuple[int, ...] = (20,)) -> pd.DataFrame:
    rows = []
    for arch, mean in means.items():
        for batch in cells:
            for metric, scale in (("rps", 1.0), ("kbps", 0.032)):
                rows.append({"workload": "w", "table": "batch_sweep", "cell_id": f"b{batch}",
                             "scenario": "split", "role": "production", "msg_size": 32,
                             "batch": batch, "offset_commit": "every_fetch",
                             "metadata_check": "per_request", "arch": arch, "side": "*",
                             "metric": metric, "n": 5, "mean": mean * scale,
                             "sd": mean * scale * 0.05, "failed_rows": 0})
    return pd.DataFrame(rows)


def test_each_step_is_the_ratio_of_after_to_before_and_the_steps_multiply() -> None:
    dec = decomposition(_stats({"zk": 100.0, "raft": 150.0, "dsbs": 180.0}))
    rps = dec[dec["metric"] == "rps"]
    assert list(rps["step"]) == [s for s, _, _ in DECOMPOSITION]
    ratio = dict(zip(rps["step"], rps["ratio"], strict=True))
    external, consensus, both = (ratio[s] for s, _, _ in DECOMPOSITION)
    assert external == pytest.approx(1.5) and consensus == pytest.approx(1.2)
    assert both == pytest.approx(external * consensus)
    assert (rps["ratio_ci_lo"] < rps["ratio"]).all() and (rps["ratio"] < rps["ratio_ci_hi"]).all()
    assert math.isfinite(rps["p_welch"].iloc[0])


def test_nothing_without_all_three_and_only_cells_all_three_measured() -> None:
    assert decomposition(_stats({"zk": 100.0, "dsbs": 180.0})).empty
    both = pd.concat([_stats({"zk": 100.0, "raft": 150.0, "dsbs": 180.0}, cells=(20,)),
                      _stats({"zk": 100.0, "dsbs": 180.0}, cells=(50,))])
    assert set(decomposition(both)["batch"]) == {20}


def test_the_report_shows_it_in_records_per_second() -> None:
    dec = decomposition(_stats({"zk": 100.0, "raft": 150.0, "dsbs": 180.0}))
    md = section.decomposition_md(dec)
    assert "external service (ZooKeeper -> Raft)" in md and "1.5" in md
    assert md.count("\n|") == 1 + 3  # the separator line and one row per step (rps only)
