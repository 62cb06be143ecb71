"""Kafka's perf tools over our load client, per cell and architecture.

``compare``: one row per cell (CELL_KEY) x architecture with both clients' records/s (n, mean,
sd, 95% t interval) and ``ratio`` = tools / ours of the means, Fieller's 95% interval and
Welch's p. Above 1: Kafka's Java tools moved more records per second through the same cluster
than our client did, so part of what our client measures there is the client.
"""

from __future__ import annotations

import pandas as pd

from spark_analysis import stats
from spark_analysis.order import paper_order
from spark_analysis.schema import CELL_KEY
from spark_analysis.studies.clients.aggregate import OURS, TOOLS

_STATS = ("n", "mean", "sd")


def compare(long: pd.DataFrame) -> pd.DataFrame:
    if long.empty:
        return pd.DataFrame()
    key = [*CELL_KEY, "arch"]

    pair = stats.pair(long, key, "client", (TOOLS, "tools"), (OURS, "ours"))
    if pair.empty:
        return pd.DataFrame()
    out = stats.ratio_columns(pair, "tools", "ours")
    cols = [*key, *(f"{p}_{c}" for p in ("ours", "tools") for c in (*_STATS, "ci_lo", "ci_hi")),
            "ratio", "ratio_ci_lo", "ratio_ci_hi", "p_welch"]
    return paper_order(out[cols], extra=["arch"])
