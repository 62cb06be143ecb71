"""`twinbench run --arch zk,dsbs,raft` on the open-loop smoke workload: time-bounded streaming
sessions at two target rates on the three twins, real processes; the run logs carry the
open-loop columns, the rates kept, and an end-to-end latency for every record consumed after
the warm-up."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from hdrh.histogram import HdrHistogram

import twinbench_common.runlog as fmt
from harness.driver import plan
from harness.workload import load_workload
from tests.integration.test_run_smoke import zookeeper_missing
from tests.support.cli import twinbench

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_open_loop_smoke_keeps_its_rates_on_the_three_twins(tmp_path: Path) -> None:
    if reason := zookeeper_missing():
        pytest.skip(reason)
    out = tmp_path / "runs"
    done = twinbench("run", "--arch", "zk,dsbs,raft", "--workload", "open-loop-smoke",
                     "--out", str(out), "--seed", "7", timeout=280)
    assert done.returncode == 0, done.stderr
    wl = load_workload("open-loop-smoke").workload
    assert wl.duration_s is not None
    cells = plan.cells(wl)
    assert [c.cell_id for c in cells] == ["open_loop-32B-b20-r500", "open_loop-32B-b20-r2000"]
    runs = sorted(out.iterdir())
    assert {json.loads((r / "manifest.json").read_text())["arch"] for r in runs} == {
        "zk", "dsbs", "raft"}
    for run in runs:
        with open(run / "records.csv", newline="") as f:
            rows = list(csv.DictReader(f))
        assert list(rows[0]) == list(fmt.RECORDS.names())
        assert len(rows) == 2 * len(cells)
        measured_s = wl.duration_s - wl.warmup_s
        for row in rows:
            target = float(row["target_rate"])
            assert row["cell_id"].endswith(f"-r{target:g}") and row["status"] == "ok"
            # The lowest rate is far below what any twin and the client sustain; on a
            # loaded machine the higher one may fall behind, and must then say so.
            if target == min(wl.rate):
                assert row["behind"] == "False", row
            if row["role"] == "production" and row["behind"] == "False":
                # Kept: what was sent after the warm-up is the target's share of that time.
                assert float(row["achieved_rate"]) == pytest.approx(target, rel=0.05)
                assert int(row["records"]) == pytest.approx(target * measured_s, rel=0.05)
                assert float(row["send_delay_p99_us"]) < 100_000
            elif row["role"] == "production":
                assert "marked behind" in done.stderr
            else:
                assert row["lost"] == row["out_of_order"] == row["duplicates"] == "0"
                p = [float(row[f"e2e_{k}_us"]) for k in ("p50", "p90", "p99", "p999", "max")]
                assert 0 < p[0] <= p[1] <= p[2] <= p[3] <= p[4]
        entries = [json.loads(x) for x in (run / "latency.jsonl").read_text().splitlines()]
        kinds = {(e["role"], e["kind"]) for e in entries}
        assert {("production", "intended"), ("production", "send_delay"),
                ("consumption", "e2e")} <= kinds
        for e in entries:
            assert HdrHistogram.decode(e["histogram"]).get_total_count() == e["count"] > 0
        # Every record consumed after the warm-up has an end-to-end latency.
        for row in rows:
            if row["role"] == "consumption":
                (e2e,) = [e for e in entries if e["kind"] == "e2e"
                          and e["cell_id"] == row["cell_id"]]
                assert e2e["count"] == int(row["records"])


SATURATING = """\
name: saturating
producer_mode: sync
rate: 1000000
duration_s: 1.5
warmup_s: 0.5
tries: 1
scenarios: [streaming]
consumer_timeout_s: 30
cells:
  - table: open_loop
    msg_sizes: [32]
    batches: [1]
"""


def test_a_target_beyond_reach_is_marked_behind_not_reported_as_kept(tmp_path: Path) -> None:
    """A million records/s from synchronous producers sending one record per request: the
    session cannot keep it, and says so in the row and on stderr."""
    workload = tmp_path / "saturating.yaml"
    workload.write_text(SATURATING)
    out = tmp_path / "runs"
    done = twinbench("run", "--arch", "dsbs", "--workload", str(workload), "--out", str(out),
                     timeout=200)
    assert done.returncode == 0, done.stderr
    assert "fell behind their schedule" in done.stderr and "marked behind" in done.stderr
    (run,) = out.iterdir()
    with open(run / "records.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert {r["behind"] for r in rows} == {"True"}
    prod = next(r for r in rows if r["role"] == "production")
    assert float(prod["achieved_rate"]) < 0.5 * float(prod["target_rate"])
    # Everything that was sent still arrived: behind is about the rate, not about the data.
    cons = next(r for r in rows if r["role"] == "consumption")
    assert cons["lost"] == "0" and cons["status"] == "ok"
