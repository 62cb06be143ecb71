"""Real Apache Kafka through the harness, the smoke test of the reference architectures (full
runs are documented targets, docs/real-kafka.md): `twinbench cluster --arch kafka-zk|kafka-kraft`
starts three JVMs from the resolved jars (Kafka 3.9 on the provisioned ZooKeeper; KRaft on
4.x), prints the lines the twins print, serves librdkafka a replicated round trip (a topic at
replication factor 3, produce at acks=all, consume back in order), and leaves nothing running
after its signal. `twinbench run` measures both beside a twin, in the cached cells only (Kafka
has no per-request leadership check), warming the JVMs up until steady."""

from __future__ import annotations

import csv
import json
import signal
import subprocess
import sys
import time

import confluent_kafka as ck
import psutil
import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from harness.cluster.processes import ManagedProcess, pid_alive

pytestmark = pytest.mark.integration

RECORDS = 200
READY_S = 180.0  # three JVMs (and a ZooKeeper) on a loaded 2-core machine


def round_trip(bootstrap: str, replicas: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("smoke", 1, replicas)])["smoke"].result(timeout=60)
    # CreateTopics answers once the controller decided; a broker serves the topic once it has
    # applied that decision (KRaft: replayed the metadata log), a moment later.
    for _ in range(300):
        partitions = admin.list_topics("smoke", timeout=30).topics["smoke"].partitions
        if 0 in partitions and len(partitions[0].isrs) == replicas:
            break
        time.sleep(0.1)  # polling a readiness condition, not a wait for a duration
    assert len(partitions[0].replicas) == replicas
    producer = ck.Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                            "enable.idempotence": True})
    for i in range(RECORDS):
        producer.produce("smoke", str(i).encode())
    assert producer.flush(60) == 0
    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": "smoke",
                            "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe(["smoke"])
    got: list[bytes] = []
    try:
        for _ in range(600):
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                got.append(msg.value() or b"")
            if len(got) == RECORDS:
                break
    finally:
        consumer.close()
    assert got == [str(i).encode() for i in range(RECORDS)]


# KRaft on 3.9.2 runs in test_a_run_measures_real_kafka_beside_a_twin_in_the_cached_cells.
@pytest.mark.parametrize(("arch", "release"), [("kafka-zk", "3.9.2"), ("kafka-kraft", "4.1.1")])
def test_a_real_kafka_cluster_serves_a_replicated_round_trip_and_stops(tmp_path, arch, release):
    proc = ManagedProcess(
        [sys.executable, "-m", "harness.cli", "cluster", "--arch", arch, "--brokers", "3",
         "--option", f"{arch}.release={release}", "--data-dir", str(tmp_path / "data")],
        name="twinbench cluster", log_path=tmp_path / "cluster.log").start()
    try:
        line = proc.wait_for_line("bootstrap=", READY_S)
        bootstrap = line.split("=", 1)[1]
        assert len(bootstrap.split(",")) == 3
        jvms = [p for p in psutil.Process(proc.pid).children(recursive=True)
                if p.name() == "java"]
        assert len(jvms) == (4 if arch == "kafka-zk" else 3)  # kafka-zk: and its ZooKeeper
        round_trip(bootstrap, 3)
        proc.signal(signal.SIGTERM)
        assert proc.wait(timeout_s=60) == 0
        assert not [p.pid for p in jvms if pid_alive(p.pid)]
        properties = (tmp_path / "data" / "kafka" / "node-0.properties").read_text()
        assert "num.io.threads=2" in properties  # the box's settings, written for the JVM
    finally:
        proc.kill()


WORKLOAD = """\
name: kafka-smoke
description: the paper's split scenario on two sizes, per-request and cached cells
messages: 2000
tries: 1
brokers: 1
producers: 1
consumers: 1
scenarios: [split]
policies:
  offset_commit: every_fetch
  metadata_check: [per_request, cached]
consumer_timeout_s: 60
cells:
  - table: size_grid
    msg_sizes: [32]
    batches: [20]
"""


def twinbench_run(tmp_path, workload_text: str, arch: str, timeout_s: float = 600
                  ) -> subprocess.CompletedProcess[str]:
    """``twinbench run --arch ARCH`` on a workload file of ``workload_text``, run logs under
    ``tmp_path/runs``."""
    workload = tmp_path / "workload.yaml"
    workload.write_text(workload_text)
    return subprocess.run(
        [sys.executable, "-m", "harness.cli", "run", "--arch", arch, "--workload",
         str(workload), "--out", str(tmp_path / "runs"), "--quiet"],
        capture_output=True, text=True, timeout=timeout_s)


def refused_in_one_line(tmp_path, done: subprocess.CompletedProcess[str], line: str) -> None:
    """The run ended with ``line`` as its only output and left no run log."""
    assert done.returncode != 0
    assert done.stderr.strip().splitlines() == [line]
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_a_run_measures_real_kafka_beside_a_twin_in_the_cached_cells(tmp_path):
    done = twinbench_run(tmp_path, WORKLOAD, "kafka-kraft,dsbs,kafka-zk")
    assert done.returncode == 0, done.stderr[-2000:]
    checks: dict[str, set[str]] = {}  # one run log per architecture and policy
    for run in (tmp_path / "runs").iterdir():
        manifest = json.loads((run / "manifest.json").read_text())
        arch = manifest["arch"]
        with (run / "records.csv").open() as f:
            rows = list(csv.DictReader(f))
        checks.setdefault(arch, set()).update(r["metadata_check"] for r in rows)
        assert {r["status"] for r in rows} == {"ok"}, arch
        if arch != "dsbs":
            options = manifest["cluster"]["options"][arch]
            assert options["heap_mb"] == 512 and options["release"] == "3.9.2"
            assert manifest["architectures"][arch]["display_name"].startswith("Kafka on")
            assert manifest["cluster"]["warmup_sessions"] >= 2  # until two sessions agree
        # Every process's resident memory once warm: the brokers, and kafka-zk's ZooKeeper.
        rss = manifest["cluster"]["rss_bytes"]
        brokers = {f"broker-{i}" for i in range(manifest["cluster"]["brokers"])}
        assert brokers <= set(rss) and min(rss.values()) > 1 << 20
        assert ("service-zookeeper-0" in rss) == (arch == "kafka-zk")
        # Kafka's own counters, from every node's JMX exporter: its requests per API, and on
        # KRaft the quorum's requests and bytes as the coordination columns.
        with (run / "counters.csv").open() as f:
            jmx = {r["counter"]: r["increase"] for r in csv.DictReader(f)
                   if r["source"] == "jmx"}
        with (run / "coordination.csv").open() as f:
            coordination = list(csv.DictReader(f))
        if arch == "dsbs":
            assert not jmx
        else:
            assert float(jmx["requests.Produce"]) > 0, jmx
            assert float(jmx["requests.OffsetCommit"]) > 0, jmx
        if arch == "kafka-kraft":
            assert float(jmx["metadata_records"]) >= 0
            assert all(r["coord_messages"] != "" and r["coord_bytes"] != ""
                       for r in coordination), coordination
    # Kafka has no per-request check: it is measured in the cached cells alone.
    assert checks == {"dsbs": {"per_request", "cached"}, "kafka-zk": {"cached"},
                      "kafka-kraft": {"cached"}}


def test_a_run_asking_only_what_kafka_cannot_apply_is_refused_in_one_line(tmp_path):
    done = twinbench_run(tmp_path, WORKLOAD.replace("[per_request, cached]", "per_request"),
                         "kafka-zk", timeout_s=60)
    refused_in_one_line(
        tmp_path, done,
        "twinbench: error: workload kafka-smoke: metadata_check: per_request has no equivalent "
        "on kafka-zk (it applies cached only); sweep [per_request, cached] to measure it in "
        "those cells beside the others")


CLIENTS = """
name: two-clients
brokers: 3
partitions: 3
producers: 2
consumers: 1
producer_partitions: all
messages: 4000
tries: 1
scenarios: [split, streaming]
client: [twinbench, kafka-perf]
policies:
  offset_commit: interval_ms:1000
  metadata_check: cached
cells:
  - table: batch_sweep
    msg_sizes: [32]
    batches: [20]
"""


def test_kafkas_perf_tools_load_a_twin_beside_our_client(tmp_path):
    """``client: [twinbench, kafka-perf]``: one side per client on the same cluster; the tools'
    rows count every acknowledged record back, and what they printed is kept."""
    done = twinbench_run(tmp_path, CLIENTS, "zk")
    assert done.returncode == 0, done.stderr[-2000:]
    seen: dict[str, list[dict[str, str]]] = {}
    clusters = set()
    for run in (tmp_path / "runs").iterdir():
        manifest = json.loads((run / "manifest.json").read_text())
        client = manifest["client"]["name"]
        assert manifest["label"] == f"client={client}"
        clusters.add(manifest["cluster"]["start_seconds"])  # one cluster served both sides
        with (run / "records.csv").open() as f:
            seen[client] = list(csv.DictReader(f))
        if client == "kafka-perf":
            assert manifest["client"]["release"] == "3.9.2"
            log = (run / "kafka-perf.log").read_text()
            assert "records sent" in log and "nMsg.sec" in log
    assert set(seen) == {"twinbench", "kafka-perf"} and len(clusters) == 1
    for client, rows in seen.items():
        assert {(r["scenario"], r["role"]) for r in rows} == {
            (s, role) for s in ("split", "streaming") for role in ("production", "consumption")}
        for r in rows:
            assert r["client"] == client and r["status"] == "ok"
            assert int(r["records"]) == 4000 and float(r["rps"]) > 0, r
            if r["role"] == "consumption":
                assert int(r["lost"]) == 0


def test_the_perf_tools_refuse_a_commit_per_fetch_in_one_line(tmp_path):
    done = twinbench_run(tmp_path, CLIENTS.replace("interval_ms:1000", "every_fetch"), "zk",
                         timeout_s=60)
    refused_in_one_line(
        tmp_path, done,
        "twinbench: error: workload two-clients: client: kafka-perf: ConsumerPerformance "
        "commits on an interval or not at all: offset_commit: interval_ms:N or none")


METADATA = """
name: kafka-metadata-smoke
description: a storm of three topics on Kafka on ZooKeeper, the limits of the twins given
brokers: 3
tries: 1
policies:
  metadata_check: cached
metadata:
  probe_ms: 20
  timeout_s: 120
  idle_s: 0.2
  max_topics: 100
  max_partitions_per_topic: 100
  cases:
    - {name: topic-storm, kind: topic-storm, n: [3], partitions: 2}
"""


def test_a_topic_storm_on_kafka_on_zookeeper_goes_through_its_controller(tmp_path):
    """Three topics at once from three admin connections: on ZooKeeper-mode Kafka a broker
    that is not the controller answers CreateTopics NOT_CONTROLLER, so the storm is sent to the
    controller Metadata names, as Kafka's admin client sends it; the twins' broker limits bound
    nothing there. The session is timed like a twin's."""
    done = twinbench_run(tmp_path, METADATA, "kafka-zk")
    assert done.returncode == 0, done.stderr[-2000:]
    (run,) = (tmp_path / "runs").iterdir()
    with (run / "metadata.csv").open() as f:
        (row,) = list(csv.DictReader(f))
    assert row["status"] == "ok" and row["topics"] == "3" and row["create_timeouts"] == "0"
    # Both timed from the storm's start; the watcher runs beside the creations, so every broker
    # may list the topics a moment before the last CreateTopics answer is read (CI saw 2 ms).
    assert float(row["create_s"]) > 0 and float(row["converge_s"]) > 0
    assert float(row["coord_messages"]) > 0  # ZooKeeper's requests over the storm
