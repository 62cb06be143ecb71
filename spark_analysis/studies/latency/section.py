"""The latency study's report section (Markdown): maximum sustainable rates, then latency at
each rate (open-loop sessions)."""

from __future__ import annotations

import pandas as pd

from spark_analysis.archs import DEFAULT, Archs
from spark_analysis.markdown import fmt, interval, md_table


def _ms(us: object) -> str:
    return fmt(us / 1000 if isinstance(us, int | float) else us)


def _bound(r: pd.Series) -> bool:
    # Tables written before client-bound maxima were told apart have no such column.
    v = r.get("client_bound")
    return bool(pd.notna(v) and v)


def _max_rate(r: pd.Series) -> str:
    if not _bound(r):
        return fmt(r["mean"])
    some = "" if int(r["client_bound"]) == int(r["n"]) else (
        f" in {int(r['client_bound'])} of {int(r['n'])} tries")
    return f"at least {fmt(r['mean'])} (client-bound{some})"


def _ratio(r: pd.Series) -> str:
    bound = r.get("ratio_bound", "")
    text = fmt(r["ratio"])
    return f"{bound} {text}" if isinstance(bound, str) and bound and text != "-" else text


def latency_md(curves: pd.DataFrame, maxima: pd.DataFrame, archs: Archs = DEFAULT) -> str:
    """Maximum sustainable rates, then latency at each rate (open-loop sessions)."""
    if curves.empty and maxima.empty:
        return ("_No open-loop sessions among the inputs (`twinbench run --workload latency`; "
                "docs/latency.md)._\n")
    parts = []
    if not maxima.empty:
        rows = [{"workload": r["workload"], "cell": r["cell_id"], "label": r["label"],
                 "arch": archs[r["arch"]].short_name if r["arch"] in archs.names else r["arch"],
                 "tries": r["n"], "max rate (records/s)": _max_rate(r),
                 "95% CI": ("- (client-bound)" if _bound(r) else
                            interval(r["ci_lo"], r["ci_hi"]) if r["n"] > 1 else "n=1"),
                 "range": f"{fmt(r['min'])} - {fmt(r['max'])}",
                 f"÷ {archs.baseline.short_name}": _ratio(r)}
                for _, r in maxima.iterrows()]
        parts += ["**Maximum sustainable rate** (the highest target whose producers kept their "
                  "schedule, lost nothing, and whose consumers kept up: rate_search.csv has "
                  "every step and its verdict; \"at least X (client-bound)\": the search reached "
                  "the load client's own ceiling on this machine without a failure, so X is the "
                  "client's limit, not the brokers')\n", md_table(pd.DataFrame(rows))]
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
                  "as much as the broker's). Figures `latency-*`; every column in "
                  "`latency_curves.csv`.\n", md_table(pd.DataFrame(rows))]
    return "\n".join(parts)
