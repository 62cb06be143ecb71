"""The QoS study's report section (Markdown): Table II of the Kafka + Prometheus paper with
ours beside it, per workload and scenario."""

from __future__ import annotations

import pandas as pd

from spark_analysis.markdown import md_table

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


def qos_md(table_ii: pd.DataFrame, empty: bool) -> str:
    if empty:
        return ("_No sessions sampled the brokers' metrics among the inputs (`metrics: true` "
                "in a workload; `make bench-qos`)._\n")
    parts = [QOS_INTRO]
    for (workload, scenario), t in table_ii.groupby(["workload", "scenario"], sort=False):
        cases = [c for c in t.columns if c not in ("workload", "scenario", "metric", "side")]
        parts += [f"**Table II, workload `{workload}`, {scenario}**\n",
                  md_table(t.dropna(axis=1, how="all"), ["metric", "side", *cases])]
    parts.append("Every session's measures: `qos_sessions.csv`; statistics: `qos_stats.csv`; "
                 "this table: `qos_table_ii.csv`. Figures: `qos-*`.\n")
    return "\n".join(parts)
