"""Metadata sessions (format 5): from the per-size aggregates to the report's tables.

* ``metadata_stats``: long, one row per case x size x architecture x measure - n, mean, sd
  and the 95% t interval over tries (``stats.t_interval``; n counts the tries that measured
  it, so a ZooKeeper column has n = 0 on dsbs and is dropped).
* ``metadata_comparison``: the baseline beside every other architecture (ZooKeeper beside
  DSBS) per case x size x measure, with the ratio of the means (DSBS/ZK) and its Fieller
  interval where both sides have one.
* ``scaling``: per case x architecture x measure, the log-log slope of the mean against the
  size (least squares over the sizes with a positive mean): 1 is linear growth, 0 none.

``HEADLINE`` says which measures each kind's table and figure show; the CSVs keep them all.
Only A/A-unlabelled sessions (side ``*``) enter these tables, as for the paper's comparison.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from spark_analysis import stats
from spark_analysis.archs import DEFAULT, Archs
from spark_analysis.schema import METADATA_KEY, METADATA_METRICS

# What each measure is called in the report and the figures.
METRIC_TITLES: dict[str, str] = {
    "create_s": "creation answered (s)",
    "create_p50_ms": "CreateTopics p50 (ms)",
    "converge_s": "converged (s)",
    "leave_s": "after the leave (s)",
    "metadata_p50_ms": "Metadata p50 (ms)",
    "commit_p50_ms": "OffsetCommit p50 (ms)",
    "commit_ops": "coordination msgs / commit",
    "coordination_ops": "coordination messages",
    "coord_messages": "coordination traffic (ZooKeeper requests, gossip packets)",
    "broker_cpu_s": "broker CPU (s)",
    "service_cpu_s": "service CPU (s)",
    "rss_max_bytes": "largest broker RSS (bytes)",
    "idle_ops_per_s": "idle coordination msgs / s",
    "idle_coord_messages_per_s": "idle coordination traffic / s",
}
# Per kind: the size's name and the measures its table and figure show, in order.
SIZE_TITLES: dict[str, str] = {
    "topic-storm": "topics created at once",
    "partition-scale": "partitions of one topic",
    "group-churn": "group members",
    "broker-join": "brokers before the join",
}
# At rest the zk brokers send nothing of their own (0 cannot be drawn on a log axis): their
# cost is ZooKeeper's, whose requests (the client library's pings) are the idle coordination
# traffic of their panel (coord_messages per second: gossip packets on dsbs).
HEADLINE: dict[str, tuple[str, ...]] = {
    "topic-storm": ("converge_s", "coordination_ops", "metadata_p50_ms", "idle_ops_per_s",
                    "idle_coord_messages_per_s"),
    "partition-scale": ("converge_s", "coordination_ops", "metadata_p50_ms", "rss_max_bytes",
                        "idle_ops_per_s", "idle_coord_messages_per_s"),
    "group-churn": ("converge_s", "leave_s", "commit_p50_ms", "commit_ops"),
    "broker-join": ("converge_s", "leave_s", "coordination_ops", "idle_ops_per_s",
                    "idle_coord_messages_per_s"),
}
# n is the size swept (METADATA_KEY); tries counts the sessions that measured the measure.
STATS_COLUMNS = [*METADATA_KEY, "arch", "metric", "sessions", "tries", "mean", "sd", "ci_lo",
                 "ci_hi"]
SCALING_COLUMNS = ["workload", "case", "kind", "arch", "metric", "sizes", "slope"]
_SIDE_COLUMNS = ("sessions", "tries", "mean", "sd", "ci_lo", "ci_hi")


def comparison_columns(archs: Archs = DEFAULT) -> list[str]:
    return [*METADATA_KEY, "metric", *(f"{a}_{c}" for a in archs.names for c in _SIDE_COLUMNS),
            "ratio", "ratio_ci_lo", "ratio_ci_hi"]


def _order(df: pd.DataFrame, archs: Archs = DEFAULT) -> pd.DataFrame:
    """Cases in name order, sizes ascending, architectures in their order, measures in
    METADATA_METRICS order."""
    if df.empty:
        return df.reset_index(drop=True)
    keys = df.assign(
        _a=df["arch"].map(archs.rank).fillna(9) if "arch" in df else 0,
        _m=df["metric"].map({m: i for i, m in enumerate(METADATA_METRICS)}).fillna(99),
    )
    order = [c for c in ["workload", "case", "kind", "_m", "n", "_a"] if c in keys]
    return keys.sort_values(order, kind="stable").drop(columns=["_a", "_m"]) \
        .reset_index(drop=True)


def metadata_stats(wide: pd.DataFrame, archs: Archs = DEFAULT) -> pd.DataFrame:
    """Long: one row per case x size x arch x measured measure, with the 95% t interval."""
    sub = wide[wide["side"] == "*"] if not wide.empty else wide
    rows = []
    for _, r in sub.iterrows():
        for m in METADATA_METRICS:
            tries = int(r[f"{m}__n"])
            if tries == 0:
                continue  # not measured on this architecture or for this kind
            mean = float(r[f"{m}__mean"])
            sd = float(r[f"{m}__sd"]) if tries > 1 and pd.notna(r[f"{m}__sd"]) else math.nan
            lo, hi = stats.t_interval(mean, sd, tries)
            rows.append({**{k: r[k] for k in METADATA_KEY}, "arch": r["arch"], "metric": m,
                         "sessions": int(r["sessions"]), "tries": tries, "mean": mean,
                         "sd": sd, "ci_lo": lo, "ci_hi": hi})
    return _order(pd.DataFrame(rows, columns=STATS_COLUMNS), archs)


def metadata_comparison(long: pd.DataFrame, archs: Archs = DEFAULT) -> pd.DataFrame:
    """The baseline beside each other architecture per case x size x measure, with the ratio
    of the means (other / baseline) and its Fieller interval."""
    columns = comparison_columns(archs)
    if long.empty:
        return pd.DataFrame(columns=columns)
    key = [*METADATA_KEY, "metric"]

    def side(arch: str) -> pd.DataFrame:
        part = long[long["arch"] == arch][[*key, *_SIDE_COLUMNS]]
        return part.rename(columns={c: f"{arch}_{c}" for c in _SIDE_COLUMNS})

    base = archs.baseline.name
    frames = []
    for other in (a.name for a in archs.others):
        out = side(base).merge(side(other), on=key, how="outer")
        for a in (base, other):
            out[f"{a}_sessions"] = out[f"{a}_sessions"].fillna(0).astype("int64")
            out[f"{a}_tries"] = out[f"{a}_tries"].fillna(0).astype("int64")
        ratio, lo, hi = [], [], []
        for _, r in out.iterrows():
            bn, bm, bs = r[f"{base}_tries"], r[f"{base}_mean"], r[f"{base}_sd"]
            on, om, os_ = r[f"{other}_tries"], r[f"{other}_mean"], r[f"{other}_sd"]
            both = bn > 0 and on > 0 and bm != 0
            ratio.append(om / bm if both else math.nan)
            f = stats.fieller(om, os_, on, bm, bs, bn) if both else (math.nan, math.nan)
            lo.append(f[0])
            hi.append(f[1])
        out["ratio"], out["ratio_ci_lo"], out["ratio_ci_hi"] = ratio, lo, hi
        frames.append(out)
    if not frames:
        return pd.DataFrame(columns=columns)
    out = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    return _order(out.reindex(columns=columns).assign(arch=None), archs).drop(columns=["arch"])


def loglog_slope(sizes: list[float], means: list[float]) -> float:
    """Least-squares slope of log(mean) on log(size) over the points with both positive;
    NaN with fewer than two such points."""
    pts = [(math.log(x), math.log(y)) for x, y in zip(sizes, means, strict=True)
           if x > 0 and y > 0 and math.isfinite(y)]
    if len({x for x, _ in pts}) < 2:
        return math.nan
    xs, ys = np.array([p[0] for p in pts]), np.array([p[1] for p in pts])
    # Rounded: a flat line's slope comes out as 1e-16, which reads as a number to a person.
    return round(float(np.polyfit(xs, ys, 1)[0]), 3) + 0.0


def scaling(long: pd.DataFrame, archs: Archs = DEFAULT) -> pd.DataFrame:
    """Per case x arch x measure: how the mean grows with the size (log-log slope)."""
    if long.empty:
        return pd.DataFrame(columns=SCALING_COLUMNS)
    rows = []
    for (workload, case, kind, arch, metric), g in long.groupby(
            ["workload", "case", "kind", "arch", "metric"], sort=False):
        g = g.sort_values("n")
        rows.append({"workload": workload, "case": case, "kind": kind, "arch": arch,
                     "metric": metric, "sizes": len(g),
                     "slope": loglog_slope(g["n"].astype(float).tolist(),
                                           g["mean"].astype(float).tolist())})
    return _order(pd.DataFrame(rows, columns=SCALING_COLUMNS), archs)
