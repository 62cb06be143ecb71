"""The metadata-at-scale benchmark's parts: the memory check refuses in one line, the ZooKeeper
side's per-topic costs come from a run's counters and perf-zk's file, and a small simulation
converges with traffic counted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from brokers.core.errors import UserError
from harness.bench import perf_metadata_scale as scale
from twinbench_common.runlog import COUNTERS, METADATA

COUNTER_COLUMNS, METADATA_COLUMNS = COUNTERS.names(), METADATA.names()


def test_a_size_whose_tables_do_not_fit_is_refused_in_one_line():
    scale.check_fits(1000, available=10**9)
    with pytest.raises(UserError) as err:
        scale.check_fits(10_000, available=8 * 10**9)
    assert str(err.value) == ("10,000 simulated members need ~25.0 GB of member tables "
                              "(N x N); this machine has 8.0 GB available: at most ~4,000 "
                              "members here")


def test_a_small_cluster_converges_and_its_traffic_is_counted():
    p = scale.gossip_point(10, 0.0, seed=3)
    assert p.converge_s is not None and 0 < p.converge_s < 10
    assert p.packets_per_member > 0 and p.bytes_per_member > p.packets_per_member
    assert p.idle_packets_per_member_s > 0


@pytest.mark.filesystem
def test_zookeeper_costs_per_topic_come_from_the_largest_storm(tmp_path: Path):
    run = tmp_path / "20261125T000000Z-zk-metadata-abcdef"
    run.mkdir()
    meta = [dict.fromkeys(METADATA_COLUMNS, "") | {
        "arch": "zk", "kind": "topic-storm", "cell_id": f"storm-n{n}", "n": str(n),
        "topics": str(n), "partitions": "3", "brokers": "3", "try": str(t)}
        for n in (1, 10) for t in (1, 2)]
    counters = [dict.fromkeys(COUNTER_COLUMNS, "") | {
        "cell_id": "storm-n10", "source": "coordinator", "counter": c, "increase": str(v),
        "try": str(t)}
        for t in (1, 2) for c, v in (("zk_writes", 90), ("zk_multi", 40), ("zk_reads", 390),
                                     ("zk_watch_events", 120))]
    counters.append(dict.fromkeys(COUNTER_COLUMNS, "") | {
        "cell_id": "storm-n1", "source": "coordinator", "counter": "zk_reads",
        "increase": "9999"})
    for name, rows, cols in (("metadata.csv", meta, METADATA_COLUMNS),
                             ("counters.csv", counters, COUNTER_COLUMNS)):
        lines = [",".join(cols)] + [",".join(r[c] for c in cols) for r in rows]
        (run / name).write_text("\n".join(lines) + "\n")
    cost = scale.zk_topic_cost(run)
    # 20 topics over two tries on 3 brokers.
    assert (cost.writes, cost.reads_per_broker, cost.events_per_broker) == (13.0, 13.0, 4.0)
    assert cost.topics == 20 and cost.brokers == 3 and cost.partitions == 3
    assert scale.newest_zk_metadata_run(tmp_path) == run
    perf = tmp_path / "zkclient.json"
    perf.write_text(json.dumps({"summary": [
        {"op": "get", "concurrency": 1, "direct_zk_cpu_us": 80.0},
        {"op": "set", "concurrency": 1, "direct_zk_cpu_us": 300.0}]}))
    assert scale.zk_request_cpu_us(perf) == (80.0, 300.0)
    perf.write_text("{}")
    with pytest.raises(UserError, match="not a perf-zk result"):
        scale.zk_request_cpu_us(perf)
