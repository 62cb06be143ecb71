"""The exactly-once study, the pure parts: its workload block (good files load with their
defaults, a bad one is one line naming the file and the key), the schedule (every case beside
its plain twin, the architectures alternating session by session, A B then B A), the records'
values, the percentiles, and a session's transactions.csv row."""

from __future__ import annotations

from pathlib import Path

import pytest

import twinbench_common.runlog as fmt
from harness.driver import counters, kinds, plan
from harness.studies.transactions import SCENARIO, TRANSACTIONS_STUDY, TransactionsPlan, TxnCase
from harness.studies.transactions.client import Outcome, index_of, percentile, value
from harness.studies.transactions.session import Measured, transactions_row
from harness.workload import WorkloadError, load_workload, parse_workload

BASE = {"name": "eos", "producers": 1, "consumers": 1, "messages": 2000, "tries": 3,
        "cells": [{"table": "eos", "msg_sizes": [32], "batches": [20]}]}


def workload(block: object = None, **core: object):
    return parse_workload({**BASE, **core, "transactions": block or {}}, "eos.yaml")


def test_a_block_takes_its_defaults_and_replaces_the_papers_sessions():
    wl = workload()
    txn = wl.study(TRANSACTIONS_STUDY)
    assert txn == TransactionsPlan()
    assert wl.scenarios == (SCENARIO,)
    assert [c.name for c in txn.cases()] == [
        "produce-txn1", "produce-plain1", "produce-txn10", "produce-plain10",
        "produce-txn100", "produce-plain100", "ctp-txn1", "ctp-plain1", "ctp-txn10",
        "ctp-plain10", "ctp-txn100", "ctp-plain100"]
    assert list(wl.as_dict()["transactions"]["sizes"]) == [1, 10, 100]
    only = workload({"sizes": [5], "shapes": "ctp", "plain": False}).study(TRANSACTIONS_STUDY)
    assert only is not None and only.cases() == (TxnCase("ctp", 5, True),)


@pytest.mark.filesystem
@pytest.mark.parametrize("name", ["exactly-once", "exactly-once-smoke"])
def test_shipped_workloads_load(name):
    wl = load_workload(name).workload
    txn = wl.study(TRANSACTIONS_STUDY)
    assert txn is not None and wl.name == name and set(txn.shapes) == {"produce", "ctp"}
    assert wl.tries >= 3 and wl.producers == wl.consumers == 1
    assert all(wl.messages % (s * 20) == 0 for s in txn.sizes)


@pytest.mark.parametrize("doc,expected", [
    ({"transactions": [1, 10]},
     "eos.yaml: transactions: must be a mapping (sizes, shapes, plain, ...)"),
    ({"transactions": {"size": [1]}},
     "eos.yaml: transactions.size: unknown key (did you mean 'sizes'?); known: linger_ms, "
     "plain, retry_backoff_ms, shapes, sizes, timeout_s, transaction_timeout_ms"),
    ({"transactions": {"sizes": [0]}},
     "eos.yaml: transactions.sizes: must be an integer between 1 and 10000, got 0"),
    ({"transactions": {"sizes": [1, 1]}}, "eos.yaml: transactions.sizes: lists 1 twice"),
    ({"transactions": {"shapes": ["copy"]}},
     "eos.yaml: transactions.shapes: must be one of produce, ctp, got 'copy'"),
    ({"transactions": {"plain": "yes"}},
     "eos.yaml: transactions.plain: must be true or false, got 'yes'"),
    ({"transactions": {"timeout_s": 7200}},
     "eos.yaml: transactions.timeout_s: must be at most 3600 s, got 7200"),
    ({"transactions": {"retry_backoff_ms": 0}},
     "eos.yaml: transactions.retry_backoff_ms: must be an integer between 1 and 10000, got 0"),
    ({"transactions": {}, "messages": 3000},
     "eos.yaml: messages: 3000 records are not a whole number of transactions of 100 batches "
     "x 20 records (2000 records): give a multiple of 2000"),
    ({"transactions": {"sizes": [3]}, "messages": 2000,
      "cells": [{"table": "eos", "msg_sizes": [32], "batches": [20, 50]}]},
     "eos.yaml: messages: 2000 records are not a whole number of transactions of 3 batches x "
     "20 records (60 records): give a multiple of 300"),
    ({"transactions": {}, "cells": [{"table": "eos", "msg_sizes": [32], "batches": [20],
                                     "messages": [2000]}]},
     "eos.yaml: cells[0].messages: does not apply: every transactions session moves the "
     "workload's messages"),
    ({"transactions": {}, "producers": 3},
     "eos.yaml: producers: transactions sessions run one producer (and one consumer for ctp): "
     "give producers: 1"),
    ({"transactions": {}, "producer_mode": "pipelined"},
     "eos.yaml: producer_mode: does not apply to transactions sessions (one producer, and one "
     "consumer for ctp, per session, through confluent-kafka)"),
    ({"transactions": {}, "acks": 1},
     "eos.yaml: acks: idempotent and transactional producers write with acks=all: give acks: "
     "-1 or leave it out"),
    ({"transactions": {}, "client": "kafka-perf"},
     "eos.yaml: client: transactions sessions run their own clients: leave it out"),
    ({"transactions": {}, "security": "tls"},
     "eos.yaml: security: transactions sessions connect in plaintext only: leave it out"),
    ({"transactions": {}, "policies": {"offset_commit": ["none", "every_fetch"]}},
     "eos.yaml: policies.offset_commit: transactions sessions commit offsets their own way "
     "(in the transaction, or after every batch without): sweep nothing here"),
    ({"transactions": {}, "tries": 2},
     "eos.yaml: tries: the study compares means over tries: give at least 3 (got 2; --tries "
     "overrides it for a quick look)"),
    ({"transactions": {}, "faults": {"rate": 100, "duration_s": 5, "cases": [
        {"name": "k", "schedule": [{"at_s": 1, "action": "kill", "broker": "0"}]}]}},
     "eos.yaml: transactions: runs sessions of its own; it does not combine with faults"),
    ({"transactions": {}, "scenarios": ["split"]},
     "eos.yaml: scenarios: a workload with transactions runs transactions sessions only "
     "(scenarios: [transactions], or leave it out)"),
])
def test_bad_blocks_give_one_clear_line(doc, expected):
    with pytest.raises(WorkloadError) as err:
        parse_workload({**BASE, **doc}, "eos.yaml")
    assert str(err.value) == expected


@pytest.mark.filesystem
def test_a_bad_file_is_one_line_naming_it(tmp_path: Path):
    good = tmp_path / "mine.yaml"
    good.write_text("name: mine\nproducers: 1\nconsumers: 1\nmessages: 2000\ntries: 3\n"
                    "transactions: {sizes: [1, 100]}\n"
                    "cells: [{table: eos, msg_sizes: [32], batches: [20]}]\n")
    txn = load_workload(good).workload.study(TRANSACTIONS_STUDY)
    assert txn is not None and txn.sizes == (1, 100)
    bad = tmp_path / "bad.yaml"
    bad.write_text(good.read_text().replace("sizes: [1, 100]", "sizes: [1, 100], shapes: [x]"))
    with pytest.raises(WorkloadError) as err:
        load_workload(bad)
    assert str(err.value) == "bad.yaml: transactions.shapes: must be one of produce, ctp, got 'x'"
    assert "\n" not in str(err.value)


def test_sessions_interleave_the_architectures_abba_case_by_case():
    wl = workload({"sizes": [1, 5], "shapes": ["produce"]}, tries=3)
    epochs = kinds.schedule(wl, plan.sides(wl, arches=("zk", "dsbs")))
    assert len(epochs) == 1  # one cluster per architecture, every session on it
    got = [(s.cell.cell_id, s.try_no, s.side.arch) for s in epochs[0].sessions]
    cells = ["produce-txn1-32B-b20", "produce-plain1-32B-b20", "produce-txn5-32B-b20",
             "produce-plain5-32B-b20"]
    assert got == [
        *((c, 1, a) for c in cells for a in ("zk", "dsbs")),
        *((c, 2, a) for c in cells for a in ("dsbs", "zk")),
        *((c, 3, a) for c in cells for a in ("zk", "dsbs")),
    ]
    s = epochs[0].sessions[0]
    assert s.scenario == SCENARIO and s.case == TxnCase("produce", 1, True)


def test_values_carry_their_index_and_percentiles_are_nearest_rank():
    v = value(12345, 32)
    assert len(v) == 32 and index_of(v) == 12345
    assert index_of(b"short") is None and index_of(None) is None
    assert percentile([], 0.5) is None
    assert percentile([3.0, 1.0, 2.0], 0.5) == 2.0
    assert percentile([float(i) for i in range(1, 101)], 0.99) == 99.0
    assert percentile([5.0], 0.99) == 5.0


def _session(case: TxnCase) -> plan.Session:
    side = plan.Side(0, "zk", "", "none", "cached")
    return plan.Session(side, plan.Cell(case.name, 32, 20), 2, SCENARIO, case)


def test_a_sessions_row_has_every_column_and_its_costs():
    outcome = Outcome(records=2000, wall_s=0.5, units=10, transactions=10, offset_commits=10,
                      unit_end_s=[0.001 * i for i in range(1, 11)], read=2000, read_s=0.6)
    delta = counters.Delta(
        {"coord_messages": 31, "coord_bytes": None, "coordination_ops": 30,
         "broker_cpu_s": 0.2, "service_cpu_s": 0.1},
        {"coordination_ops": 30},
        {"kafka_requests_write_txn_markers": 10, "kafka_requests_end_txn": 10,
         "kafka_requests_produce": 40})
    row = transactions_row("r1", "zk", _session(TxnCase("ctp", 5, True)),
                           Measured(outcome, delta), 3)
    assert list(row) == list(fmt.TRANSACTIONS.names())
    assert row["cell_id"] == "ctp-txn5-32B-b20" and row["case"] == "ctp-txn5"
    assert (row["shape"], row["txn_batches"], row["transactional"]) == ("ctp", 5, True)
    assert row["rps"] == 4000.0 and row["partitions"] == 3 and row["status"] == "ok"
    assert (row["commit_p50_ms"], row["commit_p99_ms"], row["commit_max_ms"]) == (5.0, 10.0,
                                                                                   10.0)
    assert row["commit_mean_ms"] == pytest.approx(5.5)
    # An API no broker served in the window is 0; the counters were read.
    assert (row["write_txn_markers"], row["txn_offset_commit"]) == (10, 0)
    assert row["coord_messages"] == 31 and row["coord_bytes"] is None


def test_a_session_that_lost_or_repeated_a_record_fails_and_unread_counters_stay_empty():
    outcome = Outcome(records=2000, wall_s=0.5, units=20, read=1999, missing=1, duplicates=2)
    row = transactions_row("r1", "zk", _session(TxnCase("produce", 1, False)),
                           Measured(outcome, counters.unmeasured()), 3)
    assert row["status"] == "failed" and row["transactional"] is False
    assert row["commit_p50_ms"] is None and row["read_s"] is None
    assert all(row[r] is None for r in fmt.transactions.REQUESTS)
