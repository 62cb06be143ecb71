"""Scale benchmark (not a test): how long the analysis takes on 10 million records.csv rows.

    python -m spark_analysis.scale_bench [--rows 10000000] [--master URL] [--keep DIR]

It writes synthetic run directories in the documented format (spark_analysis.synth) - 20 runs,
10 per architecture, each with the paper's size grid and batch sweep, the KiB grid and the
policy sweep, both scenarios and roles, and thousands of tries; format 2, so each also carries
the three header-only fault files of a workload without faults - and then runs the very job
``twinbench analyze`` runs (loading with explicit schemas, validation, every Spark aggregation,
tables, figures, report) and reports the time of each stage. records.csv is what the job's
aggregations scan, so that is what is scaled; coordination.csv grows with it (one row per try x
cell x scenario, half as many); latency.jsonl holds histograms for the first 4 tries only (HDR
histograms are per cell, not per request, so they do not grow with traffic). ``--fault-tries
N`` adds a ZooKeeper and a DSBS run of a fault workload (synth.write_fault_run, N tries of each
case) to time the fault tables and figures as well.

The job takes a Spark master URL, so on a cluster: ``--master spark://host:7077`` with the data
directory on storage every executor can read (``--keep /shared/dir``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from spark_analysis.synth import (
    DSBS,
    KB_CELLS,
    PAPER_CELLS,
    POLICY_CELLS,
    ZK,
    Cell,
    write_fault_run,
    write_run,
)

CELLS: tuple[Cell, ...] = (*PAPER_CELLS, *KB_CELLS, *POLICY_CELLS)
ROWS_PER_TRY = len(CELLS) * 4  # x 2 scenarios x 2 roles
WORKLOAD = "scale"


class NoisyValue:
    """rps with a per-cell mean (DSBS ~2x ZK on the data path, as the paper claims) and 10%
    log-normal noise per try; picklable so worker processes can use it."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def __call__(self, arch: str, label: str, cell: Cell, scenario: str, role: str,
                 try_: int) -> float:
        base = 60_000.0 if arch == ZK else 120_000.0
        if cell.batch == 1:
            base /= 8
        if cell.msg_size >= 1024:
            base /= 1 + cell.msg_size / 16_384
        if scenario == "streaming":
            base *= 0.5
        if role == "consumption":
            base *= 0.9
        return base * math.exp(self.rng.gauss(0.0, 0.1))


def _write_one(args: tuple[str, str, int, int]) -> str:
    root, arch, index, tries = args
    path = write_run(Path(root), arch=arch, label="", workload=WORKLOAD, index=index,
                     cells=CELLS, tries=tries, value=NoisyValue(index), hour=index % 24,
                     latency_tries=4, format_version=2)
    return str(path)


def generate(root: Path, rows: int, runs: int, workers: int,
             fault_tries: int = 0) -> tuple[int, int]:
    """Write ``runs`` run directories holding at least ``rows`` records.csv rows in total (and
    a fault run per architecture with ``fault_tries`` tries, if any)."""
    tries = math.ceil(rows / runs / ROWS_PER_TRY)
    jobs = [(str(root), ZK if i % 2 == 0 else DSBS, i + 1, tries) for i in range(runs)]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        list(pool.map(_write_one, jobs))
    if fault_tries > 0:
        for i, arch in enumerate((ZK, DSBS)):
            write_fault_run(root, arch=arch, index=runs + 1 + i, tries=fault_tries)
    size = sum(f.stat().st_size for f in root.rglob("*") if f.is_file())
    return tries * ROWS_PER_TRY * runs, size


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m spark_analysis.scale_bench",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000, help="records.csv rows in all")
    parser.add_argument("--runs", type=int, default=20, help="run directories (half per arch)")
    parser.add_argument("--master", default="local[*]", help="Spark master URL")
    parser.add_argument("--driver-memory", default="4g",
                        help="spark.driver.memory (local mode: the executors live in the driver)")
    parser.add_argument("--keep", type=Path, default=None,
                        help="generate into (or reuse) this directory and keep it")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                        help="processes writing the synthetic runs")
    parser.add_argument("--fault-tries", type=int, default=0,
                        help="also write a fault workload's run per architecture with this many"
                             " tries of each case (default 0: none)")
    args = parser.parse_args(argv)

    root = args.keep or Path(tempfile.mkdtemp(prefix="twinbench-scale-"))
    data = root / "runs"
    out = root / "report"
    result: dict[str, object] = {"master": args.master, "cpu_count": os.cpu_count()}
    try:
        if data.is_dir() and any(data.iterdir()):
            print(f"reusing {data}", flush=True)
            rows = sum(max(0, sum(1 for _ in (p / "records.csv").open()) - 1)
                       for p in data.iterdir() if (p / "records.csv").is_file())
            size = sum(f.stat().st_size for f in data.rglob("*") if f.is_file())
        else:
            data.mkdir(parents=True, exist_ok=True)
            print(f"writing ~{args.rows:,} records.csv rows into {data} ...", flush=True)
            t = time.perf_counter()
            rows, size = generate(data, args.rows, args.runs, args.workers, args.fault_tries)
            result["generate_s"] = round(time.perf_counter() - t, 1)
        result.update(rows=rows, input_bytes=size)
        print(f"{rows:,} rows, {size / 1e9:.2f} GB on disk", flush=True)

        from spark_analysis.job import analyze
        from spark_analysis.session import build_session

        t = time.perf_counter()
        spark = build_session(args.master, driver_memory=args.driver_memory,
                              shuffle_partitions=max(4, (os.cpu_count() or 1) * 2))
        result["spark_start_s"] = round(time.perf_counter() - t, 1)
        t = time.perf_counter()
        analysis = analyze([data], out, spark=spark)
        result["analysis_s"] = analysis_s = round(time.perf_counter() - t, 1)
        result["stages_s"] = {k: round(v, 1) for k, v in analysis.timings.items()}
        result["rows_per_s"] = round(rows / analysis_s)
        result["report"] = str(out / "report.md")
        spark.stop()
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
            result["report"] = "(deleted with the temporary data; use --keep DIR to keep it)"
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
