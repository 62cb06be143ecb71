"""The paper study's report section and Summary lines (Markdown): the paper's appendix tables
with our numbers, every architecture beside the baseline cell by cell, latency percentiles,
coordination cost, and the A/A calibration that says how much of a difference is noise."""

from __future__ import annotations

import pandas as pd

from spark_analysis import stats
from spark_analysis.archs import DEFAULT, ArchLabel, Archs
from spark_analysis.markdown import cell_text, fmt, interval, md_table, pairs
from spark_analysis.studies.paper.aggregate import MAX_TRY_COLUMNS

# The columns of latency.csv and coordination_cost.csv the section shows (the CSVs have all).
LATENCY_SHOWN = ["workload", "cell_id", "scenario", "role", "arch", "lat_p50_us",
                   "lat_p90_us", "lat_p99_us", "lat_p999_us", "lat_max_us", "e2e_p50_us",
                   "e2e_p99_us"]
COORDINATION_SHOWN = ["workload", "cell_id", "scenario", "offset_commit", "metadata_check",
                        "arch", "tries", "coord_messages_per_1k", "coord_ops_per_1k",
                        "broker_cpu_s", "service_cpu_s"]


def comparison_md(cmp: pd.DataFrame, archs: Archs = DEFAULT) -> str:
    if cmp.empty:
        return ("_No cell was measured on both architectures (outside A/A runs); nothing to "
                "compare._\n")
    b = archs.baseline
    tables = []
    for o, block in pairs(cmp, archs):
        rows = []
        for _, r in block[block["metric"] == "rps"].iterrows():
            rows.append({
                "workload": r["workload"], "cell": cell_text(r), "scenario": r["scenario"],
                "role": r["role"],
                **_side(b, r), **_side(o, r),
                archs.ratio_name(o): fmt(r["ratio"]),
                "ratio 95% CI (Fieller)": interval(r["ratio_ci_lo"], r["ratio_ci_hi"]),
                "Welch p": fmt(r["p_welch"], 2), "BH q": fmt(r["q_bh"], 2),
                "verdict": r["verdict"],
                "paper DSBS/ZK (p)": (f"{fmt(r['paper_ratio'])} ({fmt(r['paper_p'], 2)})"
                                      if pd.notna(r["paper_ratio"]) else "-"),
            })
        tables.append(md_table(pd.DataFrame(rows)))
    return "\n".join(tables)


def _side(a: ArchLabel, r: pd.Series) -> dict[str, str]:
    """One architecture's columns of a comparison row in the report."""
    n = a.name
    return {f"{a.short_name} rps mean ± sd (n)":
            f"{fmt(r[f'{n}_mean'])} ± {fmt(r[f'{n}_sd'])} ({_count(r[f'{n}_n'])})",
            f"{a.short_name} 95% CI": interval(r[f"{n}_ci_lo"], r[f"{n}_ci_hi"])}


def _count(n: object) -> object:
    """A count from a table that may hold empty cells (then pandas keeps it a float)."""
    return int(n) if isinstance(n, float) and n.is_integer() else n


def appendix_md(name: str, table: pd.DataFrame) -> str:
    return f"**{table.attrs.get('title', name)}**\n\n" + md_table(table)


def aa_md(aa: pd.DataFrame, noise: pd.DataFrame) -> str:
    if aa.empty:
        return ("_No A/A calibration runs (labels `A` and `B` of one architecture) among the "
                "inputs; the noise floor is unmeasured here._\n")
    parts = ["Noise floor: the root mean square of ln(B/A) over the A/A cells (rps). "
             "`noise_pct` is that spread as a percentage; `significant` counts the cells a 5% "
             "Welch test called different, which for an honest A/A should be near "
             "`expected_false_positives`.\n", md_table(noise)]
    rows = []
    for _, r in aa[aa["metric"] == "rps"].iterrows():
        rows.append({"arch": r["arch"], "workload": r["workload"], "cell": cell_text(r),
                     "scenario": r["scenario"], "role": r["role"],
                     "A rps": fmt(r["a_mean"]), "B rps": fmt(r["b_mean"]),
                     "B/A": fmt(r["ratio"]),
                     "95% CI": interval(r["ratio_ci_lo"], r["ratio_ci_hi"]),
                     "Welch p": fmt(r["p_welch"], 2), "verdict": r["verdict"]})
    parts.append("\n" + md_table(pd.DataFrame(rows)))
    return "\n".join(parts)


def headline(cmp: pd.DataFrame, archs: Archs = DEFAULT) -> str:
    if cmp.empty:
        return ""
    return "".join(_pair_headline(block, archs, o) for o, block in pairs(cmp, archs))


def _pair_headline(cmp: pd.DataFrame, archs: Archs, o: ArchLabel) -> str:
    b = archs.baseline
    rps = cmp[cmp["metric"] == "rps"]
    sig = rps[rps["p_welch"] < stats.ALPHA]
    lines = [f"- {len(rps)} cells compared (rps; kbps ratios are identical because kbps = rps x "
             f"message size / 1000). {len(sig)} differ significantly at p < 0.05 "
             f"({int((sig['ratio'] > 1).sum())} with {o.short_name} faster, "
             f"{int((sig['ratio'] < 1).sum())} with {b.short_name} faster)."]
    for (scen, role), grp in rps.groupby(["scenario", "role"], sort=False):
        lines.append(f"- {scen} {role}: {archs.ratio_name(o)} ratio from "
                     f"{grp['ratio'].min():.2f} to "
                     f"{grp['ratio'].max():.2f} (median {grp['ratio'].median():.2f})"
                     + (f"; the paper's median {grp['paper_ratio'].median():.2f}"
                        if grp["paper_ratio"].notna().any() else ""))
    ns = rps[rps["p_welch"] >= stats.ALPHA]
    if not ns.empty:
        n = int(min(ns[f"{b.name}_n"].min(), ns[f"{o.name}_n"].min()))
        lines.append(f"- {len(ns)} cells are **not significant**. With {n} tries a side the test "
                     "is low-powered: \"not significant\" means the difference is smaller than "
                     "these runs can resolve (see each cell's detectable change in "
                     "comparison.csv), not that the architectures perform the same.")
    return "\n".join(lines) + "\n"


DECOMPOSITION_INTRO = (
    "What DSBS/ZK is made of, through the Raft twin: ZooKeeper to Raft drops the external "
    "service (consensus stays, inside the brokers), Raft to DSBS drops consensus. The three "
    "share every part but the coordinator, so each step's ratio is what that one change of "
    "design costs or saves; the two steps multiply to the whole. Records per second, ratio of "
    "the architecture after the step to the one before, 95% Fieller interval; "
    "`decomposition.csv` has the kbps rows.\n")


def decomposition_md(dec: pd.DataFrame) -> str:
    rows = []
    for _, r in dec[dec["metric"] == "rps"].iterrows():
        rows.append({"workload": r["workload"], "cell": cell_text(r), "scenario": r["scenario"],
                     "role": r["role"], "step": r["step"],
                     "ratio [95% CI]": f"{fmt(r['ratio'])} "
                                       f"{interval(r['ratio_ci_lo'], r['ratio_ci_hi'])}",
                     "verdict": r["verdict"]})
    return md_table(pd.DataFrame(rows))


def paper_md(*, appendix: dict[str, pd.DataFrame], max_try: int, input_rows: int,
             comparison: pd.DataFrame, latency: pd.DataFrame, coordination: pd.DataFrame,
             aa: pd.DataFrame, noise: pd.DataFrame, archs: Archs = DEFAULT,
             decomposition: pd.DataFrame | None = None) -> str:
    """The whole section: its parts under headings one level below the section's."""
    versus = " vs ".join(a.display_name for a in archs)
    parts = [f"The split and streaming scenarios of closed-loop cells on plaintext clusters: "
             f"{input_rows:,} measurement rows (records.csv).\n",
             "### The paper's appendix tables, our numbers\n",
             "Rows scenario x role x metric, columns message size (or batch) x try + average, "
             "as in the paper's appendix. One table per architecture."
             + (f" Only tries 1-{MAX_TRY_COLUMNS} get a column; the average uses all."
                if max_try > MAX_TRY_COLUMNS else "") + "\n"]
    if appendix:
        parts += [appendix_md(name, t) for name, t in appendix.items()]
    else:
        parts.append("_No size_grid or batch_sweep cells among the inputs._\n")
    parts += [f"### {versus}, cell by cell\n",
              "Records per second; `comparison.csv` has the kbps rows and every column "
              "(detectable change, the paper's means).\n",
              comparison_md(comparison, archs)]
    if decomposition is not None and not decomposition.empty:
        parts += ["### The decomposition: the external service, then consensus\n",
                  DECOMPOSITION_INTRO, decomposition_md(decomposition)]
    parts += ["### Latency percentiles (µs)\n",
              md_table(latency, LATENCY_SHOWN) if not latency.empty else "_(no data)_\n"]
    parts += ["### Coordination cost per cell\n",
              "Per 1,000 produced messages; CPU seconds per try (all brokers / all ZooKeeper "
              "servers).\n",
              md_table(coordination, COORDINATION_SHOWN) if not coordination.empty
              else "_(no coordination.csv among the inputs)_\n"]
    parts += ["### A/A calibration (the noise floor)\n", aa_md(aa, noise)]
    return "\n".join(parts)
