"""How long a CreateTopics takes, as a client sees it (a benchmark).

``python -m harness.create_latency [--arch dsbs|zk] [--preset lan|local] [--topics N]
[--brokers N] [--partitions N]`` starts a cluster, sends N CreateTopics requests (one topic
each) round robin to the brokers over persistent connections, and prints latency percentiles.
Where the architecture has a topic arbiter (``Architecture.arbiter`` in
harness/architectures.py; DSBS: the top rendezvous rank of the name over the brokers,
``brokers/dsbs_broker/creation.py``), each request is also classed by whether the broker it
reached is the arbiter: a non-arbiter forwards the creation over gossip, so its requests pay
one more round trip.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid

from brokers.core.errors import UserError
from brokers.core.protocol.api import ApiKey
from brokers.core.protocol.messages.create_topics import CreatableTopic, CreateTopicsRequest
from harness import architectures
from harness.cluster import ClusterSpec, ProcessCluster
from harness.kafka_probe import KafkaProbe


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
        probes = [KafkaProbe(b.host, b.port) for b in cluster.brokers]
        try:
            prefix = f"cl-{uuid.uuid4().hex[:6]}"
            for i in range(topics):
                k = i % len(probes)
                name = f"{prefix}-{i}"
                req = CreateTopicsRequest(topics=[CreatableTopic(
                    name=name, num_partitions=partitions, replication_factor=1)],
                    timeout_ms=30_000)
                t0 = time.perf_counter()
                res = probes[k].request(ApiKey.CREATE_TOPICS, 4, req)
                ms = (time.perf_counter() - t0) * 1000
                # A CreateTopics request is answered by a CreateTopicsResponse.
                code = res.topics[0].error_code  # type: ignore[attr-defined]
                if code != 0:
                    raise UserError(f"CreateTopics {name} answered error {code}")
                out["all"].append(ms)
                if arbiter is not None:
                    out["arbiter" if arbiter(name, ids) == ids[k] else "forwarded"].append(ms)
        finally:
            for p in probes:
                p.close()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.create_latency",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--arch", choices=architectures.names(),
                        default=architectures.DSBS.name)
    parser.add_argument("--preset", choices=("local", "lan"), default="lan")
    parser.add_argument("--topics", type=int, default=300)
    parser.add_argument("--brokers", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=3)
    args = parser.parse_args(argv)
    if args.topics < 1:
        raise UserError("--topics must be at least 1")
    spec = ClusterSpec(args.arch, brokers=args.brokers, gossip_preset=args.preset)
    got = measure(spec, args.topics, args.partitions)
    head = f"arch={args.arch} brokers={args.brokers}"
    if "gossip_preset" in spec.architecture.options:
        head += f" preset={args.preset}"
    print(f"{head} all: {_percentiles(got['all'])}")
    if spec.architecture.arbiter is not None:
        print(f"{head} at the arbiter: {_percentiles(got['arbiter'])}")
        print(f"{head} forwarded: {_percentiles(got['forwarded'])}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except UserError as exc:
        print(f"create_latency: error: {exc}", file=sys.stderr)
        sys.exit(2)
