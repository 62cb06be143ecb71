"""The load client's own ceiling: the highest rate at which one open-loop producer (32 B x 20,
pipelined, window 8) keeps its schedule against the null sink, found by ramp and bisection
(harness/studies/latency/search.py). `python -m harness.bench.perf --open-loop` prints it; rate
searches use it as their ceiling (harness/studies/latency/ceiling.py keeps it per machine).
"""

from __future__ import annotations

import os
import sys
import tempfile
import uuid
from pathlib import Path

from harness.bench.single import WARMUP_MESSAGES, placement, produce_sync, start_single
from harness.studies.latency.search import RateSearch, SearchConfig, search_max_rate
from workloads.cluster import ClusterClient
from workloads.connection import run as run_async
from workloads.producer import Producer, ProducerConfig

# --open-loop: seconds per try, and the fraction of the target a try must achieve.
OPEN_LOOP_TRY_S = 3.0
OPEN_LOOP_ACHIEVED = 0.98


async def _open_loop_try(bootstrap: str, rate: float) -> bool:
    """One open-loop session at ``rate`` against ``bootstrap``: did it keep its schedule?"""
    cluster = await ClusterClient.open(bootstrap)
    try:
        topic = f"perf-{uuid.uuid4().hex[:12]}"
        await cluster.create_topic(topic, partitions=1)
        cfg = ProducerConfig(topic=topic, msg_size=32, batch=20, mode="pipelined", window=8,
                             rate=rate)
        result = await Producer(cluster, config=cfg).run(
            int(rate * OPEN_LOOP_TRY_S) + cfg.batch, duration_s=OPEN_LOOP_TRY_S)
    finally:
        await cluster.close()
    report = result.schedule_report
    assert report is not None
    ok = not report.behind and report.achieved_rate >= OPEN_LOOP_ACHIEVED * rate
    delay = result.schedule.send_delay.percentile(99) if result.schedule else 0
    print(f"  open loop {rate:>12,.0f} rec/s: achieved {report.achieved_rate:>12,.0f}, "
          f"final lag {report.final_lag_s * 1e3:7.1f} ms, send delay p99 {delay / 1e3:7.1f} ms"
          f" -> {'kept' if ok else 'behind'}", file=sys.stderr, flush=True)
    return ok


def search(workdir: Path, broker_cpu: int | None) -> RateSearch:
    proc, bootstrap = start_single("null", workdir, broker_cpu, "null")
    try:
        run_async(produce_sync(bootstrap, 32, 20, WARMUP_MESSAGES))
        return search_max_rate(lambda r: run_async(_open_loop_try(bootstrap, r)),
                               SearchConfig(start=25_000, precision=0.05, ceiling=5_000_000))
    finally:
        proc.stop()


def measure(where: str = "same") -> float:
    """The client's open-loop ceiling on this machine, records/s (what a rate search may try
    at most), with the client and the null sink placed as ``--open-loop`` places them. Leaves
    this process's CPU affinity as it found it."""
    before = os.sched_getaffinity(0)
    client_cpu, broker_cpu = placement(where)
    try:
        if client_cpu is not None:
            os.sched_setaffinity(0, {client_cpu})
        with tempfile.TemporaryDirectory(prefix="twinbench-ceiling-") as tmp:
            return search(Path(tmp), broker_cpu).kept
    finally:
        os.sched_setaffinity(0, before)
