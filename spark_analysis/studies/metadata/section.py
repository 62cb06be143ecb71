"""The metadata study's report section and Summary lines (Markdown): per case and size, every
architecture beside the baseline, and how each cost grows with the size."""

from __future__ import annotations

import pandas as pd

from spark_analysis.archs import DEFAULT, ArchLabel, Archs
from spark_analysis.markdown import ci_text, fmt, interval, md_table, pairs, side_text
from spark_analysis.studies.metadata.tables import HEADLINE, METRIC_TITLES, SIZE_TITLES

METADATA_INTRO = """\
Metadata at scale (`twinbench run --workload metadata`): each case at each size on clusters
started for it alone, both architectures interleaved, several tries. Per size and measure:
mean ± sd (tries) and the 95% confidence interval of the mean over tries; DSBS/ZK is the
ratio of the means (Fieller 95% interval). `n/a`: not measured on that side (a ZooKeeper
measure on DSBS). Sizes: topics created at once (topic-storm), partitions of one topic
(partition-scale), group members (group-churn), brokers before one more joins (broker-join).

- converged: until every broker's Metadata listed the change (topics with every partition
  led; the new broker), or every group member held its assignment (the rebalance)
- after the leave: half the group's members leave / the new broker stops, until the rest
  settle again / no broker lists it
- coordination messages: the brokers' own count over the change (ZooKeeper requests they
  made; gossip datagrams they sent); at rest: the same per second with nothing asked
- the slope is that of log(mean) on log(size): 1 = cost grows in proportion to the size
"""


def metadata_headline(st: pd.DataFrame, archs: Archs = DEFAULT) -> str:
    """One line per case: the largest size's convergence and messages on every side."""
    if st.empty:
        return ""
    lines = []
    for (workload, case), g in st.groupby(["workload", "case"], sort=False):
        # The largest size every architecture measured, so the two numbers compare.
        conv = g[g["metric"] == "converge_s"]
        common = set.intersection(*(set(conv.loc[conv["arch"] == a, "n"])
                                    for a in conv["arch"].unique())) if not conv.empty else set()
        top = max(common) if common else g["n"].max()
        parts = []
        for metric in ("converge_s", "coordination_ops"):
            sides = []
            for a in archs:
                v = g[(g["n"] == top) & (g["metric"] == metric) & (g["arch"] == a.name)]
                if not v.empty:
                    sides.append(f"{a.short_name} {fmt(float(v['mean'].iloc[0]))}")
            if sides:
                unit = " s" if metric == "converge_s" else " msgs"
                parts.append(f"{'converged' if metric == 'converge_s' else 'took'} "
                             + " vs ".join(sides) + unit)
        lines.append(f"- Metadata {case} (n = {fmt(int(top))}, {workload}): "
                     + "; ".join(parts) + ". See \"Metadata scenarios\".")
    return "\n".join(lines) + "\n"


def _metadata_side(a: ArchLabel, r: pd.Series) -> dict[str, str]:
    n = a.name
    sessions, tries = int(r[f"{n}_sessions"]), int(r[f"{n}_tries"])
    return {f"{a.short_name} mean ± sd (tries)": side_text(sessions, tries, r[f"{n}_mean"],
                                                           r[f"{n}_sd"]),
            f"{a.short_name} 95% CI": ci_text(sessions, tries, r[f"{n}_ci_lo"],
                                              r[f"{n}_ci_hi"])}


def metadata_md(cmp: pd.DataFrame, sc: pd.DataFrame, empty: bool, archs: Archs = DEFAULT
                ) -> str:
    if empty:
        return ("_No metadata sessions among the inputs (`twinbench run --workload "
                "metadata`)._\n")
    parts = [METADATA_INTRO]
    for (workload, case, kind), block in cmp.groupby(["workload", "case", "kind"], sort=False):
        shown = block[block["metric"].isin(HEADLINE.get(str(kind), ()))]
        parts.append(f"**{case}** ({kind}: n = {SIZE_TITLES.get(str(kind), 'size')}; workload "
                     f"`{workload}`)\n")
        tables = []
        for o, rows_ in pairs(shown, archs, marker="sessions"):
            rows = [{"measure": METRIC_TITLES.get(r["metric"], r["metric"]),
                     "n": fmt(int(r["n"])),
                     **_metadata_side(archs.baseline, r), **_metadata_side(o, r),
                     archs.ratio_name(o): fmt(r["ratio"]),
                     "ratio 95% CI": interval(r["ratio_ci_lo"], r["ratio_ci_hi"])
                     if pd.notna(r["ratio_ci_lo"]) else "-"}
                    for _, r in rows_.iterrows()]
            tables.append(md_table(pd.DataFrame(rows)))
        parts.append("\n".join(tables) or md_table(pd.DataFrame()))
    sc = sc[[str(r["metric"]) in HEADLINE.get(str(r["kind"]), ()) for _, r in sc.iterrows()]]
    if not sc.empty:
        wide = sc.pivot_table(index=["case", "metric"], columns="arch", values="slope",
                              sort=False).reset_index()
        wide["metric"] = [METRIC_TITLES.get(x, x) for x in wide["metric"]]
        cols = ["case", "metric", *[a for a in archs.names if a in wide]]
        parts += ["**How each cost grows with the size** (log-log slope of the mean over the "
                  "sizes)\n", md_table(wide[cols].rename(
                      columns={a.name: a.short_name for a in archs}),
                      ["case", "metric", *[a.short_name for a in archs if a.name in wide]])]
    parts.append("Every measure (not only those above): `metadata_stats.csv` (long, with "
                 "intervals), `metadata_comparison.csv`, `metadata_scaling.csv`. Figures: "
                 "`metadata-*` (log-log, 95% CI over tries).\n")
    return "\n".join(parts)
