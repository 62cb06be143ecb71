"""The ratio regression's band and verdicts on hand-made tables (no Spark)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
from scipy import stats as sps

from brokers.core.errors import UserError
from spark_analysis import regress


def comparison(ratios: dict[str, float], workload: str = "smoke",
               scenario: str = "split") -> pd.DataFrame:
    rows = []
    for cell_id, ratio in ratios.items():
        for metric in ("rps", "kbps"):
            rows.append({"workload": workload, "table": "size_grid", "cell_id": cell_id,
                         "scenario": scenario, "role": "production", "msg_size": 16,
                         "batch": 20, "offset_commit": "every_fetch",
                         "metadata_check": "per_request", "metric": metric, "ratio": ratio})
    return pd.DataFrame(rows)


def noise(zk: float | None = 0.03, dsbs: float | None = 0.04, cells: int = 8,
          workload: str = "smoke") -> pd.DataFrame:
    rows = [{"arch": a, "workload": workload, "cells": cells, "log_rms": s}
            for a, s in (("zk", zk), ("dsbs", dsbs)) if s is not None]
    return pd.DataFrame(rows)


BASE = {"c1": 2.0, "c2": 1.5, "c3": 1.0}


def test_band_is_derived_from_the_aa_noise_floor() -> None:
    band, detail = regress.derive_band(noise(), "smoke", cells=3, alpha=0.01)
    assert band.sigma_log == pytest.approx(0.05)  # sqrt(0.03^2 + 0.04^2)
    assert band.df == 16
    assert band.k == pytest.approx(sps.t.ppf(1 - 0.01 / 6, 16))
    assert band.half_width_log == pytest.approx(band.k * 0.05)
    assert detail["zk"]["measured"] and detail["dsbs"]["measured"]


def test_one_calibrated_architecture_stands_in_for_the_other() -> None:
    band, detail = regress.derive_band(noise(dsbs=None), "smoke", cells=3)
    assert band.sigma_log == pytest.approx(0.03 * math.sqrt(2))
    assert detail["dsbs"] == {"log_rms": 0.03, "cells": 0, "measured": False,
                              "assumed_from": "zk"}


def test_no_calibration_no_baseline() -> None:
    with pytest.raises(UserError, match="no A/A calibration runs for workload 'smoke'"):
        regress.build_baseline(comparison(BASE), noise(workload="aa"), ["r1"])


def test_workload_must_be_chosen_when_several() -> None:
    both = pd.concat([comparison(BASE), comparison(BASE, workload="paper")])
    with pytest.raises(UserError, match="several workloads"):
        regress.build_baseline(both, noise(), ["r1"])
    data = regress.build_baseline(both, noise(), ["r1"], workload="smoke")
    assert data["workload"] == "smoke"


@pytest.mark.filesystem
def test_baseline_round_trip_and_check(tmp_path: Path) -> None:
    path = regress.write_baseline(comparison(BASE), noise(), ["r2", "r1"], tmp_path)
    data = json.loads(path.read_text())
    assert data["runs"] == ["r1", "r2"]
    assert [c["cell_id"] for c in data["cells"]] == ["c1", "c2", "c3"]  # rps rows only
    h = data["band"]["half_width_log"]
    c1 = data["cells"][0]
    assert (c1["lo"], c1["hi"]) == pytest.approx((2.0 * math.exp(-h), 2.0 * math.exp(h)))

    ok, text = regress.run_check(comparison(BASE), tmp_path, tmp_path / "out")
    assert ok and "all within band" in text
    assert (tmp_path / "out" / "regression.csv").is_file()

    inside = {k: v * math.exp(0.9 * h) for k, v in BASE.items()}
    assert regress.run_check(comparison(inside), tmp_path)[0]

    moved = dict(BASE, c2=1.5 * math.exp(1.1 * h))
    ok, text = regress.run_check(comparison(moved), tmp_path)
    assert not ok
    assert "1 outside" in text and "REGRESSION c2" in text

    ok, text = regress.run_check(comparison({"c1": 2.0, "c2": 1.5}), tmp_path)
    assert not ok and "MISSING    c3" in text


@pytest.mark.filesystem
def test_fault_sessions_are_not_regressed(tmp_path: Path) -> None:
    """A comparison carrying fault-session rows (scenario `faults`, its own workload) neither
    makes the workload ambiguous nor enters the baseline, and a wild ratio there is no
    regression."""
    faults = comparison({"f1": 9.0}, workload="faults", scenario="faults")
    data = regress.build_baseline(pd.concat([comparison(BASE), faults]), noise(), ["r1"])
    assert data["workload"] == "smoke"
    assert [c["cell_id"] for c in data["cells"]] == ["c1", "c2", "c3"]
    regress.write_baseline(comparison(BASE), noise(), ["r1"], tmp_path)
    wild = comparison({"c1": 50.0}, workload="smoke", scenario="faults")
    ok, text = regress.run_check(pd.concat([comparison(BASE), wild]), tmp_path)
    assert ok, text


@pytest.mark.filesystem
def test_check_refuses_missing_or_foreign_baselines(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"no baseline here.*make baseline"):
        regress.load_baseline(tmp_path)
    (tmp_path / regress.BASELINE_FILE).write_text('{"kind": "x"}')
    with pytest.raises(UserError, match="not a twinbench ratio baseline"):
        regress.load_baseline(tmp_path)
    (tmp_path / regress.BASELINE_FILE).write_text(
        json.dumps({"kind": regress.BASELINE_KIND, "version": 99}))
    with pytest.raises(UserError, match="baseline version 99"):
        regress.load_baseline(tmp_path)
