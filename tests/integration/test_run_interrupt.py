"""Ctrl-C (SIGINT) to `twinbench run` mid-run: every process it started is gone, the rows
already written stay, the manifest says incomplete, and the exit status is 130."""

from __future__ import annotations

import csv
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
import yaml

import twinbench_common.runlog as fmt
from harness.cluster.processes import pid_alive

pytestmark = pytest.mark.integration

# Long enough that the run is still going when interrupted (many tries), small per session so
# a session completes quickly and a row exists before the signal.
WORKLOAD = {
    "name": "interrupt",
    "messages": 600,
    "tries": 200,
    "scenarios": ["split", "streaming"],
    "consumer_timeout_s": 30,
    "cells": [{"table": "size_grid", "msg_sizes": [32], "batches": [20]}],
}


def lines(path: Path) -> int:
    try:
        return len(path.read_text().splitlines())
    except OSError:
        return 0


@pytest.mark.parametrize("arch", ["zk", "dsbs"])
def test_sigint_stops_everything_and_marks_the_run_incomplete(tmp_path, arch):
    if arch == "zk":
        from harness.services.zookeeper import find_classpath, find_java

        if find_java() is None or find_classpath() is None:
            pytest.skip("no java or ZooKeeper jars (make setup installs them)")
    workload = tmp_path / "interrupt.yaml"
    workload.write_text(yaml.safe_dump(WORKLOAD))
    out = tmp_path / "runs"
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "run", "--arch", arch, "--workload",
         str(workload), "--out", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        deadline = time.monotonic() + 180
        # Readiness: at least two sessions' rows are on disk (header + 4 rows).
        while lines(next(iter(out.glob("*/records.csv")), out / "none")) < 5:
            assert proc.poll() is None, proc.communicate()[1]
            assert time.monotonic() < deadline, "no rows within 180 s"
            time.sleep(0.05)  # probe interval
        children = [p.pid for p in psutil.Process(proc.pid).children(recursive=True)]
        assert len(children) >= 3  # the brokers (and ZooKeeper) are running
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, stderr
    assert "interrupted" in stderr
    assert [pid for pid in children if pid_alive(pid)] == []

    (run_dir,) = out.iterdir()
    m = json.loads((run_dir / "manifest.json").read_text())
    assert m["incomplete"] is True and m["finished_at"] is not None
    with open(run_dir / "records.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) >= 4 and list(rows[0]) == list(fmt.RECORDS.names())
    assert all(r["status"] == "ok" for r in rows)
    assert len(rows) < 2 * 2 * WORKLOAD["tries"]
