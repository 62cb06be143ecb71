"""Ports handed to brokers lie outside the kernel's ephemeral range and are free for TCP and UDP."""

from __future__ import annotations

import socket

import pytest

from harness.cluster import machines


@pytest.mark.filesystem
def test_ports_are_distinct_below_the_ephemeral_range_and_bindable_for_udp() -> None:
    low, _ = machines._ephemeral_range()
    ports = machines.free_ports(12)
    assert len(set(ports)) == 12
    assert all(machines._LOWEST_PORT <= p < low for p in ports)
    for p in ports:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.bind((machines.LOOPBACK, p))


@pytest.mark.filesystem
def test_a_port_taken_for_udp_only_is_not_handed_out(monkeypatch: pytest.MonkeyPatch) -> None:
    # The CI failure this guards against: a DSBS broker's gossip (UDP) port was already taken.
    taken = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        taken.bind((machines.LOOPBACK, 0))
        port = taken.getsockname()[1]
        # Make the pool that one port and a second, free one.
        monkeypatch.setattr(machines, "_ephemeral_range", lambda: (port + 2000, 60999))
        monkeypatch.setattr(machines, "_LOWEST_PORT", port)
        monkeypatch.setattr(machines.random, "SystemRandom", _InOrder)
        ports = machines.free_ports(1)
        assert ports != [port]
    finally:
        taken.close()


@pytest.mark.filesystem
def test_without_room_below_the_ephemeral_range_the_kernel_chooses(
        monkeypatch: pytest.MonkeyPatch) -> None:
    kernel_low, _ = machines._ephemeral_range()
    monkeypatch.setattr(machines, "_ephemeral_range", lambda: (machines._LOWEST_PORT + 10, 60999))
    ports = machines.free_ports(3)
    # None from the (too small) pool below the range: the kernel's ephemeral ports instead.
    assert len(set(ports)) == 3 and all(p >= kernel_low for p in ports)


class _InOrder:
    """A SystemRandom whose shuffle keeps the order, so the test knows which port comes first."""

    def shuffle(self, items: list[int]) -> None:
        return None
