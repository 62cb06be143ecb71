"""The exactly-once tables and report section on a small synthetic run log (no Spark): two
architectures, a producer alone in transactions of 1 and 10 batches and without, three tries
with round numbers, so every interval and ratio is computed by hand; and the same rows written
as run directories the loader validates and reads."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

import twinbench_common.runlog as fmt
from spark_analysis import loader, synth
from spark_analysis.archs import DEFAULT
from spark_analysis.studies.transactions import tables as txn_tables
from spark_analysis.studies.transactions.study import TransactionsTables
from twinbench_common.runlog.manifest import FORMAT_VERSION

T975_2 = 4.302652729749464  # t(0.975, 2): three tries
RECORDS = 2000
# Per architecture and transaction size: records/s in transactions and without, each try's
# scatter (x 0.9, 1.0, 1.1), and the coordination messages per transaction.
RPS = {("zk", 1): (1000.0, 4000.0), ("zk", 10): (3000.0, 5000.0),
       ("dsbs", 1): (2000.0, 4000.0), ("dsbs", 10): (4500.0, 5000.0)}
COORD = {"zk": 3.0, "dsbs": 12.0}
SCATTER = (0.9, 1.0, 1.1)


def session(run_id: str, arch: str, size: int, transactional: bool, try_: int
            ) -> dict[str, object]:
    """One transactions.csv row, every column the table declares."""
    rps = RPS[(arch, size)][0 if transactional else 1] * SCATTER[try_ - 1]
    units = RECORDS // (20 * size)
    row: dict[str, object] = dict.fromkeys(fmt.TRANSACTIONS.names())
    case = f"produce-{'txn' if transactional else 'plain'}{size}"
    row.update({
        "run_id": run_id, "arch": arch, "label": "", "cell_id": f"{case}-32B-b20",
        "case": case, "try": try_, "shape": "produce", "txn_batches": size,
        "transactional": transactional, "msg_size": 32, "batch": 20, "partitions": 3,
        "records": RECORDS, "wall_s": RECORDS / rps, "rps": rps, "units": units,
        "transactions": units if transactional else 0, "aborts": 0, "offset_commits": 0,
        "commit_p50_ms": 2.0 * try_ if transactional else 0.2,
        "commit_p99_ms": 4.0 * try_ if transactional else 0.5, "commit_max_ms": 9.0,
        "commit_mean_ms": 2.5, "read": RECORDS, "read_s": RECORDS / rps + 0.01,
        "duplicates": 0, "missing": 0,
        "coord_messages": COORD[arch] * units if transactional else 0,
        "coord_bytes": None, "coordination_ops": 3 * units if transactional else 0,
        "broker_cpu_s": 0.001 * units, "service_cpu_s": None,
        "write_txn_markers": units if transactional else 0,
        "end_txn": units if transactional else 0,
        "add_partitions_to_txn": units if transactional else 0, "txn_offset_commit": 0,
        "offset_commit": 0, "status": "ok"})
    return row


def rows(arch: str, run_id: str | None = None) -> list[dict[str, object]]:
    rid = run_id or f"r-{arch}"
    return [session(rid, arch, size, txn, t) for t in (1, 2, 3) for size in (1, 10)
            for txn in (True, False)]


def frame() -> pd.DataFrame:
    """What aggregate.session_rows gives: the rows with the loader's workload and side."""
    return pd.DataFrame(rows("zk") + rows("dsbs")).assign(workload="exactly-once", side="*")


def computed() -> TransactionsTables:
    long = txn_tables.transactions_stats(txn_tables.per_session(frame()), DEFAULT)
    return TransactionsTables(stats=long, throughput=txn_tables.throughput(long, DEFAULT),
                              archs=DEFAULT)


def test_stats_have_the_t_interval_over_tries_and_costs_per_transaction():
    st = computed().stats
    (r,) = st[(st["arch"] == "zk") & (st["txn_batches"] == 1) & st["transactional"]
              & (st["metric"] == "rps")].to_dict("records")
    assert (r["n"], r["mean"], r["sd"]) == (3, pytest.approx(1000.0), pytest.approx(100.0))
    assert r["ci_lo"] == pytest.approx(1000.0 - T975_2 * 100 / math.sqrt(3))
    assert r["ci_hi"] == pytest.approx(1000.0 + T975_2 * 100 / math.sqrt(3))
    per_txn = st[(st["metric"] == "coord_messages_per_unit") & st["transactional"]]
    assert set(zip(per_txn["arch"], per_txn["mean"], strict=True)) == {("zk", 3.0),
                                                                       ("dsbs", 12.0)}
    markers = st[(st["metric"] == "write_txn_markers_per_unit") & st["transactional"]]
    assert set(markers["mean"]) == {1.0}
    # A measure no session has (no service on either here) is left out, not zero.
    assert "service_cpu_s" not in set(st["metric"])
    # ZooKeeper before DSBS, size by size, transactions before their plain twin.
    rps = st[st["metric"] == "rps"]
    assert list(zip(rps["arch"], rps["txn_batches"], rps["transactional"], strict=True)) == [
        ("zk", 1, True), ("zk", 1, False), ("zk", 10, True), ("zk", 10, False),
        ("dsbs", 1, True), ("dsbs", 1, False), ("dsbs", 10, True), ("dsbs", 10, False)]


def test_throughput_is_transactions_over_without_with_fieller():
    tp = computed().throughput
    got = {(r["arch"], r["txn_batches"]): r for r in tp.to_dict("records")}
    assert set(got) == {("zk", 1), ("zk", 10), ("dsbs", 1), ("dsbs", 10)}
    zk1 = got[("zk", 1)]
    assert zk1["ratio"] == pytest.approx(0.25)
    assert zk1["ratio_ci_lo"] < 0.25 < zk1["ratio_ci_hi"]
    assert (zk1["txn_n"], zk1["plain_n"]) == (3, 3)
    assert got[("dsbs", 10)]["ratio"] == pytest.approx(0.9)


def test_the_section_has_a_table_per_architecture_and_the_summary_its_ratios():
    t = computed()
    md = t.section()
    assert "**ZooKeeper** (workload `exactly-once`, batches of 20 records of 32 B)" in md
    assert "**DSBS**" in md
    assert "| shape | batches / txn | records/s in transactions | records/s without | " \
           "with/without | ZooKeeper requests / txn |" in md
    zk1 = next(line for line in md.splitlines() if line.startswith("| produce | 1 |"))
    assert "| 1,000 [" in zk1 and "| 4,000 [" in zk1 and "| 0.25 [" in zk1
    # Commit percentiles are means over tries: p50 2, 4, 6 ms; p99 4, 8, 12 ms.
    assert zk1.endswith("| 3 [3, 3] | 0 | 1 | 4 | 8 |")
    assert t.headline() == (
        "- Exactly-once (exactly-once, produce): transactions of 1 / 10 batches keep ZK "
        "0.25 / 0.6, DSBS 0.5 / 0.9 of the records/s without. See \"Exactly-once\".\n")
    assert set(t.tables()) == {"transactions_stats", "transactions_throughput"}
    empty = TransactionsTables()
    assert empty.empty and empty.tables() == {} and empty.headline() == ""
    assert "No exactly-once sessions" in empty.section()


@pytest.mark.filesystem
def test_a_synthetic_run_log_is_read_and_its_tables_written_back(tmp_path: Path):
    """Run directories as the driver writes them (every other table header-only), checked by
    the loader; its rows give the same tables, and so do the CSVs the study writes."""
    root = tmp_path / "runs"
    for index, arch in enumerate(("zk", "dsbs"), start=1):
        run_id = synth.run_id_for(arch, "exactly-once", index)
        run_dir = root / run_id
        run_dir.mkdir(parents=True)
        manifest = synth.manifest(run_id, arch, "", "exactly-once",
                                  format_version=FORMAT_VERSION)
        (run_dir / "manifest.json").write_text(json.dumps(manifest))
        for table in fmt.TABLES:
            header = "" if table.kind == "jsonl" else ",".join(table.names()) + "\n"
            (run_dir / table.file).write_text(header)
        pd.DataFrame(rows(arch, run_id), columns=list(fmt.TRANSACTIONS.names())).to_csv(
            run_dir / fmt.TRANSACTIONS.file, index=False)
    found = loader.validate_runs([root])
    assert {r.arch for r in found.runs} == {"zk", "dsbs"}
    assert sum(len(v) for v in found.files["transactions"].values()) == 2
    read = pd.concat([loader.read_pandas(r, fmt.TRANSACTIONS) for r in found.runs],
                     ignore_index=True).assign(workload="exactly-once", side="*")
    long = txn_tables.transactions_stats(txn_tables.per_session(read), DEFAULT)
    pd.testing.assert_frame_equal(long, computed().stats)
    out = tmp_path / "report"
    out.mkdir()
    for name, df in computed().tables().items():
        df.to_csv(out / f"{name}.csv", index=False)
    again = TransactionsTables(stats=pd.read_csv(out / "transactions_stats.csv"),
                               throughput=pd.read_csv(out / "transactions_throughput.csv"))
    assert again.section() == computed().section()
