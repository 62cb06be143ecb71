"""Clusters for the contract suite: the same tests run against every architecture.

"single" is the one-node core broker (`twinbench broker`); every architecture of the harness's
registry (harness/architectures.py: zk, dsbs) is a three-broker cluster started by the
harness's own launcher (the code behind `twinbench cluster`), so the contract covers exactly
what users run, and a new architecture is covered as soon as it has its entry. Every broker is
a real process on loopback. "single" is not a registry entry: it is one process with no
cluster to launch, no services and no place in the comparison.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from harness import architectures
from harness.cluster import ClusterSpec, ProcessCluster
from tests.support.brokers import RunningBroker, start_single_broker
from tests.support.security import SecurityFiles

SINGLE = "single"
ARCHITECTURES = [SINGLE, *architectures.names()]
# Architectures whose coordinator replicates (implements brokers.core.isr_changes.IsrChanges):
# the contract tests marked ``replicated`` run on these; the others refuse a factor above 1.
REPLICATING = ("zk", "dsbs")


@dataclass
class SingleBrokerCluster:
    """The one-broker cluster, shaped like harness.cluster.ProcessCluster for the tests."""

    brokers: list[RunningBroker]
    arch: str = SINGLE

    @property
    def bootstrap(self) -> str:
        return ",".join(b.bootstrap for b in self.brokers)

    def stop(self) -> None:
        for b in self.brokers:
            b.process.stop()


def start_cluster(
    arch: str, workdir: Path, brokers: int = 3, extra: Sequence[str] = (), flush: str = "os",
    num_partitions: int = 1, auto_create_topics: bool = True,
    security: SecurityFiles | None = None, protocol: str = "PLAINTEXT",
    zk_session_timeout_ms: int | None = None,
) -> SingleBrokerCluster | ProcessCluster:
    """``extra``: more command-line options for every broker (limits, for instance);
    ``num_partitions`` and ``auto_create_topics`` go the way `twinbench cluster` sends them;
    ``protocol`` is every broker's listener protocol, with ``security``'s files;
    ``zk_session_timeout_ms`` is the zk brokers' ZooKeeper session (others ignore it)."""
    if arch == SINGLE:
        extra = [*extra, "--num-partitions", str(num_partitions),
                 "--auto-create-topics" if auto_create_topics else "--no-auto-create-topics"]
        if security is not None:
            extra += security.broker_args(protocol)
        return SingleBrokerCluster([start_single_broker(workdir / "broker0", extra=extra,
                                                        flush=flush, protocol=protocol)])
    secured: dict[str, Any] = {} if security is None else security.spec_fields(protocol)
    return start_spec(ClusterSpec(arch, brokers=brokers, data_dir=workdir,
                                  broker_args=tuple(extra), flush=flush,
                                  num_partitions=num_partitions,
                                  auto_create_topics=auto_create_topics,
                                  zk_session_timeout_ms=zk_session_timeout_ms, **secured))


def start_spec(spec: ClusterSpec) -> ProcessCluster:
    """Start the cluster ``spec`` describes; the test is skipped, saying why, when it needs a
    ZooKeeper this machine cannot provide."""
    if spec.architecture.uses(architectures.ZOOKEEPER):
        from harness.zookeeper import ZooKeeperUnavailable

        try:
            return ProcessCluster(spec).start()
        except ZooKeeperUnavailable as exc:
            pytest.skip(f"no ZooKeeper on this machine: {exc}")
    return ProcessCluster(spec).start()
