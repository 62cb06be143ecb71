"""`twinbench run --arch zk,dsbs,raft` on the QoS smoke workload, then `twinbench analyze`: the
three twins, plaintext and SASL_SSL clusters side by side (throwaway certificates and users),
the brokers' Prometheus metrics sampled into metrics.csv (format 6), the report's Security
section and the Kafka + Prometheus paper's Table II with our numbers beside its own."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import twinbench_common.runlog as fmt
from harness import runlog
from harness.cli import main as analyze_cli
from harness.workload import load_workload
from spark_analysis.studies.qos.tables import load_paper
from tests.integration.test_run_smoke import zookeeper_missing
from tests.support.cli import twinbench

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.zookeeper]


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_qos_smoke_samples_metrics_on_secured_and_plain_twins(
        tmp_path: Path, spark: SparkSession) -> None:
    if reason := zookeeper_missing():
        pytest.skip(reason)
    out = tmp_path / "runs"
    done = twinbench("run", "--arch", "zk,dsbs,raft", "--workload", "qos-smoke", "--out",
                     str(out), "--seed", "5", timeout=300)
    assert done.returncode == 0, done.stderr
    assert "metrics scrapes got no answer" not in done.stderr
    wl = load_workload("qos-smoke").workload
    counts = wl.cells[0].messages
    runs = sorted(out.iterdir())
    sides = set()
    for run in runs:
        m = json.loads((run / "manifest.json").read_text())
        assert m["format_version"] == runlog.FORMAT_VERSION and not m["incomplete"]
        security = m["policies"]["security"]
        sides.add((m["arch"], security))
        assert m["cluster"]["security_protocol"] == ("SASL_SSL" if security == "sasl_ssl"
                                                     else "PLAINTEXT")
        records = _rows(run / "records.csv")
        assert {r["cell_id"] for r in records} == {f"qos-100B-b1-m{n}" for n in counts}
        assert all(r["status"] == "ok" for r in records)
        samples = _rows(run / "metrics.csv")
        assert list(samples[0]) == list(fmt.METRICS.names())
        for n in counts:
            mine = [s for s in samples if s["cell_id"] == f"qos-100B-b1-m{n}"]
            assert min(float(s["t_s"]) for s in mine) < 0.01
            # The last scrape follows the consumers: the session's topic took exactly what was
            # produced, records and the bytes of their batches.
            last = max(float(s["t_s"]) for s in mine)
            final = {(s["metric"], s["node_id"]): float(s["value"]) for s in mine
                     if float(s["t_s"]) == last}
            assert final[("twinbench_topic_messages_in_total", "0")] == n
            bytes_in = final[("twinbench_topic_bytes_in_total", "0")]
            assert bytes_in == final[("twinbench_topic_bytes_out_total", "0")] > 100 * n
            topics = {s["labels"] for s in mine if s["metric"].startswith("twinbench_topic_")}
            assert len(topics) == 1  # the session's own topic only
            # A service's process (ZooKeeper, node -1) is sampled on the zk twin only: the
            # others have none beside their brokers.
            assert (("process_cpu_seconds_total", "-1") in final) == (m["arch"] == "zk")
            if m["arch"] == "raft":  # one broker, one voter: it leads its quorum
                assert final[("twinbench_coordinator_raft_is_leader", "0")] == 1
    assert sides == {(a, s) for a in ("zk", "dsbs", "raft") for s in ("none", "sasl_ssl")}

    report = tmp_path / "report"
    # In this process, on the run's Spark session (tests/integration/conftest.py): the same
    # command line without starting another JVM.
    assert analyze_cli(["analyze", *map(str, runs), "--out", str(report)]) == 0
    table = _rows(report / "qos_table_ii.csv")
    paper = load_paper()
    cpu = [r for r in table if r["metric"] == "CPU usage (m core), brokers"]
    assert [r["side"] for r in cpu] == [
        "paper (Kafka, SASL+SSL)", "ZooKeeper, plaintext", "ZooKeeper, SASL_SSL",
        "DSBS, plaintext", "DSBS, SASL_SSL", "Raft, plaintext", "Raft, SASL_SSL"]
    assert float(cpu[0]["100 messages"]) == paper.loc[
        (paper["metric"] == "cpu_mcores") & (paper["messages"] == 100), "value"].item()
    # ZooKeeper's CPU has a row of its own; DSBS and Raft have no service: no row, not 0.
    service = [r for r in table if r["metric"] == "CPU usage (m core), services (ZooKeeper)"]
    assert [r["side"] for r in service] == ["ZooKeeper, plaintext", "ZooKeeper, SASL_SSL"]
    stats = _rows(report / "qos_stats.csv")
    msgs_in = [s for s in stats if s["measure"] == "messages_in_per_s"]
    assert len(msgs_in) == 6 * len(counts) and all(float(s["mean"]) > 0 for s in msgs_in)
    cost = _rows(report / "security_cost.csv")
    assert {(c["arch"], c["security"]) for c in cost} == {
        ("zk", "sasl_ssl"), ("dsbs", "sasl_ssl"), ("raft", "sasl_ssl")}
    between = _rows(report / "security_between.csv")
    assert {(b["other"], b["security"]) for b in between} == {
        (o, s) for o in ("dsbs", "raft") for s in ("none", "sasl_ssl")}
    text = (report / "report.md").read_text()
    assert "**Table II, workload `qos-smoke`, streaming**" in text
    assert "What TLS and SASL cost each architecture" in text
    assert "RAFT/ZK secured" in text and "DSBS/ZK secured" in text
    assert list(report.glob("qos-*.png"))
    # Secured rows stay out of the paper's comparison.
    assert all(r.get("security", "none") == "none" for r in _rows(report / "cell_stats.csv"))
