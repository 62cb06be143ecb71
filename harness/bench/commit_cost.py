"""What one offset commit costs each broker, and how long it takes (a benchmark).

``python -m harness.bench.commit_cost [--arch dsbs] [--brokers 3] [--commits 3000]
[--option NAME.KEY=VALUE ...] [--sweep NAME.KEY=V1,V2,...] [--rounds 2]`` starts a cluster, finds
a group's coordinator, and has one client commit offsets to it one at a time (after a warm-up
of a tenth as many): each commit's round trip, and the CPU time (user + system, /proc) each
broker process spent per commit. ``--sweep`` runs one cluster per value of one option, the
values alternating round by round (A B, B A, ...), so the variants are compared side by side in
one run: ``--sweep dsbs.offset_commit_acks=0,1`` is the paper's lazy offset replication beside
commits held by a successor first (docs/findings.md, F20). The brokers run on this machine (the
CPU is read from /proc).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from brokers.core.errors import KafkaError, TopicAlreadyExists, UserError
from brokers.core.protocol.api import ApiKey
from brokers.core.protocol.messages.create_topics import (
    CreatableTopic,
    CreateTopicsRequest,
    CreateTopicsResponse,
)
from brokers.core.protocol.messages.find_coordinator import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)
from brokers.core.protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
)
from harness import architectures
from harness.architectures.options import split_assignments
from harness.cluster.kafka_probe import KafkaProbe
from harness.cluster.running import ProcessCluster
from harness.cluster.spec import ClusterSpec
from workloads.cluster import raise_for_code

GROUP = "commit-cost"
TOPIC = "commit-cost"


@dataclass(frozen=True)
class Cost:
    # Round trip of each commit, µs, in order.
    round_trip_us: list[float]
    # CPU µs per commit of the group's coordinator, and of each other broker (node id order).
    coordinator_cpu_us: float
    others_cpu_us: list[float]


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a local process so far (/proc/<pid>/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _commit(probe: KafkaProbe, offset: int) -> None:
    got = cast(OffsetCommitResponse, probe.request(ApiKey.OFFSET_COMMIT, 7, OffsetCommitRequest(
        group_id=GROUP, generation_id_or_member_epoch=-1, member_id="",
        topics=[OffsetCommitRequestTopic(name=TOPIC, partitions=[
            OffsetCommitRequestPartition(partition_index=0, committed_offset=offset)])])))
    raise_for_code(got.topics[0].partitions[0].error_code, "OffsetCommit")


def measure(spec: ClusterSpec, commits: int) -> Cost:
    with ProcessCluster(spec) as cluster:
        first = cluster.brokers[0]
        with KafkaProbe(first.host, first.port) as probe:
            made = cast(CreateTopicsResponse, probe.request(
                ApiKey.CREATE_TOPICS, 4, CreateTopicsRequest(topics=[
                    CreatableTopic(name=TOPIC, num_partitions=1, replication_factor=1)],
                    timeout_ms=15_000)))
            if made.topics[0].error_code != TopicAlreadyExists.code:
                raise_for_code(made.topics[0].error_code, "CreateTopics")
            found = cast(FindCoordinatorResponse, probe.request(
                ApiKey.FIND_COORDINATOR, 2, FindCoordinatorRequest(key=GROUP)))
        raise_for_code(found.error_code, "FindCoordinator")
        coordinator = next(b for b in cluster.brokers if b.node_id == found.node_id)
        others = [b for b in cluster.brokers if b is not coordinator]
        with KafkaProbe(coordinator.host, coordinator.port) as probe:
            for i in range(max(1, commits // 10)):  # warm-up: pulls, caches, the JIT-less rest
                _commit(probe, i)
            before = {b.node_id: cpu_seconds(b.process.pid) for b in cluster.brokers}
            trips = []
            for i in range(commits):
                t0 = time.perf_counter()
                _commit(probe, i)
                trips.append((time.perf_counter() - t0) * 1e6)
            after = {b.node_id: cpu_seconds(b.process.pid) for b in cluster.brokers}
    per = {n: (after[n] - before[n]) / commits * 1e6 for n in before}
    return Cost(trips, per[coordinator.node_id], [per[b.node_id] for b in others])


def _line(label: str, c: Cost) -> str:
    q = statistics.quantiles(c.round_trip_us, n=100, method="inclusive")
    others = ", ".join(f"{v:.0f}" for v in c.others_cpu_us)
    return (f"{label}: round trip p50 {q[49]:.0f} µs p90 {q[89]:.0f} µs p99 {q[98]:.0f} µs; "
            f"CPU per commit: coordinator {c.coordinator_cpu_us:.0f} µs, others {others} µs")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.bench.commit_cost",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--arch", choices=architectures.under_test(), default="dsbs")
    parser.add_argument("--brokers", type=int, default=3)
    parser.add_argument("--commits", type=int, default=3000)
    parser.add_argument("--option", action="append", default=[], metavar="NAME.KEY=VALUE",
                        help="an option of the architecture or a service")
    parser.add_argument("--sweep", metavar="NAME.KEY=V1,V2,...",
                        help="one cluster per value of this option, alternating round by round")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    if args.commits < 10:
        raise UserError("--commits must be at least 10")
    if args.rounds < 1:
        raise UserError("--rounds must be at least 1")
    if args.sweep is None:
        variants = [("", list(args.option))]
    else:
        key, eq, values = args.sweep.partition("=")
        if not eq or not values:
            raise UserError(f"--sweep {args.sweep!r}: expected NAME.KEY=V1,V2,...")
        variants = [(f"{key}={v}", [*args.option, f"{key}={v}"]) for v in values.split(",")]
    specs = [(label, ClusterSpec(args.arch, brokers=args.brokers,
                                 options=split_assignments(options)))
             for label, options in variants]
    for r in range(args.rounds):
        for label, spec in specs if r % 2 == 0 else specs[::-1]:
            name = f"{args.arch} {label}".strip()
            print(_line(f"round {r + 1} {name}", measure(spec, args.commits)), flush=True)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (UserError, KafkaError) as exc:
        print(f"commit_cost: error: {exc}", file=sys.stderr)
        sys.exit(2)
