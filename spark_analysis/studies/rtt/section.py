"""The rtt study's report section and Summary lines (Markdown): per sweep point, the measured
ratio beside the model's, and what the sweep says about a result measured across machines."""

from __future__ import annotations

import pandas as pd

from spark_analysis.archs import DEFAULT, Archs
from spark_analysis.markdown import fmt, interval, md_table

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
the role's Kafka requests (counters.csv, by API), each plus the round trips of the coordination
requests it waits for (the zk twin's data-path ZooKeeper requests, one round trip each: its
writes are the offset commits', the rest leadership checks of Produce and Fetch; on the Raft
twin a ReadIndex barrier per check and a proposal per commit, each a quorum round plus, from a
broker that is not the quorum's leader, a round trip to it; none on DSBS, whose gossip never
stands between a request and its answer), over the role's clients. `model` is the ratio it
predicts from the rtt-0 sessions alone; `limit`, the ratio it tends to as the round trips swamp
the work: round trips per record, the baseline's over the other's (ZK over DSBS).
"""


def _rtt_policy(g: pd.DataFrame) -> str:
    r = g.iloc[0]
    return (f"{r['workload']}: {r['msg_size']} B x {r['batch']}, offset_commit "
            f"{r['offset_commit']}, metadata_check {r['metadata_check']}")


def _sweep_ends(cmp: pd.DataFrame) -> list[tuple[pd.Series, pd.Series]]:
    """Per sweep point (workload, grid point, policies, scenario, role) and architecture
    compared with the baseline: its rows at the smallest and at the largest rtt."""
    keys = ["workload", "table", "msg_size", "batch", "offset_commit", "metadata_check",
            "scenario", "role", "other"]
    out = []
    for _, g in cmp.groupby(keys, sort=False):
        g = g.sort_values("rtt_ms")
        out.append((g.iloc[0], g.iloc[-1]))
    return out


def rtt_headline(cmp: pd.DataFrame) -> str:
    """How the ratio moves with the network, one line per scenario x role of each sweep."""
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
             "Per policy combination, role (split) and architecture, the ratio at the smallest "
             "rtt swept (one machine) and at the largest, beside the limit the round trips "
             "alone set:\n"]
    for first, last in _sweep_ends(cmp[cmp["scenario"] == "split"]):
        lines.append(f"- {first['offset_commit']}+{first['metadata_check']}, {first['role']}, "
                     f"{first['other'].upper()}/{first['baseline'].upper()}: "
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


def _rtt_table(cmp: pd.DataFrame, archs: Archs) -> str:
    """One policy combination's rows of one architecture beside the baseline."""
    rows = []
    for _, r in cmp.sort_values(["scenario", "role", "rtt_ms"]).iterrows():
        base, other = archs[r["baseline"]], archs[r["other"]]
        rows.append({
            "scenario": r["scenario"], "role": r["role"], "rtt ms": fmt(r["rtt_ms"]),
            "held ms": fmt(r["rtt_measured_baseline_ms"]),
            f"{base.short_name} rps": fmt(r["rps_baseline"]),
            f"{other.short_name} rps": fmt(r["rps_other"]),
            archs.ratio_name(other): fmt(r["ratio"]),
            "95% CI": interval(r["ratio_lo"], r["ratio_hi"]),
            "model": fmt(r["ratio_model"]),
            f"round trips/record {base.short_name}": fmt(r["round_trips_per_record_baseline"]),
            f"round trips/record {other.short_name}": fmt(r["round_trips_per_record_other"]),
            "limit": fmt(r["ratio_limit"]),
        })
    return md_table(pd.DataFrame(rows))


def rtt_md(cmp: pd.DataFrame, archs: Archs = DEFAULT) -> str:
    if cmp.empty:
        return ("_No round-trip-time sweeps among the inputs (`twinbench run --workload "
                "rtt`)._\n")
    parts = [RTT_INTRO]
    keys = ["workload", "table", "msg_size", "batch", "offset_commit", "metadata_check"]
    for _, policy in cmp.groupby(keys):
        parts.append(f"**{_rtt_policy(policy)}**\n")
        # One table per architecture compared with the baseline: its columns name both.
        for _, g in sorted(policy.groupby("other"), key=lambda o: archs.rank(o[0])):
            parts.append(_rtt_table(g, archs))
    parts.append(_rtt_reading(cmp))
    parts.append("Every column, per architecture too (records/s with its interval, round trips "
                 "per client, the delay line's CPU seconds): `rtt_stats.csv`, "
                 "`rtt_comparison.csv`, `rtt_sessions.csv`. Figures: `rtt-*`.\n")
    return "\n".join(parts)
