"""The exactly-once study's tables (pandas), from transactions.csv's rows.

* ``per_session``: each session's costs per unit of work: a transaction, or without
  transactions the same batches up to a flush (``units``): coordination messages (the
  architecture's own traffic column and every coordinator's ``coordination_ops``),
  WriteTxnMarkers requests, broker CPU.
* ``transactions_stats``: long, per workload x record size x batch x shape x batches per
  transaction x with or without x architecture x measure: n, mean, sd and the 95% t interval
  over tries (one session per try).
* ``throughput``: per cell and architecture, records/s in transactions over records/s without
  (Fieller 95% interval, Welch's p): 0.4 = transactions kept 40% of the rate.
"""

from __future__ import annotations

import math

import pandas as pd

from spark_analysis import stats
from spark_analysis.archs import DEFAULT, Archs

# A cell of the study: the workload, the batch (size and records), the shape and the
# transaction size; ``transactional`` and ``arch`` then make the sides of its tables.
KEY = ["workload", "msg_size", "batch", "shape", "txn_batches"]
# Measures summarised over tries, and what the report calls them.
METRIC_TITLES: dict[str, str] = {
    "rps": "records/s",
    "commit_p50_ms": "commit p50 (ms)",
    "commit_p99_ms": "commit p99 (ms)",
    "coord_messages_per_unit": "coordination traffic / unit",
    "coordination_ops_per_unit": "coordination messages / unit",
    "write_txn_markers_per_unit": "WriteTxnMarkers / unit",
    "broker_cpu_ms_per_unit": "broker CPU ms / unit",
    "read_s": "all read after (s)",
}
STATS_COLUMNS = [*KEY, "transactional", "arch", "metric", "n", "mean", "sd", "ci_lo", "ci_hi"]
_STATS = ("n", "mean", "sd")
THROUGHPUT_COLUMNS = [*KEY, "arch",
                      *(f"{p}_{c}" for p in ("txn", "plain")
                        for c in (*_STATS, "ci_lo", "ci_hi")),
                      "ratio", "ratio_ci_lo", "ratio_ci_hi", "p_welch"]
# Shapes in the order the report shows them.
SHAPE_ORDER = {"produce": 0, "ctp": 1}


def per_session(rows: pd.DataFrame) -> pd.DataFrame:
    """``rows`` with each session's costs per unit (NaN where a counter was not read)."""
    out = rows.copy()
    units = pd.to_numeric(out["units"], errors="coerce").where(lambda u: u > 0)
    for column in ("coord_messages", "coordination_ops", "write_txn_markers"):
        out[f"{column}_per_unit"] = pd.to_numeric(out[column], errors="coerce") / units
    out["broker_cpu_ms_per_unit"] = pd.to_numeric(out["broker_cpu_s"],
                                                  errors="coerce") * 1000 / units
    return out


def _order(df: pd.DataFrame, archs: Archs) -> pd.DataFrame:
    if df.empty:
        return df.reset_index(drop=True)
    keys = df.assign(
        _shape=df["shape"].map(SHAPE_ORDER).fillna(9),
        _a=df["arch"].map(archs.rank),
        _t=(~df["transactional"].astype(bool)).astype(int) if "transactional" in df else 0,
        _m=df["metric"].map({m: i for i, m in enumerate(METRIC_TITLES)}).fillna(99)
        if "metric" in df else 0)
    order = ["workload", "msg_size", "batch", "_a", "_shape", "txn_batches", "_t", "_m"]
    return keys.sort_values(order, kind="stable").drop(columns=["_shape", "_a", "_t", "_m"]) \
        .reset_index(drop=True)


def transactions_stats(sessions: pd.DataFrame, archs: Archs = DEFAULT) -> pd.DataFrame:
    """Long: n, mean, sd and the 95% t interval of every measure over the tries of each cell,
    side and architecture (a measure no try has is left out)."""
    if sessions.empty:
        return pd.DataFrame(columns=STATS_COLUMNS)
    out = []
    for (*key, transactional, arch), g in sessions.groupby([*KEY, "transactional", "arch"],
                                                           sort=False):
        for metric in METRIC_TITLES:
            v = pd.to_numeric(g[metric], errors="coerce").dropna()
            if v.empty:
                continue
            n = len(v)
            mean = float(v.mean())
            sd = float(v.std(ddof=1)) if n > 1 else math.nan
            lo, hi = stats.t_interval(mean, sd, n)
            out.append({**dict(zip(KEY, key, strict=True)), "transactional": bool(transactional),
                        "arch": arch, "metric": metric, "n": n, "mean": mean, "sd": sd,
                        "ci_lo": lo, "ci_hi": hi})
    return _order(pd.DataFrame(out, columns=STATS_COLUMNS), archs)


def throughput(long: pd.DataFrame, archs: Archs = DEFAULT) -> pd.DataFrame:
    """Per cell and architecture: records/s in transactions over records/s without."""
    if long.empty:
        return pd.DataFrame(columns=THROUGHPUT_COLUMNS)
    rps = long[long["metric"] == "rps"].assign(
        side=lambda d: d["transactional"].map({True: "txn", False: "plain"}))
    pair = stats.pair(rps, [*KEY, "arch"], "side", ("txn", "txn"), ("plain", "plain"))
    if pair.empty:
        return pd.DataFrame(columns=THROUGHPUT_COLUMNS)
    return _order(stats.ratio_columns(pair, "txn", "plain")[THROUGHPUT_COLUMNS], archs)
