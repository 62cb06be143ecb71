"""Round-trip-time sweeps (format 6, workload ``rtt_ms``): throughput against the network's
round trip, ZooKeeper beside DSBS, and a model that predicts their ratio.

The model. A closed-loop client waits for every request: its records take the time of its
requests' round trips plus the work done. Work does not depend on the network; round trips do.
So for one role (production or consumption) of one session::

    wall(rtt) = wall(0) + R x (held(rtt) - held(0))

where R is the round trips on one client's critical path, counted from the session's counters
(counters.csv), and held is the delay the line measured on the client's path
(``rtt_measured_ms``: the nominal rtt plus the line's own lateness, so the model uses what the
packets saw). R per client of a role = the role's Kafka requests x (1 + c) / clients:

* the role's Kafka requests, by API (``kafka_requests_*``): Produce for production; Fetch,
  OffsetCommit, OffsetFetch, ListOffsets and FindCoordinator for consumption;
* c, the coordination round trips each data request waits for: the requests of the counters in
  ``DATA_PATH_COORDINATION`` (the zk twin's direct session, which carries the data path's
  leadership checks and offset writes) over the data requests (Produce, Fetch, OffsetCommit).
  DSBS has no such counter: its gossip is never between a request and its answer, so c = 0.

wall(0), R and held(0) are means over the tries at the sweep's smallest rtt (0); every other
point is a prediction from them, compared with what was measured. As rtt grows the work
vanishes beside the round trips and the ratio DSBS/ZK tends to R_zk / R_dsbs: the limit column.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from spark_analysis import stats
from spark_analysis.archs import DEFAULT, Archs

# A sweep point's identity: the workload, the grid point, the policies, the scenario and role;
# rtt_ms and arch beside it.
RTT_KEY: tuple[str, ...] = ("workload", "table", "msg_size", "batch", "offset_commit",
                            "metadata_check", "scenario", "role")
# Kafka requests on each role's critical path (counters.csv, source broker).
ROLE_APIS: dict[str, tuple[str, ...]] = {
    "production": ("produce",),
    "consumption": ("fetch", "offset_commit", "offset_fetch", "list_offsets",
                    "find_coordinator"),
}
# The data requests a coordination round trip may stand behind.
DATA_APIS: tuple[str, ...] = ("produce", "fetch", "offset_commit")
# Counters (source coordinator) of coordination requests a data request waits for.
DATA_PATH_COORDINATION: tuple[str, ...] = ("zk_direct_requests",)


def round_trips(sessions: pd.DataFrame, counters: pd.DataFrame) -> pd.DataFrame:
    """``sessions`` (one row per session x role) with ``round_trips`` (on one client's path)
    and ``coord_per_request`` (c above) from the sessions' counters; NaN where a session has
    no counters."""
    out = sessions.copy()
    if counters.empty or out.empty:
        out["round_trips"] = math.nan
        out["coord_per_request"] = math.nan
        return out
    key = ["run_id", "cell_id", "scenario", "try"]
    c = counters.copy()
    c["increase"] = pd.to_numeric(c["increase"], errors="coerce")
    wide = c.pivot_table(index=key, columns="counter", values="increase", aggfunc="sum")

    def total(names: list[str]) -> pd.Series:
        present = [n for n in names if n in wide.columns]
        return wide[present].sum(axis=1) if present else pd.Series(0.0, index=wide.index)

    data = total([f"kafka_requests_{a}" for a in DATA_APIS])
    coord = total(list(DATA_PATH_COORDINATION))
    per_request = (coord / data.where(data > 0)).rename("coord_per_request")
    parts = [per_request]
    for role, apis in ROLE_APIS.items():
        parts.append(total([f"kafka_requests_{a}" for a in apis]).rename(f"requests_{role}"))
    found = pd.concat(parts, axis=1).reset_index()
    out["try"] = out["try"].astype(int)
    found["try"] = found["try"].astype(int)
    out = out.merge(found, on=key, how="left")
    requests = np.where(out["role"] == "production", out["requests_production"],
                        out["requests_consumption"])
    clients = out["clients"].where(out["clients"] > 0)
    out["round_trips"] = requests * (1 + out["coord_per_request"]) / clients
    return out.drop(columns=[f"requests_{r}" for r in ROLE_APIS])


def rtt_stats(sessions: pd.DataFrame) -> pd.DataFrame:
    """Per sweep point, rtt and arch: tries, mean/sd/95% CI of records/s, mean wall time,
    measured rtt, round trips per client and per record, delay line CPU."""
    if sessions.empty:
        return pd.DataFrame()
    rows = []
    for keys, g in sessions.groupby([*RTT_KEY, "rtt_ms", "arch"], dropna=False):
        rps = g["rps"].dropna()
        n = len(rps)
        mean, sd = float(rps.mean()), float(rps.std(ddof=1)) if n > 1 else math.nan
        lo, hi = stats.t_interval(mean, sd, n)
        per_record = (g["round_trips"] * g["clients"] / g["records"]).mean()
        rows.append({**dict(zip([*RTT_KEY, "rtt_ms", "arch"], keys, strict=True)),
                     "n": n, "rps_mean": mean, "rps_sd": sd, "rps_lo": lo, "rps_hi": hi,
                     "wall_s": float(g["wall_s"].mean()), "records": float(g["records"].mean()),
                     "rtt_measured_ms": float(g["rtt_measured_ms"].mean()),
                     "round_trips": float(g["round_trips"].mean()),
                     "round_trips_per_record": float(per_record),
                     "coord_per_request": float(g["coord_per_request"].mean()),
                     "delay_cpu_s": float(g["delay_cpu_s"].mean())})
    return pd.DataFrame(rows)


def predict(st: pd.DataFrame) -> pd.DataFrame:
    """``rtt_stats`` with ``rps_model``: each point predicted from its sweep's smallest rtt."""
    if st.empty:
        return st
    out = []
    for _, g in st.groupby([*RTT_KEY, "arch"], dropna=False):
        g = g.sort_values("rtt_ms").copy()
        base = g.iloc[0]
        held = g["rtt_measured_ms"].fillna(g["rtt_ms"])
        base_held = held.iloc[0]
        wall = base["wall_s"] + base["round_trips"] * (held - base_held) / 1000.0
        g["rps_model"] = base["records"] / wall
        g["model_from_rtt_ms"] = base["rtt_ms"]
        out.append(g)
    return pd.concat(out, ignore_index=True)


def rtt_comparison(st: pd.DataFrame, archs: Archs = DEFAULT) -> pd.DataFrame:
    """Per sweep point and rtt: the baseline beside each other architecture, the measured
    ratio (other/baseline) with its Fieller interval, the model's ratio, and its limit at
    large rtt (round trips per record, baseline over other)."""
    if st.empty:
        return pd.DataFrame()
    base = archs.baseline.name
    rows = []
    for keys, g in st.groupby([*RTT_KEY, "rtt_ms"], dropna=False):
        by = {r["arch"]: r for _, r in g.iterrows()}
        if base not in by:
            continue
        b = by[base]
        for o in archs.others:
            if o.name not in by:
                continue
            a = by[o.name]
            lo, hi = stats.fieller(a["rps_mean"], a["rps_sd"], int(a["n"]), b["rps_mean"],
                                   b["rps_sd"], int(b["n"]))
            limit = (b["round_trips_per_record"] / a["round_trips_per_record"]
                     if a["round_trips_per_record"] > 0 else math.nan)
            rows.append({
                **dict(zip([*RTT_KEY, "rtt_ms"], keys, strict=True)),
                "baseline": base, "other": o.name, "n_baseline": int(b["n"]),
                "n_other": int(a["n"]),
                "rtt_measured_baseline_ms": b["rtt_measured_ms"],
                "rtt_measured_other_ms": a["rtt_measured_ms"],
                "rps_baseline": b["rps_mean"], "rps_other": a["rps_mean"],
                "ratio": a["rps_mean"] / b["rps_mean"] if b["rps_mean"] else math.nan,
                "ratio_lo": lo, "ratio_hi": hi,
                "ratio_model": (a["rps_model"] / b["rps_model"]
                                if b.get("rps_model") else math.nan),
                "round_trips_per_record_baseline": b["round_trips_per_record"],
                "round_trips_per_record_other": a["round_trips_per_record"],
                "ratio_limit": limit,
                "delay_cpu_s_baseline": b["delay_cpu_s"], "delay_cpu_s_other": a["delay_cpu_s"],
            })
    return pd.DataFrame(rows)
