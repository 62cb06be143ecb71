"""Clusters for the contract suite: the same tests run against every architecture.

Every architecture of the harness's registry (harness/architectures: zk, dsbs, the single-node
local, and any registered in this process) is a cluster started by the harness's own launcher
(the code behind `twinbench cluster`), so the contract covers exactly what users run, and a new
architecture is covered as soon as it has its entry. A single-node architecture
(``max_brokers`` 1) runs one broker, and the tests that need several are deselected for it
(tests/contract/conftest.py). Every broker is a real process on loopback.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from harness import architectures
from harness.cluster.running import ProcessCluster
from harness.cluster.spec import ClusterSpec
from tests.support.security import SecurityFiles

# Real Kafka is a reference, not under test: its smoke is tests/integration/test_kafka_archs.py.
ARCHITECTURES = list(architectures.under_test())
# Architectures whose coordinator replicates (implements brokers.core.isr_changes.IsrChanges):
# the contract tests marked ``replicated`` run on these; the others refuse a factor above 1.
REPLICATING = tuple(a for a in ARCHITECTURES if architectures.get(a).replicates)


def single_node(arch: str) -> bool:
    """A one-broker architecture: the contract's multi_broker tests do not apply to it."""
    return architectures.get(arch).max_brokers < 2


def start_cluster(
    arch: str, workdir: Path, brokers: int = 3, extra: Sequence[str] = (), flush: str = "os",
    num_partitions: int = 1, auto_create_topics: bool = True,
    security: SecurityFiles | None = None, protocol: str = "PLAINTEXT",
    zk_session_timeout_ms: int | None = None,
) -> ProcessCluster:
    """``extra``: more command-line options for every broker (limits, for instance);
    ``num_partitions`` and ``auto_create_topics`` go the way `twinbench cluster` sends them;
    ``protocol`` is every broker's listener protocol, with ``security``'s files;
    ``zk_session_timeout_ms`` is the zk brokers' ZooKeeper session (others ignore it); a
    single-node architecture gets its one broker."""
    secured: dict[str, Any] = {} if security is None else security.spec_fields(protocol)
    options = ({} if zk_session_timeout_ms is None
               else {"zk": {"session_timeout_ms": zk_session_timeout_ms}})
    return start_spec(ClusterSpec(arch, brokers=min(brokers, architectures.get(arch).max_brokers),
                                  data_dir=workdir, broker_args=tuple(extra), flush=flush,
                                  num_partitions=num_partitions,
                                  auto_create_topics=auto_create_topics, options=options,
                                  **secured))


def start_spec(spec: ClusterSpec) -> ProcessCluster:
    """Start the cluster ``spec`` describes; the test is skipped, saying why, when it needs a
    ZooKeeper this machine cannot provide."""
    if spec.architecture.uses("zookeeper"):
        from harness.services.zookeeper import ZooKeeperUnavailable

        try:
            return ProcessCluster(spec).start()
        except ZooKeeperUnavailable as exc:
            pytest.skip(f"no ZooKeeper on this machine: {exc}")
    return ProcessCluster(spec).start()
