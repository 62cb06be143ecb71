"""The security study's report section (Markdown): secured over plaintext per architecture,
and the architectures compared at each security level, one table per measure."""

from __future__ import annotations

import pandas as pd

from spark_analysis.archs import DEFAULT, Archs
from spark_analysis.markdown import cell_text, fmt, interval, md_table
from spark_analysis.studies.security.tables import METRIC_TITLES

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
    return f"{fmt(r[f'{prefix}_mean'])} {interval(r[f'{prefix}_ci_lo'], r[f'{prefix}_ci_hi'])}"


def _ratio_ci(r: pd.Series) -> str:
    if not pd.notna(r["ratio_ci_lo"]):
        return fmt(r["ratio"])
    return f"{fmt(r['ratio'])} {interval(r['ratio_ci_lo'], r['ratio_ci_hi'])}"


def security_md(cost: pd.DataFrame, between: pd.DataFrame, archs: Archs = DEFAULT) -> str:
    if cost.empty:
        return ("_No workload ran secured and plaintext clusters side by side among the inputs "
                "(`security: [none, sasl_ssl]` in a workload; docs/security.md)._\n")
    key = ["workload", "cell_id", "scenario", "role", "offset_commit", "metadata_check"]
    parts = [SECURITY_INTRO]
    for metric, title in METRIC_TITLES.items():
        rows = []
        sub = cost[cost["metric"] == metric]
        for (*k, level), grp in sub.groupby([*key, "security"], sort=False):
            where = dict(zip(key, k, strict=True))
            row = {"workload": where["workload"], "cell": cell_text(grp.iloc[0]),
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
