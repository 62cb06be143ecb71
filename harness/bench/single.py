"""One broker and one producer, the building blocks of the single-broker benchmarks.

``start_single`` runs one `twinbench broker` (the LocalCoordinator: no peers, no coordination
traffic) with real storage or the null sink; ``produce_sync`` drives it with the paper's
synchronous producer; ``placement`` says which CPUs the client and the broker get. Used by
`make perf` (perf.py), the load client's ceiling (client_ceiling.py), perf_cluster.py and
perf_security.py.
"""

from __future__ import annotations

import os
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

from harness.cluster.processes import ManagedProcess
from workloads.cluster import ClusterClient, ClusterClientConfig
from workloads.producer import Producer

# Records produced once per broker before measuring (connection set-up, page cache, allocator
# warm-up).
WARMUP_MESSAGES = 5_000


@dataclass
class Sample:
    side: str  # "null" or "broker"
    msg_size: int
    batch: int
    repetition: int
    records: int
    wall_s: float
    rps: float
    p50_us: float
    p99_us: float


def start_single(name: str, workdir: Path, cpu: int | None, storage: str = "segment"
                 ) -> tuple[ManagedProcess, str]:
    """One `twinbench broker` (LocalCoordinator: no peers, no coordination traffic) with
    ``storage`` "segment", or "null" (acknowledges without storing); returns it and its
    address. Pinned to ``cpu`` when given, else it inherits this process's affinity."""
    argv = [sys.executable, "-m", "harness.cli", "broker", "--listen", "127.0.0.1:0",
            "--data-dir", str(workdir / name), "--storage", storage, "--log-level", "WARNING"]
    proc = ManagedProcess(argv, name=f"{name} broker", log_path=workdir / f"{name}.log").start()
    line = proc.wait_for_line("listening=", 60)
    if cpu is not None:
        os.sched_setaffinity(proc.pid, {cpu})
    return proc, line.split("=", 1)[1]


async def produce_sync(bootstrap: str, msg_size: int, batch: int, count: int,
                       config: ClusterClientConfig | None = None) -> Sample:
    """``count`` records from one synchronous producer into a fresh 1-partition topic; the
    sample's side and repetition are the caller's to fill in."""
    cluster = await ClusterClient.open(bootstrap, config)
    try:
        topic = f"perf-{uuid.uuid4().hex[:12]}"
        await cluster.create_topic(topic, partitions=1)
        result = await Producer(cluster, topic, msg_size=msg_size, batch=batch,
                                mode="sync").run(count)
    finally:
        await cluster.close()
    if result.records_acked != count:
        raise RuntimeError(f"only {result.records_acked}/{count} records acknowledged: "
                           f"errors {result.errors}")
    return Sample("", msg_size, batch, 0, result.records_acked, result.wall_s, result.rps,
                  result.latency.percentile(50), result.latency.percentile(99))


def placement(mode: str) -> tuple[int | None, int | None]:
    """(client CPU, broker CPU). A synchronous producer is a ping-pong: on one core each side
    wakes the other without a cross-core wake-up (~40 µs here), so "same" measures the
    software; "split" measures what a two-machine deployment would also pay per round trip."""
    cpus = sorted(os.sched_getaffinity(0))
    if mode == "none":
        return None, None
    if mode == "same" or len(cpus) < 2:
        return cpus[0], cpus[0]
    return cpus[0], cpus[1]
