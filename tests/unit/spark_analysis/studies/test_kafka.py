"""spark_analysis.studies.kafka on hand-made per-cell statistics (pandas only, no Spark)."""

from __future__ import annotations

import pandas as pd
import pytest

from spark_analysis import stats
from spark_analysis.archs import Archs
from spark_analysis.studies.kafka import section
from spark_analysis.studies.kafka import tables as kafka_tables


def _cell(check: str = "cached") -> dict[str, object]:
    return {"workload": "kafka", "table": "batch_sweep", "cell_id": "batch_sweep-32B-b20",
            "scenario": "split", "msg_size": 32, "batch": 20, "offset_commit": "every_fetch",
            "metadata_check": check}


def _stat(arch: str, mean: float, sd: float, n: int = 5, role: str = "production",
          check: str = "cached") -> dict[str, object]:
    return {**_cell(check), "role": role, "arch": arch, "n": n, "mean": mean, "sd": sd}


LONG = pd.DataFrame([
    _stat("zk", 100_000.0, 5_000.0), _stat("dsbs", 120_000.0, 6_000.0),
    _stat("kafka-zk", 50_000.0, 2_000.0), _stat("kafka-kraft", 45_000.0, 2_000.0),
    # A per-request cell: Kafka cannot run it, so it is not compared here.
    _stat("zk", 80_000.0, 4_000.0, check="per_request"),
    _stat("dsbs", 90_000.0, 4_000.0, check="per_request"),
])
COST = pd.DataFrame([
    {**_cell(), "arch": "zk", "tries": 5, "coord_messages_per_1k": 40.0, "coord_bytes_per_1k": None,
     "broker_cpu_ms_per_1k": 10.0, "side": "*"},
    {**_cell(), "arch": "kafka-zk", "tries": 5, "coord_messages_per_1k": 0.5,
     "coord_bytes_per_1k": None, "broker_cpu_ms_per_1k": 60.0, "side": "*"},
    {**_cell(), "arch": "kafka-kraft", "tries": 5, "coord_messages_per_1k": 3.0,
     "coord_bytes_per_1k": 900.0, "broker_cpu_ms_per_1k": 70.0, "side": "*"},
    {**_cell("per_request"), "arch": "zk", "tries": 5, "coord_messages_per_1k": 90.0,
     "coord_bytes_per_1k": None, "broker_cpu_ms_per_1k": 12.0, "side": "*"},
])
ARCHS = Archs.from_manifests([{"architectures": {
    "kafka-zk": {"display_name": "Kafka on ZooKeeper", "short_name": "KAFKA-ZK",
                 "color": "#55A868", "order": 50, "baseline": False,
                 "cost_column": "coord_messages", "cost_label": "ZooKeeper requests"},
    "kafka-kraft": {"display_name": "Kafka on KRaft", "short_name": "KAFKA-KRAFT",
                    "color": "#C44E52", "order": 51, "baseline": False,
                    "cost_column": "coord_messages", "cost_label": "metadata quorum requests"},
}}])


def test_only_the_cells_where_kafka_ran_are_compared() -> None:
    four = kafka_tables.four(LONG)
    assert set(four["metadata_check"]) == {"cached"}
    assert sorted(four["arch"]) == ["dsbs", "kafka-kraft", "kafka-zk", "zk"]
    z = four[four["arch"] == "zk"].iloc[0]
    assert (z["ci_lo"], z["ci_hi"]) == pytest.approx(stats.t_interval(100_000.0, 5_000.0, 5))
    assert kafka_tables.four(LONG[~LONG["arch"].str.startswith("kafka")]).empty
    cost = kafka_tables.kafka_cells(COST, four)
    assert set(cost["metadata_check"]) == {"cached"} and len(cost) == 3


def test_the_two_steps_from_zookeeper_are_ratios_on_the_same_code() -> None:
    steps = kafka_tables.steps(kafka_tables.four(LONG))
    r = steps.iloc[0]
    assert r["kraft_over_zk"] == pytest.approx(0.9)
    assert r["dsbs_over_zk"] == pytest.approx(1.2)
    assert "raft_over_zk" not in steps  # no Raft twin in these runs
    # With the Raft twin: its step beside Kafka's, the calibration.
    with_raft = pd.concat([LONG, pd.DataFrame([_stat("raft", 95_000.0, 5_000.0)])])
    steps = kafka_tables.steps(kafka_tables.four(with_raft))
    assert steps.iloc[0]["raft_over_zk"] == pytest.approx(0.95)
    text = section.steps_md(steps)
    assert "RAFT/ZK (twins)" in text and "0.95 [" in text
    assert (r["kraft_over_zk_ci_lo"], r["kraft_over_zk_ci_hi"]) == pytest.approx(
        stats.fieller(45_000.0, 2_000.0, 5, 50_000.0, 2_000.0, 5))


def test_each_twin_is_set_against_the_kafka_it_stands_beside() -> None:
    steps = kafka_tables.steps(kafka_tables.four(LONG))
    r = steps.iloc[0]
    assert r["dsbs_over_kraft"] == pytest.approx(120_000.0 / 45_000.0)
    assert r["zk_over_kafka_zk"] == pytest.approx(100_000.0 / 50_000.0)
    assert r["dsbs_over_kraft_ci_lo"] < r["dsbs_over_kraft"] < r["dsbs_over_kraft_ci_hi"]
    text = section.steps_md(steps)
    assert "DSBS/KRaft" in text and "zk twin/Kafka ZK" in text and "2.67 [" in text


def test_the_fidelity_table_sets_the_zk_twin_beside_kafka_on_zookeeper() -> None:
    four = kafka_tables.four(LONG)
    fid = kafka_tables.fidelity(four, kafka_tables.kafka_cells(COST, four))
    assert len(fid) == 1
    r = fid.iloc[0]
    assert (r["twin_rps"], r["kafka_rps"], r["ratio"]) == pytest.approx(
        (100_000.0, 50_000.0, 0.5))
    assert (r["twin_coord_messages_per_1k"], r["kafka_coord_messages_per_1k"]) == (40.0, 0.5)
    assert (r["twin_broker_cpu_ms_per_1k"], r["kafka_broker_cpu_ms_per_1k"]) == (10.0, 60.0)
    # Without coordination readings the throughput still compares, the rest is n/a.
    bare = kafka_tables.fidelity(four, pd.DataFrame())
    assert bare.iloc[0]["ratio"] == pytest.approx(0.5) and pd.isna(
        bare.iloc[0]["kafka_coord_messages_per_1k"])


def test_the_section_shows_every_table_and_says_when_kafka_never_ran() -> None:
    four = kafka_tables.four(LONG)
    cost = kafka_tables.kafka_cells(COST, four)
    text = section.kafka_md(four, kafka_tables.steps(four), kafka_tables.fidelity(four, cost),
                            cost, archs=ARCHS)
    assert "| Kafka on ZooKeeper | Kafka on KRaft |" in text
    assert "KRaft/ZK (Kafka)" in text and "0.9 [" in text
    assert "Kafka/twin" in text and "metadata quorum requests" in text
    assert "No workload ran real Kafka" in section.kafka_md(
        pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), pd.DataFrame())


def _event(source: str, case: str, size: int, measure: str, arch: str, mean: float,
           sd: float, n: int = 3) -> dict[str, object]:
    return {"source": source, "workload": "kafka-metadata" if source == "metadata" else "kf",
            "case": case, "size": size, "measure": measure, "arch": arch, "n": n,
            "mean": mean, "sd": sd}


EVENTS = pd.DataFrame([
    _event("faults", "kill-leader", 0, "produce_gap_s", "zk", 6.0, 0.5),
    _event("faults", "kill-leader", 0, "produce_gap_s", "kafka-zk", 7.0, 0.5),
    _event("metadata", "topic-storm", 10, "converge_s", "zk", 2.0, 0.2),
    _event("metadata", "topic-storm", 10, "converge_s", "kafka-zk", 1.0, 0.1),
    _event("metadata", "topic-storm", 1, "create_p50_ms", "zk", 40.0, 4.0),
    _event("metadata", "topic-storm", 1, "create_p50_ms", "kafka-zk", 120.0, 30.0),
    # KRaft and DSBS are in the metadata section's tables, not in this pair.
    _event("metadata", "topic-storm", 1, "create_p50_ms", "kafka-kraft", 90.0, 9.0),
    # A case run on the twin alone has no Kafka side to stand beside.
    _event("faults", "stop-zookeeper", 0, "produce_gap_s", "zk", 9.0, 1.0),
])


def test_topic_creation_and_failover_pair_the_zk_twin_with_kafka_on_zookeeper() -> None:
    ev = kafka_tables.fidelity_events(EVENTS)
    assert list(zip(ev["source"], ev["case"], ev["size"], strict=True)) == [
        ("metadata", "topic-storm", 1), ("metadata", "topic-storm", 10),
        ("faults", "kill-leader", 0)]
    lone = ev.iloc[0]
    assert (lone["twin_mean"], lone["kafka_mean"], lone["ratio"]) == pytest.approx(
        (40.0, 120.0, 3.0))
    assert (lone["ratio_ci_lo"], lone["ratio_ci_hi"]) == pytest.approx(
        stats.fieller(120.0, 30.0, 3, 40.0, 4.0, 3))
    assert (lone["twin_ci_lo"], lone["twin_ci_hi"]) == pytest.approx(
        stats.t_interval(40.0, 4.0, 3))
    assert kafka_tables.fidelity_events(EVENTS[EVENTS["arch"] != "kafka-zk"]).empty
    assert kafka_tables.fidelity_events(pd.DataFrame()).empty


def test_the_section_shows_the_events_even_without_a_rate_cell() -> None:
    ev = kafka_tables.fidelity_events(EVENTS)
    text = section.kafka_md(pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), pd.DataFrame(),
                            ev, archs=ARCHS)
    assert "Fidelity in events" in text and "CreateTopics p50 (ms)" in text
    assert "longest produce gap (s)" in text and "Records/s" not in text
    assert "| 3 [" in text  # Kafka / twin of the lone topic, with its interval
