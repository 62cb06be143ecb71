"""spark_analysis.studies.security.tables on hand-made per-cell statistics (pandas only, no
Spark)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from spark_analysis import stats
from spark_analysis.studies.security import tables as security_tables


def _stat(arch: str, security: str, mean: float, sd: float, n: int = 4, side: str = "*",
          metric: str = "rps", role: str = "production") -> dict[str, object]:
    return {"workload": "security", "table": "security", "cell_id": "security-32B-b20",
            "scenario": "split", "role": role, "msg_size": 32, "batch": 20,
            "offset_commit": "every_fetch", "metadata_check": "per_request", "arch": arch,
            "side": side, "security": security, "metric": metric, "n": n, "mean": mean,
            "sd": sd}


LONG = pd.DataFrame([
    _stat("zk", "none", 1000.0, 50.0), _stat("zk", "sasl_ssl", 600.0, 30.0),
    _stat("dsbs", "none", 2000.0, 100.0), _stat("dsbs", "sasl_ssl", 1500.0, 60.0),
    # An A/A side and a cell measured plaintext only never pair.
    _stat("zk", "sasl_ssl", 1.0, 1.0, side="A"),
    _stat("zk", "none", 900.0, 10.0, role="consumption"),
])


def test_cost_is_secured_over_plaintext_per_architecture() -> None:
    out = security_tables.cost(LONG)
    assert set(out["arch"]) == {"zk", "dsbs"}
    assert len(out) == 2 and set(out["security"]) == {"sasl_ssl"}
    z = out[out["arch"] == "zk"].iloc[0]
    assert z["ratio"] == pytest.approx(0.6)
    assert (z["ratio_ci_lo"], z["ratio_ci_hi"]) == pytest.approx(
        stats.fieller(600.0, 30.0, 4, 1000.0, 50.0, 4))
    assert z["p_welch"] == pytest.approx(stats.welch(600.0, 30.0, 4, 1000.0, 50.0, 4).p)
    assert (z["plain_ci_lo"], z["plain_ci_hi"]) == pytest.approx(
        stats.t_interval(1000.0, 50.0, 4))
    d = out[out["arch"] == "dsbs"].iloc[0]
    assert d["ratio"] == pytest.approx(0.75)
    assert d["ratio_ci_lo"] < 0.75 < d["ratio_ci_hi"]


def test_between_compares_the_architectures_at_every_level() -> None:
    out = security_tables.between(LONG)
    assert {(r["security"], r["base"], r["other"]) for _, r in out.iterrows()} == {
        ("none", "zk", "dsbs"), ("sasl_ssl", "zk", "dsbs")}
    ratios = dict(zip(out["security"], out["ratio"], strict=True))
    assert ratios == pytest.approx({"none": 2.0, "sasl_ssl": 2.5})


def test_nothing_to_pair_gives_empty_tables() -> None:
    plain_only = LONG[LONG["security"] == "none"]
    assert security_tables.cost(plain_only).empty
    assert security_tables.cost(pd.DataFrame()).empty
    assert security_tables.between(pd.DataFrame()).empty
    one = security_tables.cost(pd.DataFrame([_stat("zk", "none", 10.0, 1.0, n=1),
                                             _stat("zk", "tls", 8.0, 1.0, n=1)]))
    assert one.iloc[0]["ratio"] == pytest.approx(0.8) and math.isnan(one.iloc[0]["ratio_ci_lo"])
