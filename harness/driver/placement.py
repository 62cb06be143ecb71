"""CPU placement: the load client on one CPU, the brokers (and ZooKeeper) on the others.

docs/architecture.md ("Measuring on a small VM"): placement changes synchronous results up to
3x, so a benchmark pins its processes and records where. Mechanism: Linux children inherit the
CPU mask of the thread that forks them, so the driver narrows its *main thread* to the broker
CPUs while the cluster starts (every broker, every ZooKeeper JVM thread, kazoo's threads and
the like inherit it), then pins *every* thread of its own process to the client CPU. Nothing
outside the processes we start is touched.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class Placement:
    # CPUs the load client (this process: producers, consumers, verification) runs on.
    client: tuple[int, ...]
    # CPUs every broker and ZooKeeper server runs on.
    brokers: tuple[int, ...]

    def as_manifest(self) -> dict[str, object]:
        return {
            "client": list(self.client),
            "brokers": list(self.brokers),
            "zookeeper": list(self.brokers),
            "method": "sched_setaffinity (children inherit the mask)",
        }


def choose(mode: str) -> Placement | None:
    """``auto``: first allowed CPU for the client, the rest for the cluster (needs 2+ CPUs);
    ``none`` or a single CPU: no pinning (None)."""
    if mode == "none" or not hasattr(os, "sched_getaffinity"):
        return None
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        return None
    return Placement(client=(cpus[0],), brokers=tuple(cpus[1:]))


def pin_this_process(cpus: tuple[int, ...]) -> None:
    """Every thread of this process onto ``cpus`` (sched_setaffinity(0) is per thread)."""
    try:
        tids = [int(t) for t in os.listdir(f"/proc/{os.getpid()}/task")]
    except OSError:
        tids = [0]
    for tid in tids:
        # A thread may have exited since listdir.
        with contextlib.suppress(OSError):
            os.sched_setaffinity(tid, cpus)


def pin_process(pid: int, cpus: tuple[int, ...]) -> None:
    """A single-threaded child (the delay line) onto ``cpus``, after it started elsewhere."""
    with contextlib.suppress(OSError):  # it exited: nothing to place
        os.sched_setaffinity(pid, cpus)


@contextlib.contextmanager
def children_on(placement: Placement | None) -> Iterator[None]:
    """Processes started inside the block run on the broker CPUs; afterwards this process is
    (back) on the client CPUs."""
    if placement is None:
        yield
        return
    os.sched_setaffinity(0, placement.brokers)
    try:
        yield
    finally:
        pin_this_process(placement.client)
