"""spark_analysis.studies.clients on hand-made per-cell statistics (pandas only, no Spark)."""

from __future__ import annotations

import pandas as pd
import pytest

from spark_analysis import stats
from spark_analysis.studies.clients import section
from spark_analysis.studies.clients import tables as client_tables


def _stat(arch: str, client: str, mean: float, sd: float, n: int = 5,
          role: str = "production") -> dict[str, object]:
    return {"workload": "kafka-clients", "table": "batch_sweep", "cell_id": "batch_sweep-32B-b20",
            "scenario": "split", "role": role, "msg_size": 32, "batch": 20,
            "offset_commit": "interval_ms:1000", "metadata_check": "cached", "arch": arch,
            "client": client, "n": n, "mean": mean, "sd": sd}


LONG = pd.DataFrame([
    _stat("zk", "twinbench", 100_000.0, 5_000.0), _stat("zk", "kafka-perf", 50_000.0, 2_000.0),
    _stat("kafka-kraft", "twinbench", 40_000.0, 1_000.0),
    _stat("kafka-kraft", "kafka-perf", 60_000.0, 3_000.0),
    # Measured by one client only: no pair.
    _stat("dsbs", "twinbench", 1.0, 1.0, role="consumption"),
])


def test_the_tools_are_set_over_our_client_per_cell_and_architecture() -> None:
    out = client_tables.compare(LONG)
    assert sorted(out["arch"]) == ["kafka-kraft", "zk"]
    z = out[out["arch"] == "zk"].iloc[0]
    assert z["ratio"] == pytest.approx(0.5)
    assert (z["ratio_ci_lo"], z["ratio_ci_hi"]) == pytest.approx(
        stats.fieller(50_000.0, 2_000.0, 5, 100_000.0, 5_000.0, 5))
    assert z["p_welch"] == pytest.approx(stats.welch(50_000.0, 2_000.0, 5, 100_000.0,
                                                     5_000.0, 5).p)
    k = out[out["arch"] == "kafka-kraft"].iloc[0]
    assert k["ratio"] == pytest.approx(1.5) and k["ratio_ci_lo"] > 1


def test_the_section_shows_both_clients_and_says_when_there_is_nothing() -> None:
    text = section.clients_md(client_tables.compare(LONG))
    assert "Kafka's tools" in text and "0.5 [" in text
    assert "No workload ran" in section.clients_md(pd.DataFrame())
    assert client_tables.compare(pd.DataFrame()).empty
