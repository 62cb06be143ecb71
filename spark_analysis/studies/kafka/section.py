"""The Real Kafka study's report section (Markdown)."""

from __future__ import annotations

import math

import pandas as pd

from spark_analysis.archs import DEFAULT, Archs
from spark_analysis.markdown import cell_text, fmt, interval, md_table

INTRO = """\
Apache Kafka 3.9.2 on ZooKeeper (`kafka-zk`) and on KRaft (`kafka-kraft`, three combined
broker+controller nodes) beside the twins: the same load client, cells, sessions (interleaved
architecture by architecture) and statistics (docs/real-kafka.md). Kafka serves leadership from
its cache and has no per-request check, so only the cells with `metadata_check: cached` compare
like with like, and only those are shown. Kafka's JVMs are warmed up until two sessions agree;
the twins run the workload's warm-up. Coordination is each design's own measure: ZooKeeper's
requests served (zk twin, Kafka on ZooKeeper), gossip packets (DSBS), requests on the KRaft
controllers' listener (Kafka on KRaft: Raft fetches, votes, broker heartbeats, from Kafka's
JMX).
"""
STEPS_INTRO = """\
**Steps away from ZooKeeper.** Kafka took one (KRaft: consensus moved into the brokers), the
Raft twin takes the same on our core, DSBS another (no consensus at all). Each ratio is of the
means, other over ZooKeeper on the same code (Fieller 95% interval): above 1 the step made that
row faster. KRaft/ZK beside RAFT/ZK is the calibration: where they agree, what the twins say
about the step transfers to Kafka. The last two columns set each twin against the Kafka it
stands beside: DSBS against Kafka on KRaft, the zk twin against Kafka on ZooKeeper (above 1: the
twin moved more records per second).
"""
# The twins against the Kafka beside them (tables.STEPS' last two), as the steps table titles them.
AGAINST_KAFKA = (("dsbs_over_kraft", "DSBS/KRaft"), ("zk_over_kafka_zk", "zk twin/Kafka ZK"))
FIDELITY_INTRO = """\
**Fidelity: the zk twin beside Kafka on ZooKeeper**, the same policies and load. Kafka/twin
above 1: Kafka moved more records per second. Per 1,000 records: ZooKeeper's requests served
and the brokers' CPU milliseconds.
"""
EVENTS_INTRO = """\
**Fidelity in events: topic creation and failover**, the zk twin beside Kafka on ZooKeeper
where a workload ran both (`make bench-kafka-metadata`, `make bench-kafka-faults`), mean [95%
CI] over tries, each on fresh clusters. Topic creation: a CreateTopics round trip's median, and
the time until every broker's Metadata lists every topic led (a storm of `size` topics, or one
topic of `size` partitions); Kafka's are sent to the controller its Metadata names, as its
admin client does, the twins' to every broker. Failover: detection and the longest produce
gap of each fault case. Kafka/twin below 1: Kafka was quicker. The metadata and faults
sections show all four architectures.
"""
# What each measure of fidelity_events is called in the report.
EVENT_TITLES = {
    "create_p50_ms": "CreateTopics p50 (ms)",
    "converge_s": "listed by every broker (s)",
    "detection_s": "detection (s)",
    "produce_gap_s": "longest produce gap (s)",
}


def _ci(mean: float, lo: float, hi: float, n: int) -> str:
    if not math.isfinite(mean):
        return "n/a"
    if n < 2:
        return f"{fmt(mean)} (n={n})"
    return f"{fmt(mean)} {interval(lo, hi)}"


def _ratio(r: pd.Series, name: str) -> str:
    value = r.get(name, math.nan)
    if not pd.notna(value):
        return "n/a"
    lo, hi = r.get(f"{name}_ci_lo", math.nan), r.get(f"{name}_ci_hi", math.nan)
    return fmt(value) if not pd.notna(lo) else f"{fmt(value)} {interval(lo, hi)}"


def four_md(four: pd.DataFrame, archs: Archs) -> str:
    present = [a for a in archs if a.name in set(four["arch"])]
    rows = []
    key = ["workload", "cell_id", "table", "scenario", "role", "offset_commit",
           "metadata_check"]
    for _, group in four.groupby(key, sort=False):
        first = group.iloc[0]
        row = {"workload": first["workload"], "cell": cell_text(first),
               "scenario": first["scenario"], "role": first["role"]}
        by = {r["arch"]: r for _, r in group.iterrows()}
        for a in present:
            r = by.get(a.name)
            row[a.display_name] = ("n/a" if r is None else
                                   _ci(r["mean"], r["ci_lo"], r["ci_hi"], int(r["n"])))
        rows.append(row)
    return md_table(pd.DataFrame(rows))


def steps_md(steps: pd.DataFrame) -> str:
    rows = [{"workload": r["workload"], "cell": cell_text(r), "scenario": r["scenario"],
             "role": r["role"], "KRaft/ZK (Kafka)": _ratio(r, "kraft_over_zk"),
             **({"RAFT/ZK (twins)": _ratio(r, "raft_over_zk")} if "raft_over_zk" in steps
                else {}),
             "DSBS/ZK (twins)": _ratio(r, "dsbs_over_zk"),
             **{title: _ratio(r, name) for name, title in AGAINST_KAFKA if name in steps}}
            for _, r in steps.iterrows()]
    return md_table(pd.DataFrame(rows))


def fidelity_md(fid: pd.DataFrame) -> str:
    rows = [{"workload": r["workload"], "cell": cell_text(r), "scenario": r["scenario"],
             "role": r["role"],
             "zk twin rec/s": _ci(r["twin_rps"], r["twin_ci_lo"], r["twin_ci_hi"],
                                  int(r["twin_n"])),
             "Kafka on ZK rec/s": _ci(r["kafka_rps"], r["kafka_ci_lo"], r["kafka_ci_hi"],
                                      int(r["kafka_n"])),
             "Kafka/twin": _ratio(r, "ratio"),
             "ZK requests /1k (twin, Kafka)":
                 f"{fmt(r['twin_coord_messages_per_1k'])}, {fmt(r['kafka_coord_messages_per_1k'])}",
             "broker CPU ms /1k (twin, Kafka)":
                 f"{fmt(r['twin_broker_cpu_ms_per_1k'])}, "
                 f"{fmt(r['kafka_broker_cpu_ms_per_1k'])}"}
            for _, r in fid.iterrows()]
    return md_table(pd.DataFrame(rows))


def events_md(events: pd.DataFrame) -> str:
    rows = [{"workload": r["workload"], "case": r["case"],
             "size": fmt(r["size"]) if r["source"] == "metadata" else "",
             "measure": EVENT_TITLES.get(r["measure"], r["measure"]),
             "zk twin": _ci(r["twin_mean"], r["twin_ci_lo"], r["twin_ci_hi"], int(r["twin_n"])),
             "Kafka on ZK": _ci(r["kafka_mean"], r["kafka_ci_lo"], r["kafka_ci_hi"],
                                int(r["kafka_n"])),
             "Kafka/twin": _ratio(r, "ratio")} for _, r in events.iterrows()]
    return md_table(pd.DataFrame(rows))


def cost_md(cost: pd.DataFrame, archs: Archs) -> str:
    rows = []
    for a in archs:
        for _, r in cost[cost["arch"] == a.name].iterrows():
            rows.append({"workload": r["workload"], "cell": cell_text(r),
                         "scenario": r["scenario"], "architecture": a.display_name,
                         "measure": a.cost_label,
                         "per 1k records": fmt(r["coord_messages_per_1k"]),
                         "bytes per 1k": fmt(r["coord_bytes_per_1k"]),
                         "broker CPU ms per 1k": fmt(r["broker_cpu_ms_per_1k"]),
                         "tries": int(r["tries"])})
    return md_table(pd.DataFrame(rows)) if rows else "_No coordination was read._\n"


def kafka_md(four: pd.DataFrame, steps: pd.DataFrame, fidelity: pd.DataFrame,
             cost: pd.DataFrame, events: pd.DataFrame | None = None,
             archs: Archs = DEFAULT) -> str:
    has_events = events is not None and not events.empty
    if four.empty and not has_events:
        return ("_No workload ran real Kafka among the inputs (`--arch "
                "zk,dsbs,kafka-zk,kafka-kraft`, `make bench-kafka`; docs/real-kafka.md)._\n")
    parts = [INTRO]
    if not four.empty:
        parts += ["Records/s, mean [95% CI] over tries:\n", four_md(four, archs)]
    if not steps.empty:
        parts += [STEPS_INTRO, steps_md(steps)]
    if not fidelity.empty:
        parts += [FIDELITY_INTRO, fidelity_md(fidelity)]
    if not cost.empty:
        parts += ["**Coordination and CPU per 1,000 records**, every architecture (both roles "
                  "of a session together):\n", cost_md(cost, archs)]
    if has_events:
        assert events is not None
        parts += [EVENTS_INTRO, events_md(events)]
    parts.append("Figure: `kafka-four-*`. Every column: `kafka_four.csv`, `kafka_steps.csv`, "
                 "`kafka_fidelity.csv`, `kafka_cost.csv`, `kafka_fidelity_events.csv`.\n")
    return "\n".join(parts)
