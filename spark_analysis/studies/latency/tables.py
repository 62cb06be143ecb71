"""Latency at a given load (open-loop sessions, formats 3 and 4): from collected rows to the
report's tables.

* ``curves``: one row per open-loop cell (a target rate, or a fraction of the side's maximum
  sustainable rate) x architecture x policies: tries, the mean target and achieved rates,
  sessions that fell behind their schedule, and the end-to-end p50/p99 (mean over tries with
  its 95% t interval). The latency-throughput figure plots these against the achieved rate.
* ``max_rates``: one row per searched cell x architecture x side (label): the maximum
  sustainable rate over tries (n, mean, sd, 95% t interval, min, max) and the ratio of its
  mean to the baseline's (ZooKeeper) under the same label. A try whose search stopped at the
  load client's ceiling (``client_bound``) measured the client, not the brokers: the row then
  says how many tries did (``client_bound``), its mean is only a lower bound (``at_least``),
  it has no interval, and its ratio is a bound too (``ratio_bound``: ``>=`` when only this
  side was bound, ``<=`` when only the baseline was, empty ratio when both were).

Only A/A-unlabelled sessions (side ``*``) enter these tables, as for the paper's comparison.
A session that lost data keeps its latency out (its records never all arrived).
"""

from __future__ import annotations

import math

import pandas as pd

from spark_analysis import stats
from spark_analysis.archs import DEFAULT, Archs

# A cell's point without its rate: what a curve is drawn over.
CURVE_KEY = ["workload", "table", "msg_size", "batch", "offset_commit", "metadata_check"]
CURVE_COLUMNS = [*CURVE_KEY, "cell_id", "arch", "tries", "target_rate", "achieved_rate",
                 "behind", "consumed_rate", "e2e_p50_us", "e2e_p50_ci_lo", "e2e_p50_ci_hi",
                 "e2e_p99_us", "e2e_p99_ci_lo", "e2e_p99_ci_hi"]
MAX_RATE_COLUMNS = ["workload", "cell_id", "label", "arch", "n", "mean", "sd", "ci_lo",
                    "ci_hi", "min", "max", "ratio", "client_bound", "at_least", "ceiling",
                    "ratio_bound"]


def _client_bound(found: pd.DataFrame) -> pd.Series:
    """Per try: did the search stop at the ceiling? max_rate.csv version 2 says so; in
    version 1 an empty failed_rate meant the same."""
    empty_failed = (found["failed_rate"].isna() if "failed_rate" in found
                    else pd.Series(False, index=found.index))
    if "client_bound" not in found:
        return empty_failed
    given = found["client_bound"]
    return given.where(given.notna(), empty_failed).astype(bool)


def _mean_ci(values: pd.Series) -> tuple[float, float, float]:
    v = values.dropna().astype(float)
    if v.empty:
        return (math.nan, math.nan, math.nan)
    mean = float(v.mean())
    lo, hi = stats.t_interval(mean, float(v.std(ddof=1)) if len(v) > 1 else math.nan, len(v))
    return mean, lo, hi


def curves(rows: pd.DataFrame, archs: Archs = DEFAULT) -> pd.DataFrame:
    """``rows``: aggregate.open_loop's output."""
    if rows.empty:
        return pd.DataFrame(columns=CURVE_COLUMNS)
    main = rows[rows["side"] == "*"]
    out = []
    for key, g in main.groupby([*CURVE_KEY, "cell_id", "arch"], dropna=False, sort=False):
        prod = g[g["role"] == "production"]
        cons = g[(g["role"] == "consumption")
                 & (g["status"].fillna("ok") == "ok")]
        p50 = _mean_ci(cons["e2e_p50_us"])
        p99 = _mean_ci(cons["e2e_p99_us"])
        out.append({
            **dict(zip([*CURVE_KEY, "cell_id", "arch"], key, strict=True)),
            "tries": int(prod["try"].nunique()),
            "target_rate": float(prod["target_rate"].mean()),
            "achieved_rate": float(prod["achieved_rate"].mean()),
            "behind": int(prod["behind"].fillna(False).astype(bool).sum()),
            "consumed_rate": float(cons["rps"].mean()) if not cons.empty else math.nan,
            "e2e_p50_us": p50[0], "e2e_p50_ci_lo": p50[1], "e2e_p50_ci_hi": p50[2],
            "e2e_p99_us": p99[0], "e2e_p99_ci_lo": p99[1], "e2e_p99_ci_hi": p99[2],
        })
    df = pd.DataFrame(out, columns=CURVE_COLUMNS)
    df["_a"] = df["arch"].map(archs.rank).fillna(9)
    return (df.sort_values([*CURVE_KEY, "_a", "target_rate"]).drop(columns="_a")
            .reset_index(drop=True))


def max_rates(found: pd.DataFrame, archs: Archs = DEFAULT) -> pd.DataFrame:
    """``found``: max_rate.csv rows (with the loader's ``workload`` and ``side``)."""
    if found.empty:
        return pd.DataFrame(columns=MAX_RATE_COLUMNS)
    main = found[found["side"] == "*"]
    main = main.assign(_bound=_client_bound(main))
    out = []
    for (workload, cell, label, arch), g in main.groupby(
            ["workload", "cell_id", "label", "arch"], dropna=False, sort=False):
        v = g["kept_rate"].astype(float)
        bound = int(g["_bound"].sum())
        sd = float(v.std(ddof=1)) if len(v) > 1 else math.nan
        # A client-bound try is a lower bound, not a sample: no interval over it.
        lo, hi = stats.t_interval(float(v.mean()), sd, len(v)) if not bound else (math.nan,
                                                                                 math.nan)
        ceiling = (float(g["ceiling"].max()) if "ceiling" in g and g["ceiling"].notna().any()
                   else math.nan)
        out.append({"workload": workload, "cell_id": cell, "label": label, "arch": arch,
                    "n": len(v), "mean": float(v.mean()), "sd": sd, "ci_lo": lo, "ci_hi": hi,
                    "min": float(v.min()), "max": float(v.max()), "ratio": math.nan,
                    "client_bound": bound, "at_least": bool(bound), "ceiling": ceiling,
                    "ratio_bound": ""})
    df = pd.DataFrame(out, columns=MAX_RATE_COLUMNS)
    base = archs.baseline.name
    for i, r in df.iterrows():
        ref = df[(df["workload"] == r["workload"]) & (df["cell_id"] == r["cell_id"])
                 & (df["label"] == r["label"]) & (df["arch"] == base)]
        if ref.empty or not ref["mean"].iloc[0] > 0:
            continue
        mine, theirs = bool(r["at_least"]), bool(ref["at_least"].iloc[0])
        if mine and theirs and r["arch"] != base:
            continue  # both at the client's ceiling: nothing is known of their ratio
        df.loc[i, "ratio"] = r["mean"] / ref["mean"].iloc[0]
        if r["arch"] != base and mine != theirs:
            df.loc[i, "ratio_bound"] = ">=" if mine else "<="
    df["_a"] = df["arch"].map(archs.rank).fillna(9)
    return (df.sort_values(["workload", "cell_id", "label", "_a"]).drop(columns="_a")
            .reset_index(drop=True))
