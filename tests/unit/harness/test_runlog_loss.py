"""An injected loss: a gap in what the consumers saw must fail the cell, in the rows and in the
manifest (the driver then exits non-zero)."""

from __future__ import annotations

import csv
import json

import pytest

from harness import runlog
from harness.driver import rows
from harness.driver.counters import Delta
from harness.driver.plan import Cell, Session, Side
from harness.driver.runner import EXIT_DATA_LOSS, EXIT_OK, RunOutcome
from harness.driver.session import RoleResult, SessionResult
from workloads.latency import LatencyRecorder
from workloads.verify import Verifier

SESSION = Session(
    Side(0, "zk", "", "every_fetch", "per_request"), Cell("size_grid", 32, 20), 1, "split"
)


def session_result(verifier: Verifier, records: int) -> SessionResult:
    lat = LatencyRecorder()
    lat.record(100, records)
    return SessionResult(
        production=RoleResult("production", 1, 100, 0.01, lat, None, 0),
        consumption=RoleResult("consumption", 1, records, 0.01, lat, LatencyRecorder(), 0),
        report=verifier.report(), messages=100, timed_out=False,
    )


def feed(skip: range | None = None) -> Verifier:
    """One producer acknowledged 0..99; the consumer saw them in batches of 20 minus `skip`."""
    v = Verifier()
    v.expect(1, bytes([1]) * 100)
    for start in range(0, 100, 20):
        seqs = [s for s in range(start, start + 20) if skip is None or s not in skip]
        if seqs:
            v.add_batch(0, [1] * len(seqs), seqs)
    return v


def test_complete_delivery_is_ok():
    r = session_result(feed(), 100)
    assert not r.failed
    assert {row["status"] for row in rows.record_rows("run", "zk", SESSION, r)} == {"ok"}


def test_a_gap_fails_the_cell():
    r = session_result(feed(skip=range(40, 45)), 95)
    assert r.report.lost == 5
    assert r.failed
    prod, cons = rows.record_rows("run", "zk", SESSION, r)
    assert prod["status"] == cons["status"] == "failed"
    assert cons["lost"] == 5 and cons["duplicates"] == 0 and cons["out_of_order"] == 0
    assert prod.get("lost") is None  # loss is a consumption fact


def test_reordering_fails_the_cell_and_duplicates_are_counted():
    v = Verifier()
    v.expect(1, bytes([1]) * 40)
    v.add_batch(0, [1] * 20, list(range(20, 40)))
    v.add_batch(0, [1] * 20, list(range(0, 20)))  # older records after newer: out of order
    v.add_batch(0, [1] * 5, list(range(20, 25)))  # seen before: duplicates
    r = session_result(v, 45)
    assert r.report.out_of_order == 20 and r.report.duplicates == 5 and r.report.lost == 0
    assert r.failed
    dup_only = Verifier()
    dup_only.expect(1, bytes([1]) * 20)
    dup_only.add_batch(0, [1] * 20, list(range(20)))
    dup_only.add_batch(0, [1] * 20, list(range(20)))
    r = session_result(dup_only, 40)
    assert r.report.duplicates == 20 and not r.failed  # duplicates are counted, not fatal


@pytest.mark.filesystem
def test_failed_cell_lands_in_the_manifest_and_the_exit_code(tmp_path):
    r = session_result(feed(skip=range(0, 1)), 99)
    m = runlog.base_manifest(
        run_id="20261121T090000Z-zk-t-000000", arch="zk", label="", workload={"name": "t"},
        workload_text="", policies={}, cluster={}, service_versions={}, placement=None,
        seed=1, started_at=runlog.datetime.now(runlog.UTC))
    log = runlog.RunLog(tmp_path, m)
    log.add_records(rows.record_rows(log.run_id, "zk", SESSION, r))
    log.mark_failed(SESSION.cell.cell_id)
    log.finish(incomplete=False)
    manifest = json.loads((log.path / "manifest.json").read_text())
    assert manifest["failed_cells"] == ["size_grid-32B-b20"]
    with open(log.path / "records.csv", newline="") as f:
        assert [row["status"] for row in csv.DictReader(f)] == ["failed", "failed"]
    assert RunOutcome(failed_cells={"": ["size_grid-32B-b20"]}).exit_code == EXIT_DATA_LOSS
    assert RunOutcome().exit_code == EXIT_OK


@pytest.mark.filesystem
def test_every_counter_increase_lands_in_counters_csv(tmp_path):
    m = runlog.base_manifest(
        run_id="20261121T090000Z-zk-t-000001", arch="zk", label="", workload={"name": "t"},
        workload_text="", policies={}, cluster={}, service_versions={}, placement=None,
        seed=1, started_at=runlog.datetime.now(runlog.UTC))
    log = runlog.RunLog(tmp_path, m)
    change = Delta(columns={}, coordinator={"zk_reads": 40, "zk_writes": None},
                   broker={"cpu_user_s": 0.5},
                   services={"zookeeper": {"packets_received": 130, "packets_sent": None}})
    log.add_rows("counters.csv", rows.counter_rows(log.run_id, "zk", SESSION, change))
    log.finish(incomplete=False)
    with open(log.path / "counters.csv", newline="") as f:
        got = [(r["source"], r["counter"], r["increase"], r["scenario"], r["try"])
               for r in csv.DictReader(f)]
    # An unknown increase (a broker restarted) is an empty field, never a guess.
    assert got == [("coordinator", "zk_reads", "40", "split", "1"),
                   ("coordinator", "zk_writes", "", "split", "1"),
                   ("broker", "cpu_user_s", "0.5", "split", "1"),
                   # What ZooKeeper counted itself (the regression checks the brokers by it).
                   ("zookeeper", "packets_received", "130", "split", "1"),
                   ("zookeeper", "packets_sent", "", "split", "1")]
