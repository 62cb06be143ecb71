"""The roles check of a hosts file (harness/hosts.py ``check_roles``): a layout that cannot
form the cluster asked for is one line naming the file. Pure logic."""

from __future__ import annotations

from pathlib import Path

import pytest

from brokers.core.errors import UserError
from harness.hosts import Host, HostsFile, check_roles


def _layout(*roles: list[str]) -> HostsFile:
    return HostsFile(Path("hosts.yaml"), tuple(
        Host(f"h{i}", f"10.0.0.{i}", "u", None, 22, tuple(r)) for i, r in enumerate(roles)),
        Path("/p"), ".venv/bin/python", None)


@pytest.mark.parametrize(("roles", "zookeeper", "expected"), [
    ([["client"]], False, "no host has the broker role"),
    ([["broker"], ["client"]], True, "no host has the zookeeper role, which the zk twin needs"),
    ([["broker", "zookeeper"], ["zookeeper"], ["client"]], True,
     "2 hosts have the zookeeper role; a ZooKeeper ensemble needs an odd number"),
    ([["broker", "zookeeper"]], True, "no host has the client role"),
])
def test_roles_that_cannot_form_a_cluster_are_one_line(roles: list[list[str]], zookeeper: bool,
                                                       expected: str) -> None:
    with pytest.raises(UserError) as info:
        check_roles(_layout(*roles), zookeeper=zookeeper)
    assert str(info.value).startswith("hosts.yaml: ") and expected in str(info.value)


def test_roles_that_form_a_cluster_pass() -> None:
    check_roles(_layout(["broker", "zookeeper"], ["broker"], ["client"]), zookeeper=True)
    # dsbs needs no zookeeper host; an external cluster (--bootstrap) no broker host.
    check_roles(_layout(["broker"], ["client"]), zookeeper=False)
    check_roles(_layout(["client"]), zookeeper=False, brokers=False)
