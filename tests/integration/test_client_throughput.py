"""How fast is the load client itself? Measured against a null server that only acks.

The null server (tests/support/null_broker.py: a uvloop ``asyncio.Protocol`` in its own process,
pinned to the other core when there are two) decodes each request's header and Produce body with
the shared codec and answers with a cached encoded ProduceResponse: about the cheapest
Kafka-protocol peer possible, so the records/s measured here are the client's ceiling, not a
broker's.

Run ``python -m tests.integration.test_client_throughput [--placement split|same|none]`` for the
table (32 B x batch 1/20/50 and 1 KB x batch 20, sync; plus pipelined and 128 KiB), and
``--profile`` for a cProfile of the client. Placement matters enormously for sync ping-pong on
this VM (docs/architecture.md: a cross-core wake-up costs ~40 us): measured on an idle VM,
32 B x 50 sync reached ~1.05M records/s with client and server on the same core, ~0.40M on
split cores.
The test checks only that the client drives the server to completion and reports sane figures:
speed is a benchmark's business (`make perf`, this module's table), never a test's assertion on a
shared machine (a CPU-cost floor here once failed CI at 266k records per CPU-second under load).
"""

from __future__ import annotations

import os
import sys
import time

import pytest

from tests.support.null_broker import TOPIC, start_null_server
from workloads.cluster import ClusterClient
from workloads.connection import new_event_loop
from workloads.producer import Producer

pytestmark = pytest.mark.integration


def _cpus(placement: str = "split") -> tuple[int | None, int | None]:
    """(client cpu, server cpu): split = one core each, same = both on one, none = unpinned."""
    cpus = sorted(os.sched_getaffinity(0))
    if placement == "same":
        return cpus[0], cpus[0]
    if placement == "split" and len(cpus) >= 2:
        return cpus[0], cpus[1]
    return None, None


async def measure(
    port: int, msg_size: int, batch: int, count: int, mode: str = "sync", window: int = 1
) -> tuple[float, float]:
    """(records/s by wall clock, records per second of client CPU time)."""
    cluster = await ClusterClient.open(f"127.0.0.1:{port}")
    try:
        prod = Producer(cluster, TOPIC, msg_size=msg_size, batch=batch, mode=mode, window=window)
        await prod.run(min(count, 20 * batch))  # warm-up: buffers, connections, caches
        cpu0 = time.process_time()
        res = await Producer(
            cluster, TOPIC, msg_size=msg_size, batch=batch, mode=mode, window=window
        ).run(count)
        cpu = time.process_time() - cpu0
        assert res.records_acked == count
        return res.rps, count / cpu
    finally:
        await cluster.close()


def test_client_drives_the_null_server_to_completion():
    client_cpu, server_cpu = _cpus()
    proc, port = start_null_server(server_cpu)
    before = os.sched_getaffinity(0)
    try:
        if client_cpu is not None:
            os.sched_setaffinity(0, {client_cpu})
        loop = new_event_loop()
        try:
            rps, cpu_rps = loop.run_until_complete(measure(port, 32, 50, 100_000))
        finally:
            loop.close()
    finally:
        os.sched_setaffinity(0, before)
        proc.kill()
    # measure() already checked that all 100,000 records were acknowledged; the rates only
    # have to be real numbers (their size is what `make perf` reports).
    assert rps > 0 and cpu_rps > 0, (rps, cpu_rps)


CASES = [
    (32, 1, "sync", 1),
    (32, 20, "sync", 1),
    (32, 50, "sync", 1),
    (1024, 20, "sync", 1),
    (32, 50, "pipelined", 8),
    (128 * 1024, 20, "sync", 1),
]


def main(argv: list[str]) -> None:
    placement = argv[argv.index("--placement") + 1] if "--placement" in argv else "split"
    client_cpu, server_cpu = _cpus(placement)
    print(f"placement: {placement} (client cpu {client_cpu}, server cpu {server_cpu})")
    proc, port = start_null_server(server_cpu)
    if client_cpu is not None:
        os.sched_setaffinity(0, {client_cpu})
    loop = new_event_loop()
    try:
        if "--profile" in argv:
            import cProfile
            import pstats

            msg, batch = 32, 50
            prof = cProfile.Profile()
            prof.enable()
            loop.run_until_complete(measure(port, msg, batch, 200_000))
            prof.disable()
            pstats.Stats(prof).sort_stats("tottime").print_stats(18)
            return
        for msg, batch, mode, window in CASES:
            count = 60_000 if batch == 1 else (4_000 if msg > 100_000 else 300_000)
            best = cpu_best = 0.0
            for _ in range(3):
                rps, cpu_rps = loop.run_until_complete(
                    measure(port, msg, batch, count, mode, window)
                )
                best, cpu_best = max(best, rps), max(cpu_best, cpu_rps)
            print(
                f"{msg:>7} B  batch {batch:>3}  {mode:<9} window {window}: "
                f"{best:>12,.0f} records/s wall ({best * msg / 1e6:,.1f} MB/s payload), "
                f"{cpu_best:>12,.0f} records per client CPU-second"
            )
    finally:
        loop.close()
        proc.kill()


if __name__ == "__main__":
    main(sys.argv[1:])
