"""The paper's order of rows, shared by every table that lists cells: split before streaming,
production before consumption, rps before kbps (the paper study's tables and the security
study's, which compares the same cells on secured clusters)."""

from __future__ import annotations

import pandas as pd

SCENARIO_ORDER = {"split": 0, "streaming": 1}
ROLE_ORDER = {"production": 0, "consumption": 1}
METRIC_ORDER = {"rps": 0, "kbps": 1}


def paper_order(df: pd.DataFrame, extra: list[str] | None = None) -> pd.DataFrame:
    """Paper order: split before streaming, production before consumption, rps before kbps."""
    if df.empty:
        return df
    keys = df.assign(
        _s=df["scenario"].map(SCENARIO_ORDER).fillna(9),
        _r=df["role"].map(ROLE_ORDER).fillna(9) if "role" in df else 0,
        _m=df["metric"].map(METRIC_ORDER).fillna(9) if "metric" in df else 0,
    )
    order = [c for c in ["workload", "table", "offset_commit", "metadata_check", *(extra or []),
                         "_s", "_r", "_m", "msg_size", "batch"] if c in keys]
    return keys.sort_values(order, kind="stable").drop(columns=["_s", "_r", "_m"]) \
        .reset_index(drop=True)
