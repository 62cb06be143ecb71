"""Fault sessions (format 2): from the collected per-case aggregates to the report's tables.

* ``fault_stats``: long, one row per case x architecture x duration - n, mean, sd and the 95%
  t interval over tries (``stats.t_interval``; n counts the tries where the duration was
  observed, so a case that never unsettles the consumer group still has n group_recovery_s
  values of 0, while a ZooKeeper outage has no detection_s at all).
* ``fault_outcomes``: one row per case x architecture - sessions, failed sessions and the sums
  of lost, duplicates, unreachable and produce_errors; ``status`` is ``failed`` as soon as one
  session lost acknowledged records.
* ``fault_comparison``: the baseline beside every other architecture (ZooKeeper beside DSBS)
  for every case x duration, with the ratio of the means (DSBS/ZK) and its Fieller interval
  where both sides have one. A case run on one architecture only (stop-zookeeper has no DSBS
  counterpart) keeps its row; the other side has 0 sessions, which the report prints as "n/a".
  With more than one other architecture, one block of rows per pair.

Only A/A-unlabelled sessions (side ``*``) enter these tables, as for the paper's comparison.
"""

from __future__ import annotations

import math

import pandas as pd

from spark_analysis import stats
from spark_analysis.archs import DEFAULT, Archs
from spark_analysis.schema import FAULT_COUNTS, FAULT_KEY, FAULT_METRICS

# What each duration is called in the report.
METRIC_TITLES: dict[str, str] = {
    "detection_s": "detection",
    "rejoin_s": "rejoin",
    "produce_gap_s": "unavailability (longest produce gap)",
    "consume_gap_s": "longest consume gap",
    "commit_gap_s": "longest commit gap",
    "group_recovery_s": "group recovery",
}
STATS_COLUMNS = [*FAULT_KEY, "arch", "metric", "sessions", "n", "mean", "sd", "ci_lo", "ci_hi"]
OUTCOME_COLUMNS = [*FAULT_KEY, "arch", "runs", "sessions", "failed_sessions", "rate", "sent",
                   "acked", "consumed", *FAULT_COUNTS, "group_rebalances", "hit_controller",
                   "hit_coordinator", "status"]
_SIDE_COLUMNS = ("sessions", "n", "mean", "sd", "ci_lo", "ci_hi")


def comparison_columns(archs: Archs = DEFAULT) -> list[str]:
    return [*FAULT_KEY, "metric", *(f"{a}_{c}" for a in archs.names for c in _SIDE_COLUMNS),
            "ratio", "ratio_ci_lo", "ratio_ci_hi"]


def with_keys(df: pd.DataFrame) -> pd.DataFrame:
    """The key columns as plain strings, empty for null: the tables, the figures and their CSVs
    match sessions, buckets and events on them, and NaN never equals NaN."""
    if df.empty:
        return df
    return df.assign(**{k: df[k].fillna("").astype(str) for k in FAULT_KEY if k in df})


def with_policies(df: pd.DataFrame, sessions: pd.DataFrame) -> pd.DataFrame:
    """timeline / events rows with their session's policies (from faults.csv), so they carry
    the full FAULT_KEY. A row whose session has no faults.csv row keeps empty policies."""
    if df.empty:
        return df
    key = ["run_id", "arch", "cell_id", "case", "try"]
    policies = sessions[[*key, "offset_commit", "metadata_check"]].drop_duplicates(key)
    return with_keys(df.merge(policies, on=key, how="left"))


PARTITION_COLUMNS = [*FAULT_KEY, "arch", "partition", "sessions", "leaderless_sessions",
                     "acked", "lost", "unreachable", "duplicates"]


def fault_partitions(rows: pd.DataFrame, archs: Archs = DEFAULT) -> pd.DataFrame:
    """One row per case x arch x partition: sessions, how many ended with the partition
    leaderless, and the records acknowledged, lost, unreachable and duplicated there (sums
    over tries). ``rows``: fault_partitions.csv with its sessions' keys (with_policies)."""
    sub = _main_side(rows)
    if sub.empty:
        return pd.DataFrame(columns=PARTITION_COLUMNS)
    sub = sub.assign(leaderless=~sub["leader_at_end"].astype(bool))
    group = [*FAULT_KEY, "arch", "partition"]
    out = sub.groupby(group, dropna=False).agg(
        sessions=("try", "size"), leaderless_sessions=("leaderless", "sum"),
        acked=("acked", "sum"), lost=("lost", "sum"), unreachable=("unreachable", "sum"),
        duplicates=("duplicates", "sum")).reset_index()
    for c in ("sessions", "leaderless_sessions", "acked", "lost", "unreachable", "duplicates"):
        out[c] = out[c].astype("int64")
    return _order(out[PARTITION_COLUMNS], ["_a", "partition"], archs)


def _main_side(wide: pd.DataFrame) -> pd.DataFrame:
    if wide.empty:
        return wide
    return wide[wide["side"] == "*"].drop(columns=["side"])


def _order(df: pd.DataFrame, extra: list[str], archs: Archs = DEFAULT) -> pd.DataFrame:
    """Cases in name order, architectures in their order (ZooKeeper before DSBS), durations in
    report order."""
    if df.empty:
        return df.reset_index(drop=True)
    keys = df.assign(
        _a=df["arch"].map(archs.rank).fillna(9) if "arch" in df else 0,
        _m=df["metric"].map({m: i for i, m in enumerate(FAULT_METRICS)}).fillna(9)
        if "metric" in df else 0,
    )
    order = [c for c in [*FAULT_KEY, *extra] if c in keys]
    return keys.sort_values(order, kind="stable", na_position="first") \
        .drop(columns=["_a", "_m"]).reset_index(drop=True)


def fault_stats(wide: pd.DataFrame, archs: Archs = DEFAULT) -> pd.DataFrame:
    """Long: one row per case x arch x duration with n, mean, sd and the 95% t interval."""
    sub = _main_side(wide)
    if sub.empty:
        return pd.DataFrame(columns=STATS_COLUMNS)
    rows = []
    for _, r in sub.iterrows():
        for m in FAULT_METRICS:
            n = int(r[f"{m}__n"])
            mean = float(r[f"{m}__mean"]) if n else math.nan
            sd = float(r[f"{m}__sd"]) if n > 1 else math.nan
            lo, hi = stats.t_interval(mean, sd, n)
            rows.append({**{k: r[k] for k in FAULT_KEY}, "arch": r["arch"], "metric": m,
                         "sessions": int(r["sessions"]), "n": n, "mean": mean, "sd": sd,
                         "ci_lo": lo, "ci_hi": hi})
    return _order(pd.DataFrame(rows, columns=STATS_COLUMNS), ["_a", "_m"], archs)


def fault_outcomes(wide: pd.DataFrame, archs: Archs = DEFAULT) -> pd.DataFrame:
    """One row per case x arch: sessions, failures and the summed data-integrity counters."""
    sub = _main_side(wide)
    if sub.empty:
        return pd.DataFrame(columns=OUTCOME_COLUMNS)
    out = sub.copy()
    lost = out["lost"].fillna(0)
    out["status"] = ["failed" if (f > 0 or lo > 0) else "ok"
                     for f, lo in zip(out["failed_sessions"], lost, strict=True)]
    return _order(out[OUTCOME_COLUMNS], ["_a"], archs)


def fault_comparison(long: pd.DataFrame, archs: Archs = DEFAULT) -> pd.DataFrame:
    """The baseline beside each other architecture per case x duration (outer: one-sided
    cases keep their row, the side that did not run has 0 sessions), with the pair's ratio.
    Several other architectures: one block of rows per pair."""
    columns = comparison_columns(archs)
    if long.empty:
        return pd.DataFrame(columns=columns)
    key = [*FAULT_KEY, "metric"]

    def side(arch: str) -> pd.DataFrame:
        part = long[long["arch"] == arch][[*key, *_SIDE_COLUMNS]]
        return part.rename(columns={c: f"{arch}_{c}" for c in _SIDE_COLUMNS})

    base = archs.baseline.name
    frames = []
    for other in (a.name for a in archs.others):
        out = side(base).merge(side(other), on=key, how="outer")
        for a in (base, other):
            out[f"{a}_sessions"] = out[f"{a}_sessions"].fillna(0).astype("int64")
            out[f"{a}_n"] = out[f"{a}_n"].fillna(0).astype("int64")
        b_, o_ = (zip(*(out[f"{a}_{c}"] for c in ("n", "mean", "sd")), strict=True)
                  for a in (base, other))
        ratio, lo, hi = [], [], []
        for (bn, bm, bs), (on, om, os_) in zip(b_, o_, strict=True):
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
    # A pair's rows leave a third architecture's columns empty (that is how a reader tells the
    # pairs apart); an architecture of no pair has columns all the same.
    return _order(out.reindex(columns=columns), ["_m"], archs)


def case_labels(df: pd.DataFrame) -> tuple[dict[tuple[str, ...], str], pd.Series | None]:
    """How to name each case (a FAULT_KEY) in tables and figures: its bare name when every
    session ran under one workload / cell / policy setting (returned second, to say once),
    otherwise qualified by that setting."""
    keys = df[list(FAULT_KEY)].drop_duplicates()
    # A fault session's cell_id is named after its case (kill-leader-32B-b20): compare the
    # cells without that prefix, or every case would look like a setting of its own.
    bare = keys.assign(cell_id=[c.removeprefix(f"{k}-") for c, k in
                                zip(keys["cell_id"], keys["case"], strict=True)])
    settings = bare[[k for k in FAULT_KEY if k != "case"]].drop_duplicates()
    one = len(settings) == 1
    names: dict[tuple[str, ...], str] = {}
    for row in keys.itertuples(index=False):
        r = dict(zip(FAULT_KEY, row, strict=True))
        names[tuple(row)] = r["case"] if one else (
            f"{r['case']} ({r['workload']} {r['cell_id']}, {r['offset_commit']}, "
            f"{r['metadata_check']})")
    return names, (settings.iloc[0] if one else None)
