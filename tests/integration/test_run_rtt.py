"""`twinbench run --arch zk,dsbs,raft` on the round-trip-time smoke workload: the three twins in
network namespaces behind a delay line, one cell per round-trip time; the run logs carry the
delay line's columns (docs/result-format.md, format 6) and the counters the analysis's model
reads. The model itself is tested on these rows (pandas only: the Spark side of the analysis is
tested on synthetic format-6 runs in test_analysis_spark.py)."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from harness import runlog
from harness.cluster import netns
from harness.netdelay import control
from spark_analysis.archs import Archs
from spark_analysis.studies.rtt import tables as rtt_tables
from tests.integration.test_run_smoke import zookeeper_missing

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.zookeeper]


def rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def test_rtt_smoke_delays_the_twins_and_records_what_the_model_needs(tmp_path: Path) -> None:
    for reason in (zookeeper_missing(), netns.available(), control.available()):
        if reason:
            pytest.skip(reason)
    out = tmp_path / "runs"
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "run", "--arch", "zk,dsbs,raft", "--workload",
         "rtt-smoke", "--out", str(out), "--quiet", "--seed", "5"],
        capture_output=True, text=True, timeout=280, check=False)
    assert done.returncode == 0, done.stderr
    by_arch = {json.loads((d / "manifest.json").read_text())["arch"]: d
               for d in map(Path, done.stdout.split())}
    assert set(by_arch) == {"zk", "dsbs", "raft"}
    sessions, counters, manifests = [], [], []
    for run in by_arch.values():
        manifest = json.loads((run / "manifest.json").read_text())
        manifests.append(manifest)
        assert manifest["format_version"] == runlog.FORMAT_VERSION
        assert not manifest["incomplete"]
        assert manifest["cluster"]["rtt"]["rtt_ms"] == [0.0, 3.0]
        records = rows(run / "records.csv")
        assert {(r["cell_id"], r["rtt_ms"]) for r in records} == {
            ("rtt-32B-b20-rtt0", "0.0"), ("rtt-32B-b20-rtt3", "3.0")}
        assert all(r["status"] == "ok" for r in records)
        for c in rows(run / "coordination.csv"):
            assert int(c["delayed_packets"]) > 0, c
            assert float(c["delay_cpu_s"]) >= 0, c
            held = float(c["rtt_measured_ms"])
            # The client's, ZooKeeper's and the Raft quorum's packets waited at least the
            # round trip asked for.
            assert held >= float(c["rtt_ms"]), c
        frame = pd.read_csv(run / "records.csv").merge(
            pd.read_csv(run / "coordination.csv")[
                ["cell_id", "scenario", "try", "rtt_measured_ms", "delay_cpu_s"]],
            on=["cell_id", "scenario", "try"])
        frame["workload"] = manifest["workload_name"]
        sessions.append(frame)
        counters.append(pd.read_csv(run / "counters.csv"))
    trips = rtt_tables.round_trips(pd.concat(sessions), pd.concat(counters))
    per = trips.groupby("arch")[["coord_per_check", "coord_per_commit"]].mean()
    each = trips.groupby("arch")["coord_round_trips"]
    # Leadership checked per request and an offset write per commit: every Produce, Fetch and
    # OffsetCommit of the zk twin waits for one ZooKeeper request, one round trip each; DSBS's
    # wait for none, so the round trips of one are not defined there (NaN, not 0 or 1).
    assert per.loc["zk"].to_numpy() == pytest.approx([1.0, 1.0], abs=0.15)
    assert each.get_group("zk").eq(1.0).all()
    assert per.loc["dsbs"].to_numpy() == pytest.approx([0.0, 0.0])
    assert each.get_group("dsbs").isna().all()
    # The Raft twin's check is a ReadIndex barrier and its commit a proposal, one per request
    # too (an OffsetFetch's barrier adds a few per cent to the checks, as its read does on
    # ZooKeeper); each costs a quorum round, and one more round trip from the broker asking to
    # the quorum's leader unless it is the leader. Three brokers lead a partition each and one
    # of them leads the quorum: some requests go to it, some are its own; a request sent again
    # (its answer lost) is a round trip more.
    assert per.loc["raft"].to_numpy() == pytest.approx([1.0, 1.0], abs=0.15)
    session = ["cell_id", "scenario", "try"]
    counted = pd.concat(counters)
    counted = counted[counted["arch"] == "raft"].pivot_table(
        index=session, columns="counter", values="increase", aggfunc="sum")
    asked = counted["raft_read_barriers"] + counted["raft_proposals"]
    retried = counted["raft_proposals_retried"].fillna(0)
    raft_trips = trips[trips["arch"] == "raft"].set_index(session)["coord_round_trips"]
    assert (raft_trips > 1.0).all(), f"{raft_trips}\n{counted.T}"
    assert (raft_trips <= 2.0 + (retried / asked).reindex(raft_trips.index)).all(), (
        f"{raft_trips}\n{counted.T}")
    assert (trips["round_trips"] > 0).all()
    cmp = rtt_tables.rtt_comparison(rtt_tables.predict(rtt_tables.rtt_stats(trips)),
                                    Archs.from_manifests(manifests))
    assert set(cmp["rtt_ms"]) == {0.0, 3.0}
    assert set(cmp["other"]) == {"dsbs", "raft"}
    # The limit at large rtt is round trips per record, ZK over the other. A produce is one request
    # per batch on both twins, so production's limit is the check's doubling, 2, where both
    # twins sent as many Produce requests. A produce a leader refused (one still taking up a
    # partition it was just given, slower on a loaded host) is sent again: a real round trip
    # that raises the limit; it never lowers it. Consumption's counts fetches, and how many come
    # back empty depends on timing (a consumer ahead of its producer polls again): its limit is
    # a measurement, only positive here.
    produced = pd.concat(counters)
    produced = produced[produced["counter"] == "kafka_requests_produce"]
    sent = produced.merge(pd.concat(sessions)[["run_id", "arch", "cell_id", "rtt_ms"]]
                          .drop_duplicates(), on=["run_id", "arch", "cell_id"])
    per_rtt = sent.groupby(["rtt_ms", "arch"])["increase"].sum().unstack("arch")
    shown = f"{cmp[['role', 'rtt_ms', 'ratio_limit']]}\nProduce requests:\n{per_rtt}"
    production = cmp["role"] == "production"
    dsbs, raft = cmp["other"] == "dsbs", cmp["other"] == "raft"
    assert (cmp.loc[production & dsbs, "ratio_limit"] >= 1.7).all(), shown
    same = cmp["rtt_ms"].map(per_rtt["zk"] == per_rtt["dsbs"]).astype(bool)
    assert cmp.loc[production & dsbs & same, "ratio_limit"].between(1.7, 2.3).all(), shown
    # Raft's limit where it sent as many Produce requests as the zk twin: a check of c round
    # trips against ZooKeeper's one, (1 + 1) / (1 + c), below 1 where some went to a leader
    # elsewhere: the embedded quorum's linearizable check costs more round trips, not fewer.
    same = cmp["rtt_ms"].map(per_rtt["zk"] == per_rtt["raft"]).astype(bool)
    expected = 2 / (1 + each.get_group("raft").mean())
    assert cmp.loc[production & raft & same, "ratio_limit"].to_numpy() == pytest.approx(
        expected, rel=0.15), shown
    assert (cmp.loc[production & raft, "ratio_limit"] < 1.2).all(), shown
    assert (cmp.loc[~production, "ratio_limit"] > 0).all(), shown
