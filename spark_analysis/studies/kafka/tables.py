"""The Real Kafka study's tables.

``four``: one row per cell (CELL_KEY) x architecture, records/s n/mean/sd and its 95% t
interval, only in the cells where real Kafka ran (Kafka has no per-request leadership check, so
those are the cells that compare like with like).

``steps``: per cell, the steps away from ZooKeeper as ratios of means with Fieller's 95%
interval: ``kraft_over_zk`` (Kafka on KRaft / Kafka on ZooKeeper: one code base, only the
coordinator changed), ``raft_over_zk`` (the Raft twin / the zk twin: the same step on our core,
so beside ``kraft_over_zk`` it calibrates the twins against Kafka) and ``dsbs_over_zk`` (DSBS /
the zk twin).

``fidelity``: per cell, the zk twin beside Kafka on ZooKeeper under the same policies:
records/s of each and their ratio (Kafka / twin), ZooKeeper requests, coordination bytes and
broker CPU per 1,000 records of each.

``fidelity_events``: the same pair for what is not a rate: topic creation (a CreateTopics round
trip's median; until every broker lists the topics) at each metadata size, and failover
(detection; the longest produce gap) in each fault case, where a workload ran both. The
metadata and faults sections show every architecture.
"""

from __future__ import annotations

import math

import pandas as pd

from spark_analysis import stats
from spark_analysis.order import paper_order
from spark_analysis.schema import CELL_KEY, COORD_KEY
from spark_analysis.studies.kafka.aggregate import EVENT_MEASURES, KAFKA_KRAFT, KAFKA_ZK, REAL

# What identifies one row of fidelity_events (aggregate.EVENT_COLUMNS less the statistics).
EVENT_KEY = ["source", "workload", "case", "size", "measure"]

_STATS = ("n", "mean", "sd")
# (column prefix, numerator arch, denominator arch) of the steps away from ZooKeeper, then the
# twins against the Kafka they stand beside (issue 36's three-broker targets: DSBS against
# KRaft, the zk twin against Kafka on ZooKeeper, at least 1.0 under Kafka's default policies).
STEPS = (("kraft_over_zk", KAFKA_KRAFT, KAFKA_ZK), ("raft_over_zk", "raft", "zk"),
         ("dsbs_over_zk", "dsbs", "zk"), ("dsbs_over_kraft", "dsbs", KAFKA_KRAFT),
         ("zk_over_kafka_zk", "zk", KAFKA_ZK))


def four(long: pd.DataFrame) -> pd.DataFrame:
    if long.empty:
        return pd.DataFrame()
    key = list(CELL_KEY)
    kafka_cells = long[long["arch"].isin(REAL)][key].drop_duplicates()
    out = long.merge(kafka_cells, on=key, how="inner").copy()
    ci = [stats.t_interval(m, s, int(n)) for m, s, n in
          zip(out["mean"], out["sd"], out["n"], strict=True)]
    out["ci_lo"] = [c[0] for c in ci]
    out["ci_hi"] = [c[1] for c in ci]
    return paper_order(out[[*key, "arch", *_STATS, "ci_lo", "ci_hi"]], extra=["arch"])


def kafka_cells(cost: pd.DataFrame, four_table: pd.DataFrame) -> pd.DataFrame:
    """The shared cost table (spark_analysis/cost.py) in the cells of ``four`` only (where
    real Kafka ran), A/A sides left out."""
    if cost.empty or four_table.empty:
        return pd.DataFrame()
    key = list(COORD_KEY)
    mine = cost[cost["side"] == "*"] if "side" in cost else cost
    return paper_order(mine.merge(four_table[key].drop_duplicates(), on=key, how="inner"),
                       extra=["arch"])


def _pair(long: pd.DataFrame, a: str, b: str) -> pd.DataFrame:
    return stats.pair(long, list(CELL_KEY), "arch", (a, "a"), (b, "b"))


def steps(four_table: pd.DataFrame) -> pd.DataFrame:
    if four_table.empty:
        return pd.DataFrame()
    key = list(CELL_KEY)
    out: pd.DataFrame | None = None
    for name, a, b in STEPS:
        pair = _pair(four_table, a, b)
        if pair.empty:
            continue
        r = stats.ratio_columns(pair, "a", "b")[[*key, "ratio", "ratio_ci_lo", "ratio_ci_hi",
                                                 "p_welch"]]
        r = r.rename(columns={c: f"{name}_{c.removeprefix('ratio_')}" if c != "ratio"
                              else name for c in r.columns if c not in key})
        out = r if out is None else out.merge(r, on=key, how="outer")
    if out is None:
        return pd.DataFrame()
    return paper_order(out)


def fidelity(four_table: pd.DataFrame, cost: pd.DataFrame) -> pd.DataFrame:
    """The zk twin beside Kafka on ZooKeeper, per cell and role."""
    if four_table.empty:
        return pd.DataFrame()
    pair = _pair(four_table, KAFKA_ZK, "zk")
    if pair.empty:
        return pd.DataFrame()
    out = stats.ratio_columns(pair, "a", "b").rename(columns={
        "a_mean": "kafka_rps", "b_mean": "twin_rps", "a_ci_lo": "kafka_ci_lo",
        "a_ci_hi": "kafka_ci_hi", "b_ci_lo": "twin_ci_lo", "b_ci_hi": "twin_ci_hi",
        "a_n": "kafka_n", "b_n": "twin_n"})
    out = out.drop(columns=["a_sd", "b_sd"])
    columns = ("coord_messages_per_1k", "coord_bytes_per_1k", "broker_cpu_ms_per_1k")
    if not cost.empty:
        ckey = list(COORD_KEY)
        for arch, who in ((KAFKA_ZK, "kafka"), ("zk", "twin")):
            mine = cost[cost["arch"] == arch][[*ckey, *columns]]
            out = out.merge(mine.rename(columns={c: f"{who}_{c}" for c in columns}), on=ckey,
                            how="left")
    for who in ("kafka", "twin"):
        for c in columns:
            if f"{who}_{c}" not in out:
                out[f"{who}_{c}"] = math.nan
    return paper_order(out)


def fidelity_events(events: pd.DataFrame) -> pd.DataFrame:
    """The zk twin beside Kafka on ZooKeeper per event (EVENT_KEY): each side's mean and 95%
    interval, and Kafka / twin with Fieller's interval; topic creation first, by case, size
    and measure (EVENT_MEASURES' order), then the fault cases."""
    if events.empty:
        return pd.DataFrame()
    pair = stats.pair(events, EVENT_KEY, "arch", (KAFKA_ZK, "a"), ("zk", "b"))
    if pair.empty:
        return pd.DataFrame()
    out = stats.ratio_columns(pair, "a", "b").rename(columns={
        "a_mean": "kafka_mean", "b_mean": "twin_mean", "a_ci_lo": "kafka_ci_lo",
        "a_ci_hi": "kafka_ci_hi", "b_ci_lo": "twin_ci_lo", "b_ci_hi": "twin_ci_hi",
        "a_n": "kafka_n", "b_n": "twin_n"}).drop(columns=["a_sd", "b_sd"])
    rank = {m: i for i, m in enumerate(m for ms in EVENT_MEASURES.values() for m in ms)}
    out = out.assign(_m=out["measure"].map(rank).fillna(len(rank)))
    return out.sort_values(["source", "workload", "case", "size", "_m"],
                           ascending=[False, True, True, True, True],
                           kind="stable").drop(columns=["_m"]).reset_index(drop=True)
