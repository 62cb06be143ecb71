"""The clients study's report section (Markdown): records/s of our client and of Kafka's perf
tools on the same clusters and cells, and their ratio."""

from __future__ import annotations

import pandas as pd

from spark_analysis.archs import DEFAULT, Archs
from spark_analysis.markdown import cell_text, fmt, interval, md_table

INTRO = """\
Our load client and Kafka's own perf tools (ProducerPerformance and ConsumerPerformance from
the kafka-tools jar) on the same cluster and cell, one side each, sessions interleaved
(`client: [twinbench, kafka-perf]`, docs/real-kafka.md "Two load clients"). Records/s, mean
[95% CI] over tries; `tools/ours` is the ratio of the means (Fieller 95% interval). The tools
time themselves from their first send (JVM start-up outside, as ours is outside its sessions);
each tool is a fresh JVM per session, its JIT cold. Their producer batches by bytes (batch.size
sized for the cell's records) and spreads batches over the partitions; their consumer commits on
an interval. The tools check no order or duplicates, only counts.
"""


def _mean_ci(r: pd.Series, prefix: str) -> str:
    n = int(r[f"{prefix}_n"])
    if n < 2:
        return f"{fmt(r[f'{prefix}_mean'])} (n={n})"
    return f"{fmt(r[f'{prefix}_mean'])} {interval(r[f'{prefix}_ci_lo'], r[f'{prefix}_ci_hi'])}"


def clients_md(compare: pd.DataFrame, archs: Archs = DEFAULT) -> str:
    if compare.empty:
        return ("_No workload ran our client and Kafka's perf tools side by side among the "
                "inputs (`client: [twinbench, kafka-perf]`; docs/real-kafka.md)._\n")
    names = {a.name: a.short_name for a in archs}
    rows = []
    for _, r in compare.iterrows():
        ratio = fmt(r["ratio"]) if not pd.notna(r["ratio_ci_lo"]) else (
            f"{fmt(r['ratio'])} {interval(r['ratio_ci_lo'], r['ratio_ci_hi'])}")
        rows.append({"workload": r["workload"], "cell": cell_text(r), "scenario": r["scenario"],
                     "role": r["role"], "architecture": names.get(r["arch"], r["arch"]),
                     "ours": _mean_ci(r, "ours"), "Kafka's tools": _mean_ci(r, "tools"),
                     "tools/ours": ratio})
    return "\n".join([INTRO, md_table(pd.DataFrame(rows)),
                      "Every column: `clients_compare.csv`.\n"])
