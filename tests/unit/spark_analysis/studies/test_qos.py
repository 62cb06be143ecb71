"""spark_analysis.studies.qos.tables on hand-made metric spans (pandas only, no Spark): the
per-session measures, counters that appear mid-session, ZooKeeper's own rows, and Table II's
layout."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from spark_analysis.studies.qos import tables as qos_tables


def _span(metric: str, first: float, last: float, *, node: int = 0, labels: str = "",
          t_first: float = 0.0, t_last: float = 2.0, peak: float | None = None,
          arch: str = "zk", security: str = "none", cell: str = "qos-100B-b1-m1000",
          try_no: int = 1) -> dict[str, object]:
    return {"run_id": f"r-{arch}-{security}", "workload": "qos", "security": security,
            "side": "*", "arch": arch, "label": "", "cell_id": cell, "scenario": "streaming",
            "try": try_no, "node_id": node, "metric": metric, "labels": labels,
            "t_first": t_first, "t_last": t_last, "first": first, "last": last,
            "max": last if peak is None else peak}


def _session(**kw: object) -> list[dict[str, object]]:
    topic = "topic=t1"
    return [
        _span("process_cpu_seconds_total", 1.0, 1.5, **kw),
        _span("process_cpu_seconds_total", 2.0, 2.1, node=1, **kw),
        _span("process_cpu_seconds_total", 5.0, 5.2, node=-1, **kw),  # ZooKeeper server 0
        _span("process_resident_memory_bytes", 30e6, 31e6, peak=40e6, **kw),
        _span("process_resident_memory_bytes", 30e6, 31e6, peak=20e6, node=1, **kw),
        _span("twinbench_log_dir_free_bytes", 60e9, 59e9, **kw),
        _span("twinbench_log_dir_bytes", 0, 150e3, **kw),
        # The topic's series appear at the second scrape: they started at 0 in the session.
        _span("twinbench_topic_bytes_in_total", 50e3, 150e3, labels=topic, t_first=1.0, **kw),
        _span("twinbench_topic_bytes_out_total", 40e3, 140e3, labels=topic, t_first=1.0, **kw),
        _span("twinbench_topic_messages_in_total", 300, 1000, labels=topic, t_first=1.0, **kw),
        _span("twinbench_request_time_seconds_sum", 1.0, 1.2, labels="api=Produce", **kw),
        _span("twinbench_request_time_seconds_count", 100, 1100, labels="api=Produce", **kw),
        _span("twinbench_request_time_seconds_sum", 0.0, 0.0, labels="api=Fetch", **kw),
        _span("twinbench_request_time_seconds_count", 7, 7, labels="api=Fetch", **kw),
        _span("twinbench_response_errors_total", 2, 6,
              labels="api=Fetch,error=OFFSET_OUT_OF_RANGE", **kw),
    ]


def test_a_sessions_measures() -> None:
    out = qos_tables.sessions(pd.DataFrame(_session()))
    (s,) = out.to_dict("records")
    assert s["window_s"] == 2.0 and s["messages"] == 1000
    assert s["cpu_mcores"] == pytest.approx((0.5 + 0.1) / 2 * 1000)
    assert s["service_cpu_mcores"] == pytest.approx(0.2 / 2 * 1000)
    assert s["memory_mb"] == pytest.approx(30.0)  # the mean over brokers of each one's peak
    assert (s["disk_free_gb"], s["disk_used_mb"]) == pytest.approx((59.0, 0.15))
    assert s["bytes_in_per_s"] == pytest.approx(150e3 / 2)
    assert s["bytes_out_per_s"] == pytest.approx(140e3 / 2)
    assert s["messages_in_per_s"] == pytest.approx(500.0)
    assert s["produce_time_ms"] == pytest.approx(0.2 / 1000 * 1000)
    assert math.isnan(s["fetch_time_ms"])  # no Fetch answered during the session
    assert s["errors_per_s"] == pytest.approx(2.0)


def test_no_error_series_is_no_error_and_dsbs_has_no_zookeeper() -> None:
    rows = [r for r in _session(arch="dsbs")
            if r["metric"] != "twinbench_response_errors_total" and r["node_id"] != -1]
    (s,) = qos_tables.sessions(pd.DataFrame(rows)).to_dict("records")
    assert s["errors_per_s"] == 0.0 and math.isnan(s["service_cpu_mcores"])


def test_stats_and_table_ii_put_the_paper_first() -> None:
    rows = []
    for arch in ("dsbs", "zk"):
        for security in ("sasl_ssl", "none"):
            for t in (1, 2):
                rows += _session(arch=arch, security=security, try_no=t)
                rows += _session(arch=arch, security=security, try_no=t,
                                 cell="qos-100B-b1-m100")
    per = qos_tables.sessions(pd.DataFrame(rows))
    long = qos_tables.stats_long(per)
    cpu = long[long["measure"] == "cpu_mcores"]
    # The baseline first, plaintext before secured, cases in order.
    assert list(zip(cpu["arch"], cpu["security"], cpu["messages"], strict=True))[:3] == [
        ("zk", "none", 100.0), ("zk", "none", 1000.0), ("zk", "sasl_ssl", 100.0)]
    assert set(cpu["n"]) == {2}
    assert (cpu["ci_lo"].iloc[0], cpu["ci_hi"].iloc[0]) == pytest.approx((300, 300))
    table = qos_tables.table_ii(long, qos_tables.load_paper())
    assert list(table.columns) == ["workload", "scenario", "metric", "side", "100 messages",
                                   "1,000 messages"]
    block = table[table["metric"] == "Bytes in per sec"]
    assert list(block["side"]) == ["paper (Kafka, SASL+SSL)", "ZooKeeper, plaintext",
                                   "ZooKeeper, SASL_SSL", "DSBS, plaintext", "DSBS, SASL_SSL"]
    assert block["100 messages"].iloc[0] == 5
    assert list(block["1,000 messages"])[1] == "75,000 [75,000, 75,000]"
    # Measures the paper does not report have no paper row.
    assert "paper (Kafka, SASL+SSL)" not in set(
        table.loc[table["metric"] == "Messages in per sec", "side"])


def test_the_paper_table_is_its_table_ii() -> None:
    paper = qos_tables.load_paper()
    assert sorted(paper["messages"].unique()) == [100, 1000, 5000, 10000]
    printed = paper.set_index(["metric", "messages"])["value"]
    assert printed[("bytes_out_per_s", 5000)] == 270 and printed[("errors_per_s", 10000)] == 0.2
    assert {m for _, (_, m) in qos_tables.MEASURES.items() if m} == set(paper["metric"])
    assert qos_tables.messages_of("qos-100B-b1-m5000") == 5000
    assert math.isnan(qos_tables.messages_of("size_grid-32B-b20"))
