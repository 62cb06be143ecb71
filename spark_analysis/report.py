"""The Markdown report: every table of the analysis in one file a reader can skim top-down."""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from spark_analysis import aggregate, stats
from spark_analysis.archs import DEFAULT, ArchLabel, Archs
from spark_analysis.fault_tables import METRIC_TITLES, case_labels
from spark_analysis.schema import FAULT_COUNTS, FAULT_KEY

if TYPE_CHECKING:
    from spark_analysis.job import Analysis

REPORT = "report.md"


def fmt(v: object, digits: int = 3) -> str:
    """Numbers for people: thousands separators, 3 significant digits below 1000."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if isinstance(v, float) and math.isinf(v):
        return "∞" if v > 0 else "-∞"
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, int | float):
        if abs(v) >= 1000:
            return f"{v:,.0f}"
        return f"{v:.{digits}g}"
    return str(v)


def md_table(df: pd.DataFrame, columns: Sequence[str] | None = None) -> str:
    if df.empty:
        return "_(no data)_\n"
    cols = list(columns or df.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for row in df[cols].itertuples(index=False):
        lines.append("| " + " | ".join(fmt(v).replace("|", "/") for v in row) + " |")
    return "\n".join(lines) + "\n"


def _interval(lo: float, hi: float) -> str:
    return f"[{fmt(lo)}, {fmt(hi)}]"


def _cell(row: pd.Series) -> str:
    text = f"{row['cell_id']}"
    if row["table"] == "policy" or str(row["offset_commit"]) != "every_fetch" \
            or str(row["metadata_check"]) != "per_request":
        text += f" ({row['offset_commit']}, {row['metadata_check']})"
    return text


def pairs(cmp: pd.DataFrame, archs: Archs, marker: str = "n"
          ) -> list[tuple[ArchLabel, pd.DataFrame]]:
    """(other architecture, its rows) for every pair a comparison table holds (one block of
    rows per architecture compared with the baseline)."""
    return [(a, cmp[cmp[f"{a.name}_{marker}"].notna()]) for a in archs.others
            if f"{a.name}_{marker}" in cmp]


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
                "workload": r["workload"], "cell": _cell(r), "scenario": r["scenario"],
                "role": r["role"],
                **_side(b, r), **_side(o, r),
                archs.ratio_name(o): fmt(r["ratio"]),
                "ratio 95% CI (Fieller)": _interval(r["ratio_ci_lo"], r["ratio_ci_hi"]),
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
            f"{a.short_name} 95% CI": _interval(r[f"{n}_ci_lo"], r[f"{n}_ci_hi"])}


def _count(n: object) -> object:
    """A count from a table that may hold empty cells (then pandas keeps it a float)."""
    return int(n) if isinstance(n, float) and n.is_integer() else n


def appendix_md(name: str, table: pd.DataFrame) -> str:
    return f"**{table.attrs.get('title', name)}**\n\n" + md_table(table)


def aa_md(analysis: Analysis) -> str:
    if analysis.aa.empty:
        return ("_No A/A calibration runs (labels `A` and `B` of one architecture) among the "
                "inputs; the noise floor is unmeasured here._\n")
    parts = ["Noise floor: the root mean square of ln(B/A) over the A/A cells (rps). "
             "`noise_pct` is that spread as a percentage; `significant` counts the cells a 5% "
             "Welch test called different, which for an honest A/A should be near "
             "`expected_false_positives`.\n", md_table(analysis.noise)]
    rows = []
    for _, r in analysis.aa[analysis.aa["metric"] == "rps"].iterrows():
        rows.append({"arch": r["arch"], "workload": r["workload"], "cell": _cell(r),
                     "scenario": r["scenario"], "role": r["role"],
                     "A rps": fmt(r["a_mean"]), "B rps": fmt(r["b_mean"]),
                     "B/A": fmt(r["ratio"]),
                     "95% CI": _interval(r["ratio_ci_lo"], r["ratio_ci_hi"]),
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


def _side_text(sessions: int, n: int, mean: float, sd: float) -> str:
    """mean ± sd (n), or why there is none: ``n/a`` = the case was not run on this architecture
    (it does not apply to it), ``none`` = it ran but no try yielded this duration."""
    if sessions == 0:
        return "n/a"
    if n == 0:
        return "none"
    if n == 1:
        return f"{fmt(mean)} (n=1)"
    return f"{fmt(mean)} ± {fmt(sd)} ({n})"


def _ci_text(sessions: int, n: int, lo: float, hi: float) -> str:
    if sessions == 0:
        return "n/a"
    if n == 0:
        return "-"
    if n == 1:
        return "n=1: no interval"
    return _interval(lo, hi)


def fault_headline(analysis: Analysis) -> str:
    f = analysis.faults
    if f.empty:
        return ""
    out = f.outcomes
    per_arch = ", ".join(f"{a}: {int(out.loc[out['arch'] == a, 'sessions'].sum())}"
                         for a in out["arch"].unique())
    cases = out["case"].nunique()
    failed = out[out["status"] != "ok"]
    if failed.empty:
        verdict = "none lost an acknowledged record whose broker came back"
    else:
        lost = int(failed["lost"].fillna(0).sum())
        where = ", ".join(f"{r['case']} on {r['arch']}" for _, r in failed.iterrows())
        verdict = (f"**{int(failed['failed_sessions'].sum())} FAILED** ({lost:,} acknowledged "
                   f"records lost; {where})")
    return (f"- Faults: {int(out['sessions'].sum())} fault sessions of {cases} cases "
            f"({per_arch}); {verdict}. See \"Faults\".\n")


FAULTS_INTRO = """\
Streaming load at a fixed rate while a schedule injects faults, both architectures interleaved,
several tries per case. Durations in seconds, one value per try (session); mean ± sd (n) and the
95% confidence interval of the mean over tries (t distribution; n counts the tries where the
duration was observed). `n/a`: the case does not apply to that architecture (it was not run on
it); `none`: it ran but no try yielded that duration (not applicable, e.g. detection when the
fault hit no broker, or not observed: the run log does not tell these apart); `n=1: no
interval`: a single try has no spread. The interval is the symmetric t interval of the mean; with
2-3 tries it is wide and may reach below 0, which a duration cannot: read such a bound as "not
resolved by these tries". DSBS/ZK is the ratio of the means (Fieller 95% interval beside it;
unbounded when the ZK mean is not itself clearly above 0).

- detection: from the fault until every surviving broker's Metadata no longer lists the target
- rejoin: from the closer (restart, resume, heal, start) until every broker lists every broker
  and every partition has a leader
- unavailability: the longest gap between two acknowledged produce requests on one partition
- consume / commit gap: the same for consumed records / successful offset commits
- group recovery: from the fault until the probe consumer group is stable again (0 when the
  fault never unsettled it)
"""


def _fault_side(a: ArchLabel, r: pd.Series) -> dict[str, str]:
    n = a.name
    sessions, count = int(r[f"{n}_sessions"]), int(r[f"{n}_n"])
    return {f"{a.short_name} mean ± sd (n)": _side_text(sessions, count, r[f"{n}_mean"],
                                                        r[f"{n}_sd"]),
            f"{a.short_name} 95% CI": _ci_text(sessions, count, r[f"{n}_ci_lo"],
                                               r[f"{n}_ci_hi"])}


def faults_md(analysis: Analysis) -> str:
    f = analysis.faults
    if f.empty:
        return "_No fault sessions among the inputs (`twinbench run --workload faults`)._\n"
    names, setting = case_labels(f.outcomes)
    parts = [FAULTS_INTRO]
    if setting is not None:
        parts.append(f"All fault sessions: workload `{setting['workload']}`, cell "
                     f"`{setting['cell_id']}`, offset_commit={setting['offset_commit']}, "
                     f"metadata_check={setting['metadata_check']}.\n")
    rows = []
    for _, r in f.outcomes.iterrows():
        status = r["status"]
        rows.append({
            "case": names[tuple(r[k] for k in FAULT_KEY)], "arch": r["arch"],
            "sessions": int(r["sessions"]), "failed": int(r["failed_sessions"]),
            **{c: r[c] for c in FAULT_COUNTS},
            # Timings split on these (a killed coordinator upsets the group; a killed
            # controller moves leadership), so say how often the target held each role.
            "target was controller": f"{int(r['hit_controller'])}/{int(r['sessions'])}",
            "target was coordinator": f"{int(r['hit_coordinator'])}/{int(r['sessions'])}",
            "status": "**FAILED** (lost > 0)" if status != "ok" and (r["lost"] or 0) > 0
            else ("**FAILED**" if status != "ok" else "ok"),
        })
    parts += ["**Outcomes** (sums over tries; `lost` must be 0: acknowledged on a partition "
              "whose broker came back and never consumed; `unreachable`: acknowledged on a "
              "partition whose broker never came back)\n", md_table(pd.DataFrame(rows))]
    archs = analysis.archs
    timings = []
    for o, block in pairs(f.comparison, archs, marker="sessions"):
        rows = []
        for _, r in block.iterrows():
            rows.append({
                "case": names.get(tuple(r[k] for k in FAULT_KEY), r["case"]),
                "measure": METRIC_TITLES.get(r["metric"], r["metric"]),
                **_fault_side(archs.baseline, r), **_fault_side(o, r),
                archs.ratio_name(o): fmt(r["ratio"]),
                "ratio 95% CI": _interval(r["ratio_ci_lo"], r["ratio_ci_hi"])
                if pd.notna(r["ratio_ci_lo"]) else "-",
            })
        timings.append(md_table(pd.DataFrame(rows)))
    parts += ["\n**Timings (seconds)**\n", "\n".join(timings) or md_table(pd.DataFrame()),
              "\nEvery try: `fault_sessions.csv`; long form with every interval: "
              "`fault_stats.csv`; these tables: `fault_comparison.csv`, `fault_outcomes.csv`. "
              "Figures: `fig16-fault-*` (throughput through each fault), `fig17-fault-summary`."
              "\n"]
    return "\n".join(parts)


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


def metadata_headline(analysis: Analysis) -> str:
    """One line per case: the largest size's convergence and messages on every side."""
    m = analysis.metadata
    if m.empty:
        return ""
    archs = analysis.archs
    lines = []
    st = m.stats
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
    return {f"{a.short_name} mean ± sd (tries)": _side_text(sessions, tries, r[f"{n}_mean"],
                                                            r[f"{n}_sd"]),
            f"{a.short_name} 95% CI": _ci_text(sessions, tries, r[f"{n}_ci_lo"],
                                               r[f"{n}_ci_hi"])}


def metadata_md(analysis: Analysis) -> str:
    from spark_analysis.metadata_tables import HEADLINE, METRIC_TITLES, SIZE_TITLES

    m = analysis.metadata
    if m.empty:
        return ("_No metadata sessions among the inputs (`twinbench run --workload "
                "metadata`)._\n")
    archs = analysis.archs
    parts = [METADATA_INTRO]
    cmp = m.comparison
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
                     "ratio 95% CI": _interval(r["ratio_ci_lo"], r["ratio_ci_hi"])
                     if pd.notna(r["ratio_ci_lo"]) else "-"}
                    for _, r in rows_.iterrows()]
            tables.append(md_table(pd.DataFrame(rows)))
        parts.append("\n".join(tables) or md_table(pd.DataFrame()))
    sc = m.scaling
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
                 "`fig19-metadata-*` (log-log, 95% CI over tries).\n")
    return "\n".join(parts)


METHOD = """\
- Replicate unit: one try of one run (a records.csv row). Several runs of one architecture pool
  their tries; A/A runs (labels `A`/`B`) are kept apart and only feed the calibration.
- Mean, standard deviation and n per cell are Spark aggregations over the run logs; rows whose
  status is not `ok` (verification failed) are excluded and counted (`*_failed_rows`).
- 95% CI of a mean: mean ± t(0.975, n-1)·sd/√n.
- DSBS/ZK ratio: ratio of the means; its 95% interval by **Fieller's theorem** (unequal
  variances, Welch-Satterthwaite degrees of freedom), not the delta method, because with 4 tries
  the ratio is skewed. An infinite bound means the ZK mean itself is not well determined.
- Test: Welch's two-sided t-test on the tries. 4 tries a side is low-powered: "not significant"
  means the difference is below what the runs can resolve (`detectable_change` in
  comparison.csv: the change a test would find with 80% power), not that there is none.
  Benjamini-Hochberg q-values (per metric) account for testing many cells at once. The paper
  never tested its numbers; its p-value is computed here from the four tries it printed.
- "kbps" is the paper's name for payload kilobytes per second (rps x message size / 1000), not
  kilobits.
- Latency percentiles per cell: the mean over tries of each try's percentile (the run log's
  columns) and the largest maximum; fig14 merges the HDR histograms of all tries instead.
- Coordination cost: requests (ZooKeeper) or gossip datagrams (DSBS) per 1,000 produced
  messages, summed over the tries; CPU seconds are means per try.
- Fault sessions (scenario `faults`) are kept out of every table above and of fig01-fig15: paced
  load through a fault measures something else. Their replicate unit is one session (a try of
  one case); failed sessions (lost > 0) stay in the timing statistics, because their timings are
  as real as any other's, and are flagged in the outcomes instead.
"""


def _ms(us: object) -> str:
    return fmt(us / 1000 if isinstance(us, int | float) else us)


def latency_md(analysis: Analysis) -> str:
    """Maximum sustainable rates, then latency at each rate (open-loop sessions)."""
    curves, maxima = analysis.latency_curves, analysis.max_rates
    if curves.empty and maxima.empty:
        return ("_No open-loop sessions among the inputs (`twinbench run --workload latency`; "
                "README, \"Open loop\")._\n")
    archs = analysis.archs
    parts = []
    if not maxima.empty:
        rows = [{"workload": r["workload"], "cell": r["cell_id"], "label": r["label"],
                 "arch": archs[r["arch"]].short_name if r["arch"] in archs.names else r["arch"],
                 "tries": r["n"], "max rate (records/s)": fmt(r["mean"]),
                 "95% CI": _interval(r["ci_lo"], r["ci_hi"]) if r["n"] > 1 else "n=1",
                 "range": f"{fmt(r['min'])} - {fmt(r['max'])}",
                 f"÷ {archs.baseline.short_name}": fmt(r["ratio"])}
                for _, r in maxima.iterrows()]
        parts += ["**Maximum sustainable rate** (the highest target whose producers kept their "
                  "schedule, lost nothing, and whose consumers kept up: rate_search.csv has "
                  "every step and its verdict)\n", md_table(pd.DataFrame(rows))]
    if not curves.empty:
        rows = [{"workload": r["workload"], "cell": r["cell_id"],
                 "policies": f"{r['offset_commit']}+{r['metadata_check']}",
                 "arch": archs[r["arch"]].short_name if r["arch"] in archs.names else r["arch"],
                 "tries": r["tries"], "target": fmt(r["target_rate"]),
                 "achieved": fmt(r["achieved_rate"]), "behind": r["behind"],
                 "e2e p50 (ms)": _ms(r["e2e_p50_us"]), "e2e p99 (ms)": _ms(r["e2e_p99_us"]),
                 "p99 95% CI (ms)": (f"{_ms(r['e2e_p99_ci_lo'])} - {_ms(r['e2e_p99_ci_hi'])}"
                                     if r["tries"] > 1 else "n=1")}
                for _, r in curves.iterrows()]
        parts += ["**Latency at each rate**: end-to-end, from each record's intended send time "
                  "to its consumption, mean over tries of each try's percentile; `behind` counts "
                  "tries whose producers did not keep the target (their latency is the client's "
                  "as much as the broker's). Figures `fig18-latency-*`; every column in "
                  "`latency_curves.csv`.\n", md_table(pd.DataFrame(rows))]
    return "\n".join(parts)


SECURITY_INTRO = """\
What TLS and SASL cost each architecture: every cell of a workload with `security:` ran on a
plaintext and a secured cluster of each architecture (throwaway CA and SCRAM-SHA-512 user per
run), sessions interleaved. Per side: mean [95% CI] over tries; `secured/plain` is the ratio of
the means (Fieller 95% interval): below 1 for records/s means security costs throughput, above
1 for a latency that it costs time. The last columns compare the architectures at each level
(so whether security narrows the gap between them is read off one row).
"""


def _mean_ci(r: pd.Series, prefix: str) -> str:
    n = int(r[f"{prefix}_n"])
    if n < 2:
        return f"{fmt(r[f'{prefix}_mean'])} (n={n})"
    return f"{fmt(r[f'{prefix}_mean'])} {_interval(r[f'{prefix}_ci_lo'], r[f'{prefix}_ci_hi'])}"


def _ratio_ci(r: pd.Series) -> str:
    if not pd.notna(r["ratio_ci_lo"]):
        return fmt(r["ratio"])
    return f"{fmt(r['ratio'])} {_interval(r['ratio_ci_lo'], r['ratio_ci_hi'])}"


def security_md(analysis: Analysis) -> str:
    from spark_analysis.security_tables import METRIC_TITLES

    cost, between = analysis.security_cost, analysis.security_between
    if cost.empty:
        return ("_No workload ran secured and plaintext clusters side by side among the inputs "
                "(`security: [none, sasl_ssl]` in a workload; README, \"Security\")._\n")
    archs = analysis.archs
    key = ["workload", "cell_id", "scenario", "role", "offset_commit", "metadata_check"]
    parts = [SECURITY_INTRO]
    for metric, title in METRIC_TITLES.items():
        rows = []
        sub = cost[cost["metric"] == metric]
        for (*k, level), grp in sub.groupby([*key, "security"], sort=False):
            where = dict(zip(key, k, strict=True))
            row = {"workload": where["workload"], "cell": _cell(grp.iloc[0]),
                   "scenario": where["scenario"], "role": where["role"], "security": level}
            for a in archs:
                mine = grp[grp["arch"] == a.name]
                if mine.empty:
                    continue
                r = mine.iloc[0]
                row |= {f"{a.short_name} plain": _mean_ci(r, "plain"),
                        f"{a.short_name} secured": _mean_ci(r, "secured"),
                        f"{a.short_name} secured/plain": _ratio_ci(r)}
            for o in archs.others:
                for lvl in ("none", level):
                    b = between[(between["other"] == o.name) & (between["metric"] == metric)
                                & (between["security"] == lvl)] if not between.empty else between
                    for c, v in where.items():
                        b = b[b[c] == v] if not b.empty else b
                    if not b.empty:
                        name = "plain" if lvl == "none" else "secured"
                        row[f"{archs.ratio_name(o)} {name}"] = _ratio_ci(b.iloc[0])
            rows.append(row)
        if rows:
            parts += [f"**{title}**\n", md_table(pd.DataFrame(rows))]
    parts.append("Every column: `security_cost.csv` (secured over plaintext per architecture) "
                 "and `security_between.csv` (the architectures at each level).\n")
    return "\n".join(parts)


QOS_INTRO = """\
The Kafka + Prometheus paper's QoS table (its Table II: Apache Kafka on Kubernetes with SASL and
SSL, JMX metrics through Prometheus, one value per case) beside ours: every broker's Prometheus
endpoint sampled from just before a session's producers start to just after its consumers
finish (metrics.csv), for each case's message count, on both twins with security off and on.
Ours: mean [95% CI] over tries; rates are over that window, CPU is all brokers (ZooKeeper on its
own row), memory the largest resident set per broker, Total time the mean time to answer a
Produce (and a Fetch, long-poll included). The paper gives neither message size nor batching;
ours are the workload's (its cell id). Its units are as it labels them: its memory and total
time are far below what a JVM broker holds or takes, so read its columns for their trend.
"""


def qos_md(analysis: Analysis) -> str:
    q = analysis.qos
    if q.empty:
        return ("_No sessions sampled the brokers' metrics among the inputs (`metrics: true` "
                "in a workload; `make bench-qos`)._\n")
    parts = [QOS_INTRO]
    for (workload, scenario), t in q.table_ii.groupby(["workload", "scenario"], sort=False):
        cases = [c for c in t.columns if c not in ("workload", "scenario", "metric", "side")]
        parts += [f"**Table II, workload `{workload}`, {scenario}**\n",
                  md_table(t.dropna(axis=1, how="all"), ["metric", "side", *cases])]
    parts.append("Every session's measures: `qos_sessions.csv`; statistics: `qos_stats.csv`; "
                 "this table: `qos_table_ii.csv`. Figures: `fig21-qos-*`.\n")
    return "\n".join(parts)


RTT_INTRO = """\
The paper ran its brokers, ZooKeeper and clients on separate machines, where every request a
client makes and every request a broker makes to ZooKeeper pays a network round trip; on one
machine over loopback a round trip costs microseconds. A round-trip-time sweep (workload
`rtt_ms`, `workloads/rtt.yaml`) puts each broker in its own network namespace and has a delay
line (harness/netdelay) hold packets so that every client-broker, broker-ZooKeeper and
broker-broker round trip pays the time asked for. Per point: records/s, mean over tries, and the
ratio of the means with its 95% Fieller interval; `held` is the round trip the client's path
actually saw added (the delay line's measurement: asked for plus its own lateness).

The model: a client waits for each request, so a role's wall time is its work (the rtt-0
session's wall time) plus its round trips times the time added; round trips per client =
the role's Kafka requests (counters.csv, by API), each plus the coordination requests it waits
for (the zk twin's data-path ZooKeeper requests: its writes are the offset commits', the rest
leadership checks of Produce and Fetch; none on DSBS, whose gossip never stands between a
request and its answer), over the role's clients. `model` is the ratio it predicts from the
rtt-0 sessions alone; `limit`, the ratio it tends to as the round trips swamp the work: round
trips per record, ZK over DSBS.
"""


def _rtt_policy(g: pd.DataFrame) -> str:
    r = g.iloc[0]
    return (f"{r['workload']}: {r['msg_size']} B x {r['batch']}, offset_commit "
            f"{r['offset_commit']}, metadata_check {r['metadata_check']}")


def _sweep_ends(cmp: pd.DataFrame) -> list[tuple[pd.Series, pd.Series]]:
    """Per sweep point (workload, grid point, policies, scenario, role): its rows at the
    smallest and at the largest rtt."""
    keys = ["workload", "table", "msg_size", "batch", "offset_commit", "metadata_check",
            "scenario", "role"]
    out = []
    for _, g in cmp.groupby(keys):
        g = g.sort_values("rtt_ms")
        out.append((g.iloc[0], g.iloc[-1]))
    return out


def rtt_headline(analysis: Analysis) -> str:
    """How the ratio moves with the network, one line per scenario x role of each sweep."""
    cmp = analysis.rtt.comparison
    if cmp.empty:
        return ""
    lines = []
    for first, last in _sweep_ends(cmp):
        lines.append(f"- Round trips ({first['offset_commit']}+{first['metadata_check']}, "
                     f"{first['scenario']} {first['role']}): "
                     f"{first['other'].upper()}/{first['baseline'].upper()} "
                     f"{fmt(first['ratio'])} at {fmt(first['rtt_ms'])} ms, "
                     f"{fmt(last['ratio'])} at {fmt(last['rtt_ms'])} ms (model "
                     f"{fmt(last['ratio_model'])}, limit {fmt(last['ratio_limit'])}).")
    return "\n".join(lines) + "\n"


def _rtt_reading(cmp: pd.DataFrame) -> str:
    """What the sweep says about a result measured across machines, per policy combination."""
    lines = ["**What this says about a separate-machine result.** "
             "Per policy combination and role (split), the ratio at the smallest rtt swept "
             "(one machine) and at the largest, beside the limit the round trips alone set:\n"]
    for first, last in _sweep_ends(cmp[cmp["scenario"] == "split"]):
        lines.append(f"- {first['offset_commit']}+{first['metadata_check']}, {first['role']}: "
                     f"{fmt(first['ratio'])} at {fmt(first['rtt_ms'])} ms (CPU decides), "
                     f"{fmt(last['ratio'])} [{fmt(last['ratio_lo'])}, {fmt(last['ratio_hi'])}] "
                     f"at {fmt(last['rtt_ms'])} ms; limit {fmt(last['ratio_limit'])} "
                     f"({fmt(last['round_trips_per_record_baseline'])} vs "
                     f"{fmt(last['round_trips_per_record_other'])} round trips per record).")
    lines.append("\nOn a network the ratio moves from what the CPU cost of coordination sets "
                 "(one machine) toward what the round trips set: the number of coordination "
                 "requests each record waits for, not their CPU. A result measured across "
                 "machines therefore depends on the network's round trip and on the "
                 "coordination policy more than on either design's efficiency.\n")
    return "\n".join(lines)


def rtt_md(analysis: Analysis) -> str:
    cmp = analysis.rtt.comparison
    if cmp.empty:
        return ("_No round-trip-time sweeps among the inputs (`twinbench run --workload "
                "rtt`)._\n")
    archs = analysis.archs
    parts = [RTT_INTRO]
    keys = ["workload", "table", "msg_size", "batch", "offset_commit", "metadata_check"]
    for _, g in cmp.groupby(keys):
        parts.append(f"**{_rtt_policy(g)}**\n")
        rows = []
        for _, r in g.sort_values(["scenario", "role", "rtt_ms"]).iterrows():
            base, other = archs[r["baseline"]], archs[r["other"]]
            rows.append({
                "scenario": r["scenario"], "role": r["role"], "rtt ms": fmt(r["rtt_ms"]),
                "held ms": fmt(r["rtt_measured_baseline_ms"]),
                f"{base.short_name} rps": fmt(r["rps_baseline"]),
                f"{other.short_name} rps": fmt(r["rps_other"]),
                archs.ratio_name(other): fmt(r["ratio"]),
                "95% CI": _interval(r["ratio_lo"], r["ratio_hi"]),
                "model": fmt(r["ratio_model"]),
                f"round trips/record {base.short_name}":
                    fmt(r["round_trips_per_record_baseline"]),
                f"round trips/record {other.short_name}":
                    fmt(r["round_trips_per_record_other"]),
                "limit": fmt(r["ratio_limit"]),
            })
        parts.append(md_table(pd.DataFrame(rows)))
    parts.append(_rtt_reading(cmp))
    parts.append("Every column, per architecture too (records/s with its interval, round trips "
                 "per client, the delay line's CPU seconds): `rtt_stats.csv`, "
                 "`rtt_comparison.csv`, `rtt_sessions.csv`. Figures: `fig20-rtt-*`.\n")
    return "\n".join(parts)


def write_report(analysis: Analysis, out: Path, figures: Sequence[Path]) -> Path:
    from spark_analysis.job import runs_table

    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    versus = " vs ".join(a.display_name for a in analysis.archs)
    parts = [
        f"# twinbench analysis: {versus}\n",
        f"Generated {now} from {len(analysis.runs)} runs ({analysis.input_rows:,} measurement "
        "rows" + (f", {len(analysis.faults.sessions):,} fault sessions"
                  if not analysis.faults.empty else "")
        + "). Every table below is also a CSV in this directory.\n",
        "## Summary\n", headline(analysis.comparison, analysis.archs) + fault_headline(analysis)
        + metadata_headline(analysis) + rtt_headline(analysis),
    ]
    if analysis.notes:
        parts += ["**Notes on the inputs**\n", "\n".join(f"- {n}" for n in analysis.notes) + "\n"]
    parts += ["## Runs\n", md_table(runs_table(analysis.runs),
                                     ["run_id", "arch", "label", "workload", "incomplete",
                                      "failed_cells", "git_commit", "cpu_model", "policies"])]
    parts += ["## The paper's appendix tables, our numbers\n",
              "Rows scenario x role x metric, columns message size (or batch) x try + average, "
              "as in the paper's appendix. One table per architecture."
              + (f" Only tries 1-{aggregate.MAX_TRY_COLUMNS} get a column; the average uses all."
                 if analysis.max_try > aggregate.MAX_TRY_COLUMNS else "") + "\n"]
    if analysis.appendix:
        parts += [appendix_md(name, t) for name, t in analysis.appendix.items()]
    else:
        parts.append("_No size_grid or batch_sweep cells among the inputs._\n")
    parts += [f"## {versus}, cell by cell\n",
              "Records per second; `comparison.csv` has the kbps rows and every column "
              "(detectable change, the paper's means).\n",
              comparison_md(analysis.comparison, analysis.archs)]
    lat_cols = ["workload", "cell_id", "scenario", "role", "arch", "lat_p50_us", "lat_p90_us",
                "lat_p99_us", "lat_p999_us", "lat_max_us", "e2e_p50_us", "e2e_p99_us"]
    parts += ["## Latency percentiles (µs)\n",
              md_table(analysis.latency, lat_cols) if not analysis.latency.empty
              else "_(no data)_\n"]
    coord_cols = ["workload", "cell_id", "scenario", "offset_commit", "metadata_check", "arch",
                  "tries", "coord_messages_per_1k", "coord_ops_per_1k",
                  "broker_cpu_s", "service_cpu_s"]
    parts += ["## Coordination cost per cell\n",
              "Per 1,000 produced messages; CPU seconds per try (all brokers / all ZooKeeper "
              "servers).\n",
              md_table(analysis.coordination, coord_cols) if not analysis.coordination.empty
              else "_(no coordination.csv among the inputs)_\n"]
    parts += ["## Security\n", security_md(analysis)]
    parts += ["## QoS (the Kafka + Prometheus paper's Table II)\n", qos_md(analysis)]
    parts += ["## Latency at a given load\n", latency_md(analysis)]
    parts += ["## Faults\n", faults_md(analysis)]
    parts += ["## Metadata scenarios\n", metadata_md(analysis)]
    parts += ["## Round-trip time\n", rtt_md(analysis)]
    parts += ["## A/A calibration (the noise floor)\n", aa_md(analysis)]
    pngs = [p for p in figures if p.suffix == ".png"]
    parts.append("## Figures\n")
    if pngs:
        parts += [f"![{p.stem}]({p.name})\n" for p in pngs]
    else:
        parts.append("_(figures not drawn)_\n")
    parts += ["## Method\n", METHOD]
    path = out / REPORT
    path.write_text("\n".join(parts), encoding="utf-8")
    return path
