"""Clusters for the contract suite: the same tests run against every architecture.

``start_cluster(arch, ...)`` returns a ``TestCluster`` whose brokers are real processes on
loopback. "single" is the one-node core broker; "zk" and "dsbs" join as their issues land.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from tests.support.brokers import RunningBroker, start_single_broker

ARCHITECTURES = ["single"]


@dataclass
class TestCluster:
    arch: str
    brokers: list[RunningBroker]
    extra: list = field(default_factory=list)

    __test__ = False  # not a pytest test class

    @property
    def bootstrap(self) -> str:
        return ",".join(b.bootstrap for b in self.brokers)

    def stop(self) -> None:
        for b in self.brokers:
            b.process.stop()


def start_cluster(arch: str, workdir: Path) -> TestCluster:
    if arch == "single":
        return TestCluster(arch, [start_single_broker(workdir / "broker0")])
    raise ValueError(f"unknown architecture {arch!r}")
