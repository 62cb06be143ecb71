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


ZK = {"zookeeper": True}  # the zk twin's service, a quorum


@pytest.mark.parametrize(("roles", "services", "expected"), [
    ([["client"]], {}, "no host has the broker role"),
    ([["broker"], ["client"]], ZK, "no host has the zookeeper role, which the architecture "
                                   "needs"),
    ([["broker", "zookeeper"], ["zookeeper"], ["client"]], ZK,
     "2 hosts have the zookeeper role; a zookeeper ensemble needs an odd number"),
    ([["broker", "zookeeper"]], ZK, "no host has the client role"),
])
def test_roles_that_cannot_form_a_cluster_are_one_line(roles: list[list[str]],
                                                       services: dict[str, bool],
                                                       expected: str) -> None:
    with pytest.raises(UserError) as info:
        check_roles(_layout(*roles), services=services)
    assert str(info.value).startswith("hosts.yaml: ") and expected in str(info.value)


def test_roles_that_form_a_cluster_pass() -> None:
    check_roles(_layout(["broker", "zookeeper"], ["broker"], ["client"]), services=ZK)
    # dsbs needs no zookeeper host; an external cluster (--bootstrap) no broker host.
    check_roles(_layout(["broker"], ["client"]), services={})
    check_roles(_layout(["client"]), services={}, brokers=False)
    # A service that is no quorum takes any number of hosts.
    check_roles(_layout(["broker", "s"], ["s"], ["client"]), services={"s": False})
