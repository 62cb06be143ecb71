"""Test networks made at the same moment get different /24s (harness/cluster/netns.py): make
test's two workers start namespace clusters at once, and Linux lets two bridges hold the same
address, so without the machine-wide lock both routed one /24 and neither cluster's brokers
reached their ZooKeeper."""

from __future__ import annotations

import threading

import pytest

from harness.cluster import netns

pytestmark = [pytest.mark.integration]


def test_networks_created_at_once_get_different_subnets():
    if (reason := netns.available()) is not None:
        pytest.skip(reason)
    start = threading.Barrier(4)
    made: list[netns.NetnsNetwork] = []
    errors: list[BaseException] = []

    def create() -> None:
        network = netns.NetnsNetwork()
        start.wait()
        try:
            made.append(network.create(1))
        except BaseException as exc:  # reported below, in the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=create) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    try:
        assert not errors, errors
        gateways = [n.gateway for n in made]
        assert len(gateways) == 4 and len(set(gateways)) == 4, gateways
    finally:
        for n in made:
            n.destroy()
