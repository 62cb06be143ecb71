"""RunningDeadline: a broker paused while it waits for ZooKeeper does not give up the moment
it runs again (the nemesis pauses brokers while they start)."""

from __future__ import annotations

import asyncio

import pytest

from brokers.zk_broker import session
from brokers.zk_broker.session import RunningDeadline


class Clock:
    """time.monotonic for the module under test; asyncio.sleep advances it by ``stall``
    beyond what was asked, as a process stopped mid-sleep sees."""

    def __init__(self) -> None:
        self.now = 100.0
        self.stall = 0.0

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, delay: float) -> None:
        self.now += delay + self.stall


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    c = Clock()
    monkeypatch.setattr(session.time, "monotonic", c.monotonic)
    monkeypatch.setattr(session.asyncio, "sleep", c.sleep)
    return c


def test_a_wait_that_took_as_long_as_asked_counts(clock: Clock) -> None:
    d = RunningDeadline(1.0)
    for _ in range(10):
        asyncio.run(d.sleep(0.05))
    assert not d.passed()
    asyncio.run(d.sleep(0.6))
    assert d.passed()


def test_a_pause_inside_a_wait_is_not_counted(clock: Clock) -> None:
    d = RunningDeadline(1.0)
    clock.stall = 9.0  # stopped for 9 s in the middle of a 0.05 s sleep
    asyncio.run(d.sleep(0.05))
    assert not d.passed()
    clock.stall = 0.0
    asyncio.run(d.sleep(1.0))
    assert d.passed()


def test_a_late_wait_within_the_slack_still_counts(clock: Clock) -> None:
    d = RunningDeadline(1.0)
    clock.stall = RunningDeadline.SLACK_S / 2  # a loaded host, not a pause
    asyncio.run(d.sleep(0.6))
    assert d.passed()
