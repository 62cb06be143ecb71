"""The delay line on real network namespaces (harness/netdelay): round trips between hosts
take at least the time asked for, on the root-namespace path and between two namespaces; the
line counts what it held; a change of rtt is in force when set_rtt returns; stopping it leaves
traffic flowing undelayed; every namespace, rule and process goes with the network."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harness.bench.perf_delay import _ECHO, PORT, _ping_from
from harness.cluster import netns
from harness.cluster.processes import ManagedProcess, pid_alive
from harness.netdelay import control

pytestmark = [pytest.mark.integration]


@pytest.fixture
def network(tmp_path: Path):
    for reason in (netns.available(), control.available()):
        if reason is not None:
            pytest.skip(reason)
    net = netns.NetnsNetwork().create(2)
    server = ManagedProcess(["ip", "netns", "exec", net.hosts[0].namespace, sys.executable,
                             "-c", _ECHO, net.hosts[0].address, str(PORT)],
                            name="echo server", log_path=tmp_path / "echo.log")
    try:
        server.start().wait_for_line("listening", 30)
        yield net
    finally:
        server.stop()
        net.destroy()


def test_round_trips_pay_the_time_asked_for_and_the_line_counts_them(network, tmp_path):
    target = network.hosts[0].address
    peer = network.hosts[1].namespace
    delay = control.NetworkDelay(network, tmp_path / "line").start(0.0)
    try:
        pid = delay.pid
        before = delay.stats()
        delay.set_rtt(8.0)
        assert delay.stats().generation == 2  # in force when set_rtt returned
        root = _ping_from(None, target, 20)
        between = _ping_from(peer, target, 20)
        # Lower bounds only: how much later than asked is the line's benchmark's business.
        assert min(root) >= 0.008 and min(between) >= 0.008, (min(root), min(between))
        change = control.change(before, delay.stats())
        # At least every request into the first namespace and every reply into the second.
        assert change.packets >= 60 and change.bypassed == 0
        assert change.gateway_held_ms is not None and change.gateway_held_ms >= 8.0
        assert change.peer_held_ms is not None and change.peer_held_ms >= 4.0
        delay.set_rtt(0.0)
        assert max(_ping_from(None, target, 20)) < 1.0  # no longer 8 ms (generous: loaded VM)
    finally:
        delay.stop()
    assert not pid_alive(pid)
    # Unbound queues let packets through (--queue-bypass): the network still works.
    assert len(_ping_from(peer, target, 5)) == 5


def test_namespaces_rules_and_line_go_with_the_network(tmp_path):
    for reason in (netns.available(), control.available()):
        if reason is not None:
            pytest.skip(reason)
    net = netns.NetnsNetwork().create(1)
    names = [h.namespace for h in net.hosts]
    delay = control.NetworkDelay(net, tmp_path).start(1.0)
    pid = delay.pid
    delay.stop()
    net.destroy()
    assert not pid_alive(pid)
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert not any(n in listed for n in names)


def test_a_round_trip_out_of_range_is_one_line() -> None:
    from harness.cluster.spec import ClusterSpec
    from twinbench_common.errors import UserError

    with pytest.raises(UserError, match="between 0 and 1000 ms"):
        ClusterSpec(arch="dsbs", network="netns", rtt_ms=5000)
    with pytest.raises(UserError, match="needs --network netns"):
        ClusterSpec(arch="dsbs", rtt_ms=1)
