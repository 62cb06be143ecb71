"""Clusters for the contract suite: the same tests run against every architecture.

"single" is the one-node core broker (`twinbench broker`); "zk" and "dsbs" are three-broker
clusters started by the harness's own launcher (the code behind `twinbench cluster`), so the
contract covers exactly what users run. Every broker is a real process on loopback.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.cluster import Cluster, ClusterSpec
from tests.support.brokers import RunningBroker, start_single_broker

ARCHITECTURES = ["single", "zk", "dsbs"]


@dataclass
class SingleBrokerCluster:
    """The one-broker cluster, shaped like harness.cluster.Cluster for the tests."""

    brokers: list[RunningBroker]
    arch: str = "single"

    @property
    def bootstrap(self) -> str:
        return ",".join(b.bootstrap for b in self.brokers)

    def stop(self) -> None:
        for b in self.brokers:
            b.process.stop()


def start_cluster(
    arch: str, workdir: Path, brokers: int = 3, extra: Sequence[str] = (), flush: str = "os",
) -> SingleBrokerCluster | Cluster:
    """``extra``: more command-line options for every broker (limits, for instance)."""
    if arch == "single":
        return SingleBrokerCluster([start_single_broker(workdir / "broker0", extra=extra,
                                                        flush=flush)])
    spec = ClusterSpec(arch, brokers=brokers, data_dir=workdir,  # type: ignore[arg-type]
                       broker_args=tuple(extra), flush=flush)
    if arch == "zk":
        from harness.zookeeper import ZooKeeperUnavailable

        try:
            return Cluster(spec).start()
        except ZooKeeperUnavailable as exc:
            pytest.skip(f"no ZooKeeper on this machine: {exc}")
    return Cluster(spec).start()
