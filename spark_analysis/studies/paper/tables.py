"""The paper study's tables: from the collected aggregates to the report's tables (pandas,
small).

* ``appendix``: the paper's appendix layout - rows scenario x role x metric, columns
  message size (or batch) x try 1..n + avg - one per architecture.
* ``comparison``: every cell, the baseline (ZK) beside every other architecture (DSBS) with
  intervals, the ratio and its test, the paper's ratio beside ours.
* ``decomposition``: DSBS/ZK split in two steps through the Raft twin: ZooKeeper to Raft (the
  external service dropped, consensus kept inside the brokers), Raft to DSBS (consensus
  dropped), each with its interval.
* ``aa_calibration`` / ``noise_floor``: the A/A runs' B/A ratios - the measured noise floor.
* ``latency`` / ``latency_distribution``: percentiles per cell; merged HDR curves.
"""

from __future__ import annotations

import math

import pandas as pd
from hdrh.histogram import HdrHistogram
from scipy.stats import false_discovery_control

from spark_analysis import stats
from spark_analysis.archs import DEFAULT, Archs
from spark_analysis.order import METRIC_ORDER, ROLE_ORDER, SCENARIO_ORDER, paper_order
from spark_analysis.schema import AA_LABELS, CELL_KEY, PAPER_POLICY
from spark_analysis.studies.paper.printed import PAPER_ARCHS, PAPER_COLUMNS, PAPER_KEY

PAPER_TABLES = ("size_grid", "batch_sweep")


def primary_group(df: pd.DataFrame, table: str) -> tuple[str, str, str] | None:
    """Which (workload, offset_commit, metadata_check) represents ``table`` in the paper-layout
    tables and figures: the paper's policies if any run used them, then the most rows."""
    sub = df[(df["table"] == table) & (df["side"] == "*")]
    if sub.empty:
        return None
    counts = sub.groupby(["workload", "offset_commit", "metadata_check"], dropna=False).size()
    ranked = sorted(counts.items(),
                    key=lambda kv: (tuple(kv[0][1:]) != PAPER_POLICY, -kv[1], str(kv[0])))
    workload, offset_commit, metadata_check = ranked[0][0]
    return str(workload), str(offset_commit), str(metadata_check)


def appendix(tries: pd.DataFrame, cell_stats: pd.DataFrame, table: str, arch: str
             ) -> pd.DataFrame:
    """The paper's appendix layout for one grid and one architecture (empty if no data)."""
    group = primary_group(cell_stats, table)
    if group is None:
        return pd.DataFrame()
    workload, oc, mc = group

    def pick(df: pd.DataFrame) -> pd.DataFrame:
        return df[(df["table"] == table) & (df["arch"] == arch) & (df["side"] == "*")
                  & (df["workload"] == workload) & (df["offset_commit"] == oc)
                  & (df["metadata_check"] == mc)]

    t = pick(tries)
    s = pick(cell_stats)
    if s.empty:
        return pd.DataFrame()
    axis = "batch" if table == "batch_sweep" else "msg_size"
    def label(value: object) -> str:
        return f"b{value}" if axis == "batch" else f"{value}B"

    columns: list[str] = []
    rows: dict[tuple[str, str, str], dict[str, float]] = {}
    n_tries = int(t["try"].max()) if not t.empty else 0
    for value in sorted(s[axis].unique()):
        columns += [f"{label(value)} try {k}" for k in range(1, n_tries + 1)]
        columns.append(f"{label(value)} avg")
    # "try" is a Python keyword, so itertuples() would rename it; zip the columns instead.
    for scen, role, metric, ax, k, value in zip(t["scenario"], t["role"], t["metric"], t[axis],
                                                t["try"], t["value"], strict=True):
        rows.setdefault((scen, role, metric), {})[f"{label(ax)} try {int(k)}"] = value
    for r in s.itertuples(index=False):
        rows.setdefault((r.scenario, r.role, r.metric), {})[
            f"{label(getattr(r, axis))} avg"] = r.mean
    index = sorted(rows, key=lambda k: (SCENARIO_ORDER.get(k[0], 9), ROLE_ORDER.get(k[1], 9),
                                        METRIC_ORDER.get(k[2], 9)))
    out = pd.DataFrame([rows[k] for k in index], columns=columns)
    out.insert(0, "metric", [k[2] for k in index])
    out.insert(0, "role", [k[1] for k in index])
    out.insert(0, "scenario", [k[0] for k in index])
    out.attrs["title"] = (f"{table}, {arch}: workload {workload}, offset_commit={oc}, "
                          f"metadata_check={mc}")
    return out


def _pair(cell_stats: pd.DataFrame, a_side: tuple[str, str], b_side: tuple[str, str]
          ) -> pd.DataFrame:
    """Join two sides (arch, side) of the same cells: columns a_* and b_*."""
    key = [*CELL_KEY, "metric"]
    cols = [*key, "n", "mean", "sd", "failed_rows"]

    def side(arch: str, s: str, prefix: str) -> pd.DataFrame:
        sub = cell_stats[(cell_stats["arch"] == arch) & (cell_stats["side"] == s)][cols]
        return sub.rename(columns={c: f"{prefix}_{c}" for c in cols if c not in key})

    return side(*b_side, "b").merge(side(*a_side, "a"), on=key, how="inner")


def _ratio_stats(pair: pd.DataFrame, a_name: str, b_name: str) -> pd.DataFrame:
    out = pair.copy()
    for p in ("a", "b"):
        ci = [stats.t_interval(m, s, n) for m, s, n in
              zip(out[f"{p}_mean"], out[f"{p}_sd"], out[f"{p}_n"], strict=True)]
        out[f"{p}_ci_lo"] = [c[0] for c in ci]
        out[f"{p}_ci_hi"] = [c[1] for c in ci]
    ratio, lo, hi, pv, change, verdicts = [], [], [], [], [], []
    for r in out.itertuples(index=False):
        ratio.append(r.a_mean / r.b_mean if r.b_mean else math.nan)
        f = stats.fieller(r.a_mean, r.a_sd, r.a_n, r.b_mean, r.b_sd, r.b_n)
        lo.append(f[0])
        hi.append(f[1])
        w = stats.welch(r.a_mean, r.a_sd, r.a_n, r.b_mean, r.b_sd, r.b_n)
        pv.append(w.p)
        ch = stats.detectable_change(r.a_sd, r.a_n, r.b_sd, r.b_n, r.b_mean)
        change.append(ch)
        verdicts.append(stats.verdict(w.p, ratio[-1], min(r.a_n, r.b_n), ch, a_name=a_name,
                                      b_name=b_name))
    out["ratio"], out["ratio_ci_lo"], out["ratio_ci_hi"] = ratio, lo, hi
    out["p_welch"], out["detectable_change"], out["verdict"] = pv, change, verdicts
    # Many cells are tested at once; Benjamini-Hochberg q-values (per metric) bound the share of
    # false discoveries among the cells called significant.
    out["q_bh"] = math.nan
    for _metric, idx in out.groupby("metric").groups.items():
        p = out.loc[idx, "p_welch"]
        good = p.notna()
        if good.any():
            out.loc[p[good].index, "q_bh"] = false_discovery_control(p[good].to_numpy())
    return out


def comparison(cell_stats: pd.DataFrame, paper_ratios: pd.DataFrame,
               archs: Archs = DEFAULT) -> pd.DataFrame:
    """Every other architecture vs the baseline (DSBS vs ZK) for every cell measured on both,
    with the paper's ratio beside ours. Columns ``<arch>_<stat>`` per architecture; with more
    than one other architecture, one block of rows per pair (the other's columns empty)."""
    base = archs.baseline
    frames, shown = [], [base.name]
    for other in archs.others:
        pair = _pair(cell_stats, (other.name, "*"), (base.name, "*"))
        if pair.empty:
            continue
        out = _ratio_stats(pair, other.short_name, base.short_name)
        out = out.rename(columns={f"{p}_{c}": f"{arch}_{c}"
                                  for p, arch in (("a", other.name), ("b", base.name))
                                  for c in ("n", "mean", "sd", "ci_lo", "ci_hi", "failed_rows")})
        # The paper's numbers are about its own two systems: beside that pair only.
        paper_pair = (base.name, other.name) == PAPER_ARCHS
        frames.append(out.merge(paper_ratios if paper_pair else paper_ratios.iloc[0:0],
                                on=PAPER_KEY, how="left"))
        shown.append(other.name)
    if not frames:
        return pd.DataFrame()
    out = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    stats_cols = ("n", "mean", "sd", "ci_lo", "ci_hi")
    cols = [*CELL_KEY, "metric", *(f"{a}_{c}" for a in shown for c in stats_cols),
            "ratio", "ratio_ci_lo", "ratio_ci_hi", "p_welch", "q_bh", "detectable_change",
            "verdict", "paper_ratio", "paper_p", *PAPER_COLUMNS,
            *(f"{a}_failed_rows" for a in shown)]
    return paper_order(out[cols])


# The decomposition's steps: (what changes, the architecture after the step, before it). The
# three architectures share every part but the coordinator (docs/raft-twin.md), so each step's
# ratio is what that one change of design costs or saves. Named here, not taken from the
# labels: the decomposition is about these three designs, whatever else a run measured.
DECOMPOSITION = (("external service (ZooKeeper -> Raft)", "raft", "zk"),
                 ("consensus (Raft -> DSBS)", "dsbs", "raft"),
                 ("both (ZooKeeper -> DSBS)", "dsbs", "zk"))
DECOMPOSITION_COLUMNS = ["step", "arch", "vs", *CELL_KEY, "metric", "a_n", "a_mean",
                         "a_ci_lo", "a_ci_hi", "b_n", "b_mean", "b_ci_lo", "b_ci_hi", "ratio",
                         "ratio_ci_lo", "ratio_ci_hi", "p_welch", "q_bh", "verdict"]


def decomposition(cell_stats: pd.DataFrame) -> pd.DataFrame:
    """For every cell measured on ZooKeeper, Raft and DSBS alike: each step's ratio (``a`` the
    architecture after the step, ``b`` before it) with its Fieller interval. Empty unless a
    run measured all three."""
    if cell_stats.empty or not {"zk", "raft", "dsbs"} <= set(cell_stats["arch"]):
        return pd.DataFrame(columns=DECOMPOSITION_COLUMNS)
    frames = []
    for step, after, before in DECOMPOSITION:
        pair = _pair(cell_stats, (after, "*"), (before, "*"))
        if pair.empty:
            continue
        out = _ratio_stats(pair, after, before)
        out.insert(0, "vs", before)
        out.insert(0, "arch", after)
        out.insert(0, "step", step)
        frames.append(out)
    if not frames:
        return pd.DataFrame(columns=DECOMPOSITION_COLUMNS)
    out = pd.concat(frames, ignore_index=True)
    # Only the cells all three measured: a step without its partner explains nothing.
    key = [*CELL_KEY, "metric"]
    complete = out.groupby(key, dropna=False)["step"].transform("nunique") == len(DECOMPOSITION)
    # Stable: within a cell the steps keep their order above.
    return paper_order(out[complete][DECOMPOSITION_COLUMNS])


def aa_calibration(cell_stats: pd.DataFrame) -> pd.DataFrame:
    """B vs A for every architecture that has both A/A sides."""
    frames = []
    a, b = AA_LABELS
    for arch in sorted(cell_stats["arch"].unique()):
        pair = _pair(cell_stats, (arch, b), (arch, a))
        if pair.empty:
            continue
        out = _ratio_stats(pair, f"{arch} {b}", f"{arch} {a}")
        out.insert(0, "arch", arch)
        frames.append(out.rename(columns={
            "a_n": "b_n", "a_mean": "b_mean", "a_sd": "b_sd", "a_ci_lo": "b_ci_lo",
            "a_ci_hi": "b_ci_hi", "b_n": "a_n", "b_mean": "a_mean", "b_sd": "a_sd",
            "b_ci_lo": "a_ci_lo", "b_ci_hi": "a_ci_hi"}))
    if not frames:
        return pd.DataFrame()
    out = pd.concat(frames, ignore_index=True)
    cols = ["arch", *CELL_KEY, "metric", "a_n", "a_mean", "a_sd", "b_n", "b_mean", "b_sd",
            "ratio", "ratio_ci_lo", "ratio_ci_hi", "p_welch", "q_bh", "verdict"]
    return paper_order(out[cols], extra=["arch"])


def noise_floor(aa: pd.DataFrame) -> pd.DataFrame:
    """Per architecture (and workload): the RMS of ln(B/A) over the A/A cells (rps only; kbps
    repeats the same ratio) and how many cells a 5% test wrongly called different."""
    if aa.empty:
        return pd.DataFrame(columns=["arch", "workload", "cells", "log_rms", "noise_pct",
                                     "significant", "expected_false_positives"])
    rows = []
    rps = aa[aa["metric"] == "rps"]
    for (arch, workload), grp in rps.groupby(["arch", "workload"]):
        s = stats.log_rms(list(grp["ratio"]))
        sig = int((grp["p_welch"] < stats.ALPHA).sum())
        rows.append({"arch": arch, "workload": workload, "cells": len(grp), "log_rms": s,
                     "noise_pct": math.expm1(s) * 100 if math.isfinite(s) else math.nan,
                     "significant": sig,
                     "expected_false_positives": round(stats.ALPHA * len(grp), 2)})
    return pd.DataFrame(rows)


def latency(cell_latency: pd.DataFrame) -> pd.DataFrame:
    """Latency percentiles per cell and arch (mean of per-try percentiles; max of maxima)."""
    if cell_latency.empty:
        return cell_latency
    sub = cell_latency[cell_latency["side"] == "*"].drop(columns=["side"])
    return paper_order(sub, extra=["arch"])


PERCENTILES = (0.0, 10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95, 99.99, 100.0)


def latency_distribution(hists: pd.DataFrame) -> pd.DataFrame:
    """Merge the HDR histograms of every try of a cell and read off its percentile curve."""
    cols = [*CELL_KEY, "arch", "kind", "count", "percentile", "value_us"]
    if hists.empty:
        return pd.DataFrame(columns=cols)
    rows = []
    group_cols = [*CELL_KEY, "arch", "kind"]
    for key, grp in hists[hists["side"] == "*"].groupby(group_cols, dropna=False):
        merged = HdrHistogram(1, 60_000_000, 3)
        for encoded in grp["histogram"]:
            merged.decode_and_add(encoded)
        total = merged.get_total_count()
        if total == 0:
            continue
        for p in PERCENTILES:
            value = merged.get_min_value() if p == 0 else (
                merged.get_max_value() if p == 100 else merged.get_value_at_percentile(p))
            rows.append({**dict(zip(group_cols, key, strict=True)), "count": total,
                         "percentile": p, "value_us": float(value)})
    return paper_order(pd.DataFrame(rows, columns=cols), extra=["arch", "kind", "percentile"])


def coordination(cost: pd.DataFrame) -> pd.DataFrame:
    if cost.empty:
        return cost
    sub = cost[cost["side"] == "*"].drop(columns=["side"])
    return paper_order(sub, extra=["arch"])
