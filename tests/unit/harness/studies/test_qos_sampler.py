"""harness/studies/qos/sampler.py's pure parts: what of a scrape goes into metrics.csv."""

from __future__ import annotations

import os

from harness.studies.qos.sampler import MetricsSampler, parse, process_samples

TEXT = """\
# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.
# TYPE process_cpu_seconds_total counter
process_cpu_seconds_total 1.5
# TYPE twinbench_request_time_seconds histogram
twinbench_request_time_seconds_bucket{api="Produce",le="0.001"} 3.0
twinbench_request_time_seconds_bucket{api="Produce",le="+Inf"} 4.0
twinbench_request_time_seconds_sum{api="Produce"} 0.01
twinbench_request_time_seconds_count{api="Produce"} 4.0
# TYPE twinbench_topic_bytes_in counter
twinbench_topic_bytes_in_total{topic="mine"} 700.0
twinbench_topic_bytes_in_total{topic="an-earlier-session"} 9.0
# TYPE twinbench_response_errors counter
twinbench_response_errors_total{error="NOT_LEADER_OR_FOLLOWER",api="Produce"} 2.0
"""


def test_a_scrape_keeps_sums_counts_and_the_sessions_topic_only() -> None:
    got = {(s.metric, s.labels): s.value for s in parse(TEXT, 0.5, 2, "mine")}
    assert got == {
        ("process_cpu_seconds_total", ""): 1.5,
        ("twinbench_request_time_seconds_sum", "api=Produce"): 0.01,
        ("twinbench_request_time_seconds_count", "api=Produce"): 4.0,
        ("twinbench_topic_bytes_in_total", "topic=mine"): 700.0,
        ("twinbench_response_errors_total", "api=Produce,error=NOT_LEADER_OR_FOLLOWER"): 2.0,
    }
    assert {(s.t_s, s.node_id) for s in parse(TEXT, 0.5, 2, "mine")} == {(0.5, 2)}


def test_processes_without_an_endpoint_are_read_directly_and_rows_carry_the_session() -> None:
    mine = process_samples([(-1, os.getpid()), (-2, 2**22 + 12345)], 1.0)
    assert [(s.node_id, s.metric) for s in mine] == [
        (-1, "process_cpu_seconds_total"), (-1, "process_resident_memory_bytes")]
    assert all(s.value > 0 for s in mine)
    sampler = MetricsSampler([], "t", samples=mine)
    rows = sampler.rows({"run_id": "r", "cell_id": "c"})
    assert rows[0] == {"run_id": "r", "cell_id": "c", "t_s": 1.0, "node_id": -1,
                       "metric": "process_cpu_seconds_total", "labels": "",
                       "value": mine[0].value}
