"""What listener security costs each architecture (workloads with ``security:``, format 8).

A workload that sweeps ``security: [none, sasl_ssl]`` runs every cell on a plaintext and a
secured cluster of each architecture, interleaved (harness/driver/plan.py); the run manifests
say which (``policies.security``). From the per-cell statistics of those workloads
(aggregate.security_stats: n, mean, sd over tries of throughput and latency percentiles):

* ``cost``: per cell x architecture x secured level, the secured mean over the plaintext mean
  (Fieller 95% interval, Welch's p): 0.6 = security kept 60% of the records/s; 1.4 = latency
  40% higher;
* ``between``: per cell x security level (plaintext included), every other architecture over
  the baseline (DSBS/ZK), so whether security narrows or widens the gap is read off one row.
"""

from __future__ import annotations

import pandas as pd

from spark_analysis import stats
from spark_analysis.archs import DEFAULT, Archs
from spark_analysis.order import paper_order
from spark_analysis.schema import CELL_KEY

# How the report names the metrics of aggregate.SECURITY_METRICS (this study's).
METRIC_TITLES = {"rps": "records/s", "lat_p50_us": "request p50 (µs)",
                 "lat_p99_us": "request p99 (µs)", "e2e_p50_us": "end-to-end p50 (µs)",
                 "e2e_p99_us": "end-to-end p99 (µs)"}
_STATS = ("n", "mean", "sd")


def _prefixed(df: pd.DataFrame, prefix: str) -> pd.DataFrame:
    return df.rename(columns={c: f"{prefix}_{c}" for c in _STATS})


def cost(long: pd.DataFrame) -> pd.DataFrame:
    """Secured over plaintext, per cell x architecture x secured level x metric."""
    if long.empty:
        return pd.DataFrame()
    key = [*CELL_KEY, "arch", "metric"]
    mine = long[long["side"] == "*"]
    plain = _prefixed(mine[mine["security"] == "none"][[*key, *_STATS]], "plain")
    secured = _prefixed(mine[mine["security"] != "none"][[*key, "security", *_STATS]],
                        "secured")
    pair = secured.merge(plain, on=key, how="inner")
    if pair.empty:
        return pd.DataFrame()
    out = stats.ratio_columns(pair, "secured", "plain")
    cols = [*key[:-1], "security", "metric",
            *(f"{p}_{c}" for p in ("plain", "secured") for c in (*_STATS, "ci_lo", "ci_hi")),
            "ratio", "ratio_ci_lo", "ratio_ci_hi", "p_welch"]
    return paper_order(out[cols], extra=["security", "arch"])


def between(long: pd.DataFrame, archs: Archs = DEFAULT) -> pd.DataFrame:
    """Every other architecture over the baseline, per cell x security level x metric."""
    if long.empty:
        return pd.DataFrame()
    key = [*CELL_KEY, "security", "metric"]
    mine = long[long["side"] == "*"]
    base = archs.baseline
    frames = []
    for other in archs.others:
        pair = (_prefixed(mine[mine["arch"] == other.name][[*key, *_STATS]], "other")
                .merge(_prefixed(mine[mine["arch"] == base.name][[*key, *_STATS]], "base"),
                       on=key, how="inner"))
        if pair.empty:
            continue
        out = stats.ratio_columns(pair, "other", "base")
        out.insert(0, "other", other.name)
        out.insert(0, "base", base.name)
        frames.append(out)
    if not frames:
        return pd.DataFrame()
    return pd.concat(frames, ignore_index=True)
