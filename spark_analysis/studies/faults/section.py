"""The faults study's report section and Summary line (Markdown): per case, what it cost in
records, and its timings on every architecture with intervals and ratios."""

from __future__ import annotations

import pandas as pd

from spark_analysis.archs import DEFAULT, ArchLabel, Archs
from spark_analysis.markdown import ci_text, fmt, interval, md_table, pairs, side_text
from spark_analysis.schema import FAULT_COUNTS, FAULT_KEY
from spark_analysis.studies.faults.tables import METRIC_TITLES, case_labels


def fault_headline(outcomes: pd.DataFrame) -> str:
    if outcomes.empty:
        return ""
    out = outcomes
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
    return {f"{a.short_name} mean ± sd (n)": side_text(sessions, count, r[f"{n}_mean"],
                                                       r[f"{n}_sd"]),
            f"{a.short_name} 95% CI": ci_text(sessions, count, r[f"{n}_ci_lo"],
                                              r[f"{n}_ci_hi"])}


def _where_missing(partitions: pd.DataFrame | None, names: dict[tuple[str, ...], str]
                   ) -> list[str]:
    """The partitions that lost, could not serve, or duplicated records (runs of format 9:
    each record counted in the partition it was acknowledged in)."""
    if partitions is None or partitions.empty:
        return []
    bad = partitions[(partitions["lost"] > 0) | (partitions["unreachable"] > 0)
                     | (partitions["duplicates"] > 0)]
    if bad.empty:
        return ["\nEvery partition of every fault session: nothing lost, unreachable or "
                "duplicated (`fault_partitions.csv`).\n"]
    rows = [{"case": names.get(tuple(r[k] for k in FAULT_KEY), r["case"]), "arch": r["arch"],
             "partition": int(r["partition"]),
             "leaderless at end": f"{int(r['leaderless_sessions'])}/{int(r['sessions'])}",
             "acked": int(r["acked"]), "lost": int(r["lost"]),
             "unreachable": int(r["unreachable"]), "duplicates": int(r["duplicates"])}
            for _, r in bad.iterrows()]
    return ["\n**Where** (the partitions that lost, could not serve or duplicated records; a "
            "record is `unreachable` only in a partition left without a leader, so one such "
            "partition does not hide another's loss)\n", md_table(pd.DataFrame(rows))]


def faults_md(outcomes: pd.DataFrame, comparison: pd.DataFrame, empty: bool,
              archs: Archs = DEFAULT, partitions: pd.DataFrame | None = None) -> str:
    if empty:
        return "_No fault sessions among the inputs (`twinbench run --workload faults`)._\n"
    names, setting = case_labels(outcomes)
    parts = [FAULTS_INTRO]
    if setting is not None:
        parts.append(f"All fault sessions: workload `{setting['workload']}`, cell "
                     f"`{setting['cell_id']}`, offset_commit={setting['offset_commit']}, "
                     f"metadata_check={setting['metadata_check']}.\n")
    rows = []
    for _, r in outcomes.iterrows():
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
    parts += _where_missing(partitions, names)
    timings = []
    for o, block in pairs(comparison, archs, marker="sessions"):
        rows = []
        for _, r in block.iterrows():
            rows.append({
                "case": names.get(tuple(r[k] for k in FAULT_KEY), r["case"]),
                "measure": METRIC_TITLES.get(r["metric"], r["metric"]),
                **_fault_side(archs.baseline, r), **_fault_side(o, r),
                archs.ratio_name(o): fmt(r["ratio"]),
                "ratio 95% CI": interval(r["ratio_ci_lo"], r["ratio_ci_hi"])
                if pd.notna(r["ratio_ci_lo"]) else "-",
            })
        timings.append(md_table(pd.DataFrame(rows)))
    parts += ["\n**Timings (seconds)**\n", "\n".join(timings) or md_table(pd.DataFrame()),
              "\nEvery try: `fault_sessions.csv`; long form with every interval: "
              "`fault_stats.csv`; these tables: `fault_comparison.csv`, `fault_outcomes.csv`. "
              "Figures: `faults-*` (throughput through each fault), `faults-summary`."
              "\n"]
    return "\n".join(parts)
