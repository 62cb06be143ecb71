"""Round-trip-time sweeps (format 6, workload ``rtt_ms``): throughput against the network's
round trip, every architecture beside the baseline (ZooKeeper), and a model that predicts
their ratio.

The model. A closed-loop client waits for every request: its records take the time of its
requests' round trips plus the work done. Work does not depend on the network; round trips do.
So for one role (production or consumption) of one session::

    wall(rtt) = wall(0) + R x (held(rtt) - held(0))

where R is the round trips on one client's critical path, counted from the session's counters
(counters.csv), and held is the delay the line measured on the client's path
(``rtt_measured_ms``: the nominal rtt plus the line's own lateness, so the model uses what the
packets saw). Per client of a role:

* production: Produce x (1 + k c), over the producers;
* consumption: Fetch x (1 + k c) + OffsetCommit x (1 + w c) + OffsetFetch + ListOffsets +
  FindCoordinator, over the consumers;

with the Kafka requests by API (``kafka_requests_*``) and the coordination requests a data
request waits for, k per Produce and Fetch (the leadership checks; an OffsetFetch's read falls
with them) and w per OffsetCommit, each of them c round trips. Where they come from, per
architecture (its coordinator's counters name it):

* zk: the requests of the zk twin's direct session (``DATA_PATH_COORDINATION``, which carries
  the data path's leadership checks and offset writes), of which the writes are the offset
  commits' (w) and the rest the leadership checks (k). Its writes are not counted apart: they
  are the writes (``COORDINATION_WRITES``) that the other session's requests cannot account
  for. c = 1: a request to the ZooKeeper server and its answer.
* raft: a leadership check (``metadata_check: per_request``) and an OffsetFetch are each a
  ReadIndex barrier (``RAFT_BARRIERS``, k), a commit one proposal to the quorum
  (``RAFT_PROPOSALS``, w; the group's membership records, a few per session, are proposals
  too and counted with them). Each is one quorum round from the leader (its heartbeat or
  append to the voters and their answers) plus, when the broker asking is not the leader, the
  control channel's round trip to it: c = 1 + the share of them the leader served for another
  broker (``RAFT_SERVED``; a request sent again after a lost answer is served, and counted,
  again).
* any other (DSBS, the single node): no such counter. DSBS's gossip is never between a
  request and its answer, so k = w = 0; c is undefined there (NaN: no request to count it on).

wall(0), R and held(0) are means over the tries at the sweep's smallest rtt (0); every other
point is a prediction from them, compared with what was measured. As rtt grows the work
vanishes beside the round trips and the ratio other/baseline (DSBS/ZK, RAFT/ZK) tends to
R_baseline / R_other: the limit column.
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
# Requests a leadership check stands behind (metadata_check: per_request).
CHECKED_APIS: tuple[str, ...] = ("produce", "fetch")
# Counters (source coordinator): every ZooKeeper request, those of the data path's session (the
# ones a data request waits for), and the writes of either session. The data path's writes
# (offset commits) are counted as the writes the other session (kazoo: group registries and
# the like) cannot account for, were all its requests writes.
ALL_COORDINATION = "zk_requests"
DATA_PATH_COORDINATION = "zk_direct_requests"
COORDINATION_WRITES = "zk_writes"
# Counters (source coordinator) of the Raft twin: ReadIndex barriers and proposals each broker
# asked for, and the requests for them the quorum's leader served for other brokers.
RAFT_BARRIERS = "raft_read_barriers"
RAFT_PROPOSALS = "raft_proposals"
RAFT_SERVED = "raft_requests_served"
# The round-trip columns round_trips adds (NaN where a session has no counters).
TRIP_COLUMNS = ("round_trips", "coord_per_check", "coord_per_commit", "coord_round_trips")


def round_trips(sessions: pd.DataFrame, counters: pd.DataFrame) -> pd.DataFrame:
    """``sessions`` (one row per session x role) with ``round_trips`` (on one client's path),
    ``coord_per_check`` (k above), ``coord_per_commit`` (w) and ``coord_round_trips`` (c)
    from the sessions' counters; NaN where a session has no counters."""
    out = sessions.copy()
    if counters.empty or out.empty:
        for col in TRIP_COLUMNS:
            out[col] = math.nan
        return out
    key = ["run_id", "cell_id", "scenario", "try"]
    c = counters.copy()
    c["increase"] = pd.to_numeric(c["increase"], errors="coerce")
    wide = c.pivot_table(index=key, columns="counter", values="increase", aggfunc="sum")

    def total(*names: str) -> pd.Series:
        present = [n for n in names if n in wide.columns]
        return wide[present].sum(axis=1) if present else pd.Series(0.0, index=wide.index)

    def has(*names: str) -> pd.Series:
        present = [n for n in names if n in wide.columns]
        return (wide[present].notna().any(axis=1) if present
                else pd.Series(False, index=wide.index))

    def api(*names: str) -> pd.Series:
        return total(*(f"kafka_requests_{n}" for n in names))

    checked, commits = api(*CHECKED_APIS), api("offset_commit")

    def per(requests: pd.Series, per_what: pd.Series) -> pd.Series:
        return (requests / per_what.where(per_what > 0)).fillna(0.0)

    # The zk twin (and, all zero, every architecture without a data-path counter).
    direct = total(DATA_PATH_COORDINATION)
    others = (total(ALL_COORDINATION) - direct).clip(lower=0)
    writes = (total(COORDINATION_WRITES) - others).clip(lower=0).combine(direct, min)
    k, w = per(direct - writes, checked), per(writes, commits)
    trips = pd.Series(math.nan, index=wide.index).where(
        ~has(ALL_COORDINATION, DATA_PATH_COORDINATION, COORDINATION_WRITES), 1.0)
    # The Raft twin.
    raft = has(RAFT_BARRIERS, RAFT_PROPOSALS)
    barriers, proposals = total(RAFT_BARRIERS), total(RAFT_PROPOSALS)
    asked = barriers + proposals
    k, w = k.where(~raft, per(barriers, checked)), w.where(~raft, per(proposals, commits))
    trips = trips.where(~raft, 1.0 + total(RAFT_SERVED) / asked.where(asked > 0))
    each = trips.fillna(1.0)  # where k = w = 0 it multiplies nothing
    found = pd.DataFrame({
        "coord_per_check": k, "coord_per_commit": w, "coord_round_trips": trips,
        "trips_production": api("produce") * (1 + k * each),
        "trips_consumption": (api("fetch") * (1 + k * each) + commits * (1 + w * each)
                              + api("offset_fetch", "list_offsets", "find_coordinator")),
    }).reset_index()
    out["try"] = out["try"].astype(int)
    found["try"] = found["try"].astype(int)
    out = out.merge(found, on=key, how="left")
    on_path = np.where(out["role"] == "production", out["trips_production"],
                       out["trips_consumption"])
    out["round_trips"] = on_path / out["clients"].where(out["clients"] > 0)
    return out.drop(columns=["trips_production", "trips_consumption"])


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
                     "coord_per_check": float(g["coord_per_check"].mean()),
                     "coord_per_commit": float(g["coord_per_commit"].mean()),
                     "coord_round_trips": float(g["coord_round_trips"].mean()),
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
