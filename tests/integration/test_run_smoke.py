"""`twinbench run` on the smoke workload against both architectures, real processes: the run
log follows docs/result-format.md, every consumed message was verified, nothing is left
running."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from hdrh.histogram import HdrHistogram

import twinbench_common.runlog as fmt
from harness import architectures, runlog
from harness.cluster.processes import pid_alive
from harness.driver import plan
from harness.workload import load_workload

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TRIES = 1  # the smoke workload's every cell and scenario, once: the machine is shared


def zookeeper_missing() -> str | None:
    from harness.services.zookeeper import HOW_TO_GET_ZOOKEEPER, find_classpath, find_java

    if find_java() is None or find_classpath() is None:
        return "no java or ZooKeeper jars: " + HOW_TO_GET_ZOOKEEPER
    return None


def wait_for(predicate, proc: subprocess.Popen, timeout_s: float) -> None:
    """Poll (a readiness probe) until predicate() holds; fail if the process ends first."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert proc.poll() is None, f"twinbench run exited early ({proc.returncode})"
        assert time.monotonic() < deadline, "timed out waiting for the run"
        time.sleep(0.05)


def run_cli(tmp_path: Path, arch: str) -> tuple[int, str, str, Path, list[int]]:
    """Run to completion; also returns the PIDs of the cluster it started (seen mid-run)."""
    out = tmp_path / "runs"
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "run", "--arch", arch, "--workload", "smoke",
         "--tries", str(TRIES), "--out", str(out), "--seed", "42"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        # The manifest appears once the cluster is up and the first session starts.
        wait_for(lambda: any(out.glob("*/manifest.json")), proc, 180)
        started = [p.pid for p in psutil.Process(proc.pid).children(recursive=True)]
        stdout, stderr = proc.communicate(timeout=280)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, stdout, stderr, out, started


@pytest.mark.parametrize("arch", ["zk", "dsbs"])
def test_smoke_run_writes_a_complete_verified_run_log(tmp_path, arch):
    if arch == "zk" and (reason := zookeeper_missing()):
        pytest.skip(reason)
    code, stdout, stderr, out, started = run_cli(tmp_path, arch)
    assert code == 0, stderr
    (run_dir,) = out.iterdir()
    # Quiet when stdout is not a terminal: just the run directory.
    assert stdout.strip() == str(run_dir)
    assert run_dir.name.startswith("20") and f"-{arch}-smoke-" in run_dir.name
    # Brokers (and ZooKeeper) were running mid-run, and are all gone now.
    assert len(started) >= 3
    assert [pid for pid in started if pid_alive(pid)] == []

    m = json.loads((run_dir / "manifest.json").read_text())
    assert list(m) == list(runlog.MANIFEST_KEYS)
    assert m["format_version"] == runlog.FORMAT_VERSION
    assert m["arch"] == arch and m["run_id"] == run_dir.name
    assert m["incomplete"] is False and m["failed_cells"] == [] and m["finished_at"]
    assert m["seed"] == 42 and m["workload"]["tries"] == TRIES
    assert m["workload_text"] == load_workload("smoke").text
    assert m["policies"] == {"offset_commit": "every_fetch", "metadata_check": "per_request",
                             "flush": "os", "security": "none"}
    assert m["cluster"]["security_protocol"] == "PLAINTEXT"
    assert (m["versions"]["zookeeper"] is None) == (arch == "dsbs")
    # How the analysis will label it: the registry entry's labels.
    assert m["architectures"] == architectures.manifest_labels([arch])
    if psutil.cpu_count() >= 2:
        assert m["host"]["placement"]["client"] != m["host"]["placement"]["brokers"]

    wl = load_workload("smoke").workload
    cells = plan.cells(wl)
    sessions = len(cells) * TRIES * len(wl.scenarios)
    with open(run_dir / "records.csv", newline="") as f:
        records = list(csv.DictReader(f))
    assert list(records[0]) == list(fmt.RECORDS.names())
    assert len(records) == 2 * sessions
    for row in records:
        assert row["status"] == "ok"
        assert int(row["records"]) == wl.messages, row
        assert float(row["rps"]) > 0 and float(row["wall_s"]) > 0
        assert float(row["kbps"]) == pytest.approx(float(row["rps"]) * int(row["msg_size"]) / 1000)
        assert int(row["payload_bytes"]) == int(row["records"]) * int(row["msg_size"])
        assert int(row["clients"]) == 3
        if row["role"] == "consumption":
            assert (row["lost"], row["out_of_order"], row["duplicates"]) == ("0", "0", "0")
            assert float(row["e2e_p50_us"]) > 0
        else:
            assert row["lost"] == ""

    with open(run_dir / "coordination.csv", newline="") as f:
        coordination = list(csv.DictReader(f))
    assert len(coordination) == sessions
    for row in coordination:
        assert int(row["messages"]) == wl.messages
        assert float(row["broker_cpu_s"]) > 0
        if arch == "zk":
            # per_request + every_fetch: at least one ZooKeeper request per produce request.
            # coord_messages is ZooKeeper's own count (mntr), its service.
            assert int(row["coord_messages"]) >= wl.messages // int(row["batch"])
            assert int(row["coordination_ops"]) > 0 and row["coord_bytes"] == ""
            assert float(row["service_cpu_s"]) >= 0
        else:
            assert row["service_cpu_s"] == ""
            assert int(row["coord_messages"]) >= 0 and int(row["coord_bytes"]) >= 0
            # dsbs's unit of coordination is the gossip datagram it sends.
            assert row["coordination_ops"] == row["coord_messages"]

    entries = [json.loads(line) for line in (run_dir / "latency.jsonl").read_text().splitlines()]
    assert {(e["role"], e["kind"]) for e in entries} == {
        ("production", "request"), ("consumption", "request"), ("consumption", "e2e")}
    for e in entries:
        assert HdrHistogram.decode(e["histogram"]).get_total_count() == e["count"] > 0
    same_rows_as_before(run_dir, arch)


# The same smoke workload as recorded before the house was rebuilt (1db6b21, format 8).
BEFORE = Path(__file__).resolve().parents[1] / "fixtures" / "format8" / "smoke" / "runs"


def _csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def same_rows_as_before(run_dir: Path, arch: str) -> None:
    """Nothing measured changed shape: the first try of the recorded run and this one have
    the same sessions, what identifies and counts their rows is equal, and every counter of the
    work the load does (at least 100 in a session then: requests by API, ZooKeeper reads and
    writes, gossip, fsyncs) the brokers report now too (services' counters are new rows)."""
    before = next(d for d in BEFORE.iterdir() if f"-{arch}-" in d.name)
    fixed = ("cell_id", "table", "scenario", "role", "msg_size", "batch", "clients", "records",
             "payload_bytes", "status", "offset_commit", "metadata_check")
    old = sorted(tuple(r[k] for k in fixed) for r in _csv(before / "records.csv")
                 if r["try"] == "1")
    new = sorted(tuple(r[k] for k in fixed) for r in _csv(run_dir / "records.csv"))
    assert new == old
    old_messages = sorted((r["cell_id"], r["scenario"], r["messages"])
                          for r in _csv(before / "coordination.csv") if r["try"] == "1")
    assert sorted((r["cell_id"], r["scenario"], r["messages"])
                  for r in _csv(run_dir / "coordination.csv")) == old_messages
    brokers = ("coordinator", "broker")
    old_counters = {(r["source"], r["counter"]) for r in _csv(before / "counters.csv")
                    if r["source"] in brokers and float(r["increase"] or 0) >= 100}
    new_counters = {(r["source"], r["counter"]) for r in _csv(run_dir / "counters.csv")}
    assert old_counters <= new_counters


BOTH_WORKLOAD = """\
name: both
messages: 3000
tries: 2
scenarios: [split, streaming]
policies:
  offset_commit: every_fetch
  metadata_check: per_request
cells:
  - table: size_grid
    msg_sizes: [32]
    batches: [20]
"""


def test_both_architectures_interleaved_in_one_run(tmp_path):
    """`--arch both` (what `make bench` runs): one run log per architecture, sessions
    alternating zk/dsbs (ABBA by try), both clusters stopped at the end."""
    if reason := zookeeper_missing():
        pytest.skip(reason)
    workload = tmp_path / "both.yaml"
    workload.write_text(BOTH_WORKLOAD)
    out = tmp_path / "runs"
    proc = subprocess.run(
        [sys.executable, "-m", "harness.cli", "run", "--arch", "zk,dsbs", "--workload",
         str(workload), "--out", str(out), "--seed", "7"],
        capture_output=True, text=True, timeout=280,
    )
    assert proc.returncode == 0, proc.stderr
    dirs = sorted(out.iterdir())
    assert sorted(d.name.split("-")[1] for d in dirs) == ["dsbs", "zk"]
    assert sorted(proc.stdout.split()) == sorted(str(d) for d in dirs)
    spans: dict[str, list[tuple[int, str, str, str]]] = {}
    for d in dirs:
        m = json.loads((d / "manifest.json").read_text())
        assert m["run_arches"] == ["zk", "dsbs"] and m["incomplete"] is False
        assert list(m["architectures"]) == ["zk", "dsbs"]
        assert (m["versions"]["zookeeper"] is None) == (m["arch"] == "dsbs")
        with open(d / "records.csv", newline="") as f:
            rows = list(csv.DictReader(f))
        assert len(rows) == 2 * 2 * 2  # tries x scenarios x roles
        assert {r["arch"] for r in rows} == {m["arch"]}
        assert all(r["status"] == "ok" and r["lost"] in ("", "0") for r in rows)
        with open(d / "coordination.csv", newline="") as f:
            coordination = list(csv.DictReader(f))
        for row in coordination:
            # Each session's counters come from its own architecture's cluster.
            assert (row["service_cpu_s"] != "") == (m["arch"] == "zk")
        spans[m["arch"]] = [(int(r["try"]), r["scenario"], r["role"], r["wall_s"]) for r in rows]
    # The same sessions ran on both.
    assert [s[:3] for s in spans["zk"]] == [s[:3] for s in spans["dsbs"]]
