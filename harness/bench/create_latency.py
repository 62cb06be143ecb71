"""How long a CreateTopics takes, as a client sees it (a benchmark).

``python -m harness.bench.create_latency [--arch dsbs|zk] [--preset lan|local] [--topics N]
[--brokers N] [--partitions N]`` starts a cluster, sends N CreateTopics requests (one topic
each) round robin to the brokers over persistent connections, and prints latency percentiles.
``create_topics`` is the creation path the metadata scenarios' topic storm runs too
(harness/studies/metadata/session.py), there with one request in flight per broker at once.
Where the architecture has a topic arbiter (``Architecture.arbiter`` in
harness/architectures/entry.py; DSBS: the top rendezvous rank of the name over the brokers,
``brokers/dsbs_broker/gossip/creation.py``), each request is also classed by whether the broker it
reached is the arbiter: a non-arbiter forwards the creation over gossip, so its requests pay
one more round trip.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from brokers.core.errors import KafkaError, RequestTimedOut, UserError
from brokers.core.protocol.messages.create_topics import (
    CreatableTopic,
    CreateTopicsRequest,
    CreateTopicsResponse,
)
from harness import architectures
from harness.architectures.options import split_assignments
from harness.cluster.running import ProcessCluster
from harness.cluster.spec import ClusterSpec
from workloads.cluster import CREATE_TOPICS, raise_for_code
from workloads.connection import BrokerConnection
from workloads.connection import run as run_async


@dataclass(frozen=True)
class Created:
    name: str
    # Index of the connection (broker) the request went to.
    via: int
    # Round trip of the CreateTopics request, milliseconds.
    ms: float
    # Answered REQUEST_TIMED_OUT (only when the caller accepts it): the broker stopped waiting
    # for the new partitions' leaders; the creation itself goes on, as in Kafka.
    timed_out: bool = False


async def create_one(conn: BrokerConnection, name: str, partitions: int,
                     timeout_ms: int = 30_000, *, timed_out_ok: bool = False
                     ) -> tuple[float, bool]:
    """One CreateTopics for one topic: (round trip in ms, answered REQUEST_TIMED_OUT). An
    error code is raised as its KafkaError (a limit: POLICY_VIOLATION, INVALID_PARTITIONS),
    REQUEST_TIMED_OUT too unless ``timed_out_ok``."""
    version = conn.pick_version(CREATE_TOPICS, 2, 4)
    req = CreateTopicsRequest(topics=[CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=1)], timeout_ms=timeout_ms)
    t0 = time.perf_counter()
    body = await conn.call(CREATE_TOPICS, version, req.encode(version))
    ms = (time.perf_counter() - t0) * 1000
    timed_out = False
    for t in CreateTopicsResponse.decode(body, version).topics:
        if timed_out_ok and t.error_code == RequestTimedOut.code:
            timed_out = True
            continue
        raise_for_code(t.error_code, f"CreateTopics {t.name}")
    return ms, timed_out


async def create_topics(conns: Sequence[BrokerConnection], names: Sequence[str],
                        partitions: int, *, concurrent: bool, timeout_ms: int = 30_000,
                        timed_out_ok: bool = False) -> list[Created]:
    """Topic i goes to ``conns[i % len(conns)]``. One at a time in order (the latency of a
    lone creation), or ``concurrent``: every connection works through its share at once, one
    request in flight each (a storm from one admin client per broker). ``timeout_ms`` is each
    request's (how long a broker may wait for the new partitions' leaders); ``timed_out_ok``
    takes its REQUEST_TIMED_OUT as an answer (``Created.timed_out``) instead of an error."""
    async def one(i: int, k: int) -> Created:
        ms, late = await create_one(conns[k], names[i], partitions, timeout_ms,
                                    timed_out_ok=timed_out_ok)
        return Created(names[i], k, ms, late)

    async def share(k: int) -> list[Created]:
        return [await one(i, k) for i in range(k, len(names), len(conns))]

    if not concurrent:
        return [await one(i, i % len(conns)) for i in range(len(names))]
    done = await asyncio.gather(*(share(k) for k in range(min(len(conns), len(names)))))
    return [c for part in done for c in part]


def _percentiles(ms: list[float]) -> str:
    if not ms:
        return "n=0"
    q = statistics.quantiles(ms, n=100, method="inclusive") if len(ms) > 1 else ms * 99
    return f"n={len(ms)} p50={q[49]:.2f}ms p90={q[89]:.2f}ms p99={q[98]:.2f}ms"


def measure(spec: ClusterSpec, topics: int, partitions: int) -> dict[str, list[float]]:
    """Latencies in ms, keyed "all", and with a topic arbiter "arbiter" / "forwarded"."""
    out: dict[str, list[float]] = {"all": [], "arbiter": [], "forwarded": []}
    arbiter = spec.architecture.arbiter
    with ProcessCluster(spec) as cluster:
        ids = [b.node_id for b in cluster.brokers]

        async def main() -> list[Created]:
            conns = [await BrokerConnection.open(b.host, b.port) for b in cluster.brokers]
            try:
                prefix = f"cl-{uuid.uuid4().hex[:6]}"
                names = [f"{prefix}-{i}" for i in range(topics)]
                return await create_topics(conns, names, partitions, concurrent=False)
            finally:
                for c in conns:
                    c.close()

        for c in run_async(main):
            out["all"].append(c.ms)
            if arbiter is not None:
                kind = "arbiter" if arbiter(c.name, ids) == ids[c.via] else "forwarded"
                out[kind].append(c.ms)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.bench.create_latency",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--arch", choices=architectures.under_test(), default="dsbs")
    parser.add_argument("--option", action="append", default=[], metavar="NAME.KEY=VALUE",
                        help="an option of the architecture or a service (e.g. "
                        "dsbs.gossip_preset=local)")
    parser.add_argument("--topics", type=int, default=300)
    parser.add_argument("--brokers", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=3)
    args = parser.parse_args(argv)
    if args.topics < 1:
        raise UserError("--topics must be at least 1")
    spec = ClusterSpec(args.arch, brokers=args.brokers,
                       options=split_assignments(args.option))
    got = measure(spec, args.topics, args.partitions)
    head = " ".join([f"arch={args.arch} brokers={args.brokers}",
                     *(f"{k}={v}" for k, v in spec.arch_options().as_manifest().items())])
    print(f"{head} all: {_percentiles(got['all'])}")
    if spec.architecture.arbiter is not None:
        print(f"{head} at the arbiter: {_percentiles(got['arbiter'])}")
        print(f"{head} forwarded: {_percentiles(got['forwarded'])}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (UserError, KafkaError) as exc:
        print(f"create_latency: error: {exc}", file=sys.stderr)
        sys.exit(2)
