"""The round-trip-time model (spark_analysis/studies/rtt/tables.py) on sessions made to follow
it: it must predict them exactly, its limit must be the ratio of round trips per record, and a
session without counters must leave the model empty rather than guess."""

from __future__ import annotations

import math

import pandas as pd
import pytest

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
