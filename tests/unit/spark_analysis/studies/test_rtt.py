"""The round-trip-time model (spark_analysis/studies/rtt/tables.py) on sessions made to follow
it: it must predict them exactly, its limit must be the ratio of round trips per record, and a
session without counters must leave the model empty rather than guess."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from spark_analysis import markdown as mt
from spark_analysis.archs import Archs
from spark_analysis.studies.rtt import section as rtt_section
from spark_analysis.studies.rtt import tables as rtt_tables

RECORDS = 15_000
CLIENTS = 3
BATCH = 20
WORK_S = {"zk": 4.0, "dsbs": 1.5}  # wall time at rtt 0
COORD = {"zk": 1.0, "dsbs": 0.0}  # coordination round trips per data request
LATE_MS = 0.2  # the delay line's lateness: held = rtt + LATE_MS


def sessions_and_counters() -> tuple[pd.DataFrame, pd.DataFrame]:
    rows, counters = [], []
    requests = RECORDS // BATCH
    for arch in ("zk", "dsbs"):
        for rtt in (0.0, 1.0, 10.0):
            for try_ in (1, 2):
                run_id, cell = f"run-{arch}", f"rtt-32B-b20-rtt{rtt:g}"
                held = rtt + LATE_MS if rtt else LATE_MS
                trips = requests * (1 + COORD[arch]) / CLIENTS
                wall = WORK_S[arch] + trips * (held - LATE_MS) / 1000 + 0.01 * try_
                rows.append({"run_id": run_id, "workload": "rtt", "arch": arch,
                             "cell_id": cell, "table": "rtt", "scenario": "split",
                             "role": "production", "msg_size": 32, "batch": BATCH,
                             "try": try_, "offset_commit": "every_fetch",
                             "metadata_check": "per_request", "rtt_ms": rtt,
                             "clients": CLIENTS, "records": RECORDS, "wall_s": wall,
                             "rps": RECORDS / wall, "rtt_measured_ms": held,
                             "delayed_packets": 100, "delay_cpu_s": 0.1})
                key = {"run_id": run_id, "arch": arch, "label": "", "cell_id": cell,
                       "scenario": "split", "try": try_}
                counters += [
                    {**key, "source": "broker", "counter": "kafka_requests_produce",
                     "increase": requests},
                    {**key, "source": "broker", "counter": "kafka_requests_metadata",
                     "increase": 6}]
                if arch == "zk":
                    counters.append({**key, "source": "coordinator",
                                     "counter": "zk_direct_requests",
                                     "increase": requests * COORD["zk"]})
    return pd.DataFrame(rows), pd.DataFrame(counters)


def test_model_predicts_sessions_that_follow_it_and_names_its_limit() -> None:
    sessions, counters = sessions_and_counters()
    trips = rtt_tables.round_trips(sessions, counters)
    zk = trips[trips["arch"] == "zk"]
    assert zk["coord_per_check"].eq(1.0).all() and zk["coord_per_commit"].eq(0.0).all()
    assert trips.loc[trips["arch"] == "dsbs", "coord_per_check"].eq(0.0).all()
    assert zk["round_trips"].iloc[0] == pytest.approx(RECORDS / BATCH * 2 / CLIENTS)
    st = rtt_tables.predict(rtt_tables.rtt_stats(trips))
    assert (st["n"] == 2).all()
    assert st["rps_model"].to_numpy() == pytest.approx(st["rps_mean"].to_numpy(), rel=0.01)
    cmp = rtt_tables.rtt_comparison(st)
    assert list(cmp["rtt_ms"]) == [0.0, 1.0, 10.0]
    assert cmp["ratio_model"].to_numpy() == pytest.approx(cmp["ratio"].to_numpy(), rel=0.01)
    assert cmp["ratio_limit"].eq(2.0).all()
    # Work dominates at 0, round trips at 10 ms: the ratio falls toward the limit.
    assert cmp["ratio"].iloc[0] > cmp["ratio"].iloc[2] > 2.0
    lo, hi = cmp["ratio_lo"].iloc[1], cmp["ratio_hi"].iloc[1]
    assert lo < cmp["ratio"].iloc[1] < hi


def test_offset_writes_are_the_commits_and_the_rest_leadership_checks() -> None:
    """metadata_check cached: the zk twin's data-path requests are the offset writes alone, so
    production waits for none and each commit for one."""
    key = {"run_id": "r", "arch": "zk", "label": "", "cell_id": "c-rtt0", "scenario": "split",
           "try": 1}
    # 10 of the writes are kazoo's (group registries): zk_requests - zk_direct_requests.
    counts = {"kafka_requests_produce": 100, "kafka_requests_fetch": 100,
              "kafka_requests_offset_commit": 100, "kafka_requests_offset_fetch": 3,
              "zk_requests": 113, "zk_direct_requests": 103, "zk_writes": 113}
    counters = pd.DataFrame([{**key, "source": "x", "counter": n, "increase": v}
                             for n, v in counts.items()])
    sessions = pd.DataFrame([{**key, "role": role, "clients": 1} for role in
                             ("production", "consumption")])
    trips = rtt_tables.round_trips(sessions, counters).set_index("role")
    assert trips.loc["production", "coord_per_check"] == 0.0
    assert trips.loc["production", "coord_per_commit"] == pytest.approx(1.03)
    assert trips.loc["production", "round_trips"] == 100
    assert trips.loc["consumption", "round_trips"] == pytest.approx(100 + 100 * 2.03 + 3)


def test_sessions_without_counters_get_no_model() -> None:
    sessions, _ = sessions_and_counters()
    trips = rtt_tables.round_trips(sessions, pd.DataFrame())
    assert trips["round_trips"].isna().all()
    st = rtt_tables.predict(rtt_tables.rtt_stats(trips))
    assert st["rps_model"].isna().all()
    cmp = rtt_tables.rtt_comparison(st)
    assert not cmp.empty and all(math.isnan(v) for v in cmp["ratio_limit"])


def test_raft_waits_for_a_barrier_per_check_and_a_proposal_per_commit() -> None:
    """The Raft twin's data-path coordination: a ReadIndex barrier per Produce, Fetch and
    OffsetFetch, a proposal per OffsetCommit; each a quorum round, plus a round trip to the
    leader for those the leader served for another broker (here two thirds of them)."""
    key = {"run_id": "r", "arch": "raft", "label": "", "cell_id": "c-rtt0",
           "scenario": "split", "try": 1}
    counts = {"kafka_requests_produce": 100, "kafka_requests_fetch": 100,
              "kafka_requests_offset_commit": 100, "kafka_requests_offset_fetch": 3,
              "raft_read_barriers": 203, "raft_proposals": 100, "raft_requests_served": 202,
              "raft_messages_out": 2000}
    counters = pd.DataFrame([{**key, "source": "coordinator", "counter": n, "increase": v}
                             for n, v in counts.items()])
    sessions = pd.DataFrame([{**key, "role": role, "clients": 1} for role in
                             ("production", "consumption")])
    trips = rtt_tables.round_trips(sessions, counters).set_index("role")
    k, c = 203 / 200, 1 + 202 / 303
    assert trips.loc["production", "coord_per_check"] == pytest.approx(k)
    assert trips.loc["production", "coord_per_commit"] == pytest.approx(1.0)
    assert trips.loc["production", "coord_round_trips"] == pytest.approx(c)
    assert trips.loc["production", "round_trips"] == pytest.approx(100 * (1 + k * c))
    assert trips.loc["consumption", "round_trips"] == pytest.approx(
        100 * (1 + k * c) + 100 * (1 + c) + 3)


def test_a_round_trip_per_coordination_request_is_the_zk_twin_s_and_undefined_on_dsbs() -> None:
    sessions, counters = sessions_and_counters()
    trips = rtt_tables.round_trips(sessions, counters)
    assert trips.loc[trips["arch"] == "zk", "coord_round_trips"].eq(1.0).all()
    assert trips.loc[trips["arch"] == "dsbs", "coord_round_trips"].isna().all()
    # Undefined where there is nothing to multiply: DSBS's round trips are its requests'.
    dsbs = trips[trips["arch"] == "dsbs"]
    assert dsbs["round_trips"].eq(RECORDS / BATCH / CLIENTS).all()


def test_the_report_keeps_each_architecture_s_rows_apart() -> None:
    """Three architectures: one table per pair, and each sweep's ends (headline, reading) are
    the rows of one architecture, never its first rtt's row of one and its last of another."""
    sessions, counters = sessions_and_counters()
    raft = sessions[sessions["arch"] == "zk"].assign(
        arch="raft", run_id="run-raft", wall_s=lambda f: f["wall_s"] * 2,
        rps=lambda f: f["records"] / f["wall_s"])
    raft_counters = counters[counters["arch"] == "zk"].assign(arch="raft", run_id="run-raft")
    trips = rtt_tables.round_trips(pd.concat([sessions, raft]),
                                   pd.concat([counters, raft_counters]))
    archs = Archs.from_manifests([{"arch": "raft", "architectures": {"raft": {
        "display_name": "Raft", "short_name": "RAFT", "color": "#55A868", "order": 2,
        "baseline": False, "cost_column": "coord_messages", "cost_label": "Raft messages"}}}])
    cmp = rtt_tables.rtt_comparison(rtt_tables.predict(rtt_tables.rtt_stats(trips)), archs)
    assert set(cmp["other"]) == {"dsbs", "raft"}
    text = rtt_section.rtt_md(cmp, archs)
    tables = [t for t in text.split("\n\n") if t.startswith("|")]
    assert len(tables) == 2
    assert "DSBS/ZK" in tables[0] and "RAFT" not in tables[0]
    assert "RAFT/ZK" in tables[1] and "DSBS" not in tables[1]
    headline = rtt_section.rtt_headline(cmp).splitlines()
    assert len(headline) == 2
    for line in headline:
        other = "dsbs" if "DSBS/ZK" in line else "raft"
        mine = cmp[cmp["other"] == other].sort_values("rtt_ms")
        assert f"at {mt.fmt(mine['rtt_ms'].iloc[-1])} ms" in line
        assert f"{mt.fmt(mine['ratio'].iloc[-1])} at" in line
