"""The open-loop schedule (workloads.schedule) driven by a fake clock and a fake server.

The simulated sender mirrors Producer.run's open-loop path: take the next intended time, wait
until it (or send at once when late), keep at most ``window`` requests in flight, book each
acknowledgement at its arrival. The fake server answers after ``rtt`` and holds every answer
that would fall inside a stall until the stall ends.
"""

from __future__ import annotations

import itertools
from collections import deque
from typing import Any, Literal

import pytest

from brokers.core.errors import UserError
from workloads.schedule import OpenLoopSchedule, ScheduleConfig


def simulate(
    rate: float,
    duration: float,
    *,
    window: int = 10,
    batch: int = 1,
    rtt: float = 0.001,
    stall: tuple[float, float] | None = None,
    send_cost: float = 0.0,
    arrivals: Literal["uniform", "poisson"] = "uniform",
) -> tuple[OpenLoopSchedule, float]:
    sched = OpenLoopSchedule(ScheduleConfig(rate=rate, arrivals=arrivals, seed=7), start=0.0)

    def answered(sent: float) -> float:
        t = sent + rtt
        if stall is not None and stall[0] <= t < stall[1]:
            t = stall[1]
        return t

    now = 0.0
    inflight: deque[tuple[float, float, float, int]] = deque()
    last_ack = 0.0
    while True:
        due = sched.next_due(batch)
        if due >= duration:
            break
        now = max(now, due)
        # The server is FIFO: no answer overtakes an earlier one.
        ack = max(answered(now), last_ack)
        last_ack = ack
        sched.on_send(due, now, batch)
        inflight.append((due, now, ack, batch))
        now += send_cost  # the client's own CPU per request
        if len(inflight) >= window:
            t0 = now
            while len(inflight) >= window:
                d, s, a, n = inflight.popleft()
                now = max(now, a)
                sched.on_ack(d, s, a, n)
            sched.waited(now - t0)
    report = sched.report(now)
    while inflight:
        d, s, a, n = inflight.popleft()
        sched.on_ack(d, s, a, n)
    return sched, report.behind


def count_at_least(rec, value_us: int) -> int:
    h = rec.histogram
    return sum(
        item.count_at_value_iterated_to
        for item in h.get_recorded_iterator()
        if item.value_iterated_to >= value_us
    )


def test_uniform_intended_times_are_evenly_spaced() -> None:
    sched = OpenLoopSchedule(ScheduleConfig(rate=1000), start=5.0)
    dues = [sched.next_due(20) for _ in range(4)]
    assert dues == pytest.approx([5.0, 5.02, 5.04, 5.06])
    assert sched.due_by(5.0399) == 40


def test_poisson_gaps_average_the_rate_and_repeat_with_the_seed() -> None:
    def dues(seed: int) -> list[float]:
        sched = OpenLoopSchedule(ScheduleConfig(rate=1000, arrivals="poisson", seed=seed), 0.0)
        return [sched.next_due(10) for _ in range(5001)]

    a = dues(1)
    assert a == dues(1)
    assert a != dues(2)
    # 50,000 records at 1000/s: 50 s, within a few standard deviations (sqrt(50000)/1000).
    assert a[-1] == pytest.approx(50.0, abs=1.5)
    gaps = [y - x for x, y in itertools.pairwise(a)]
    assert min(gaps) < 0.005 < 0.015 < max(gaps)  # not evenly spaced


def test_a_steady_server_shows_its_round_trip_and_no_send_delay() -> None:
    sched, behind = simulate(rate=1000, duration=2.0)
    assert not behind
    assert sched.latency_intended.count == 2000
    assert sched.latency_intended.percentile(100) == pytest.approx(1000, abs=2)
    assert sched.send_delay.percentile(100) <= 1  # 0 is recorded at the histogram's 1 µs
    assert sched.window_wait_s == 0


def test_a_100ms_stall_shows_in_every_record_scheduled_during_it() -> None:
    """Coordinated omission corrected: timed from the intended send, each of the ~100 records
    due during a 100 ms stall carries the rest of the stall (100 ms for the first down to ~0
    for the last), not just the handful of requests that were in flight when it began."""
    sched, behind = simulate(rate=1000, duration=2.0, window=10, stall=(1.0, 1.1))
    intended, actual = sched.latency_intended, sched.latency_actual
    assert intended.count == actual.count == 2000
    # Every record due in [1.0, 1.09) waited >= 10 ms (90 records), plus the few due while
    # the backlog drained through the window afterwards (10 per 1 ms round trip).
    assert 90 <= count_at_least(intended, 10_000) <= 110
    # ... and those due in [1.0, 1.05) >= 50 ms: about half of the stall's records.
    assert 50 <= count_at_least(intended, 50_000) <= 60
    # The first record hit by the stall (sent at 0.999 s) waited it all.
    assert intended.histogram.get_max_value() == pytest.approx(101_000, rel=0.02)
    # Timed from the actual send, only the window in flight when the stall began sees it.
    assert count_at_least(actual, 10_000) <= 10
    # The records the sender could not send on time show as send delay (the window was full).
    assert count_at_least(sched.send_delay, 10_000) >= 80
    assert sched.window_wait_s == pytest.approx(0.1, abs=0.01)
    # The percentiles an operator reads: p99 of 2,000 records covers the stall only when
    # corrected.
    assert intended.percentile(99) > 70_000
    assert actual.percentile(99) < 2_000
    # The client caught up after the stall: it kept its schedule overall.
    assert not behind


def test_a_client_slower_than_its_schedule_falls_behind() -> None:
    # 2 ms of client CPU per request against a 1 ms schedule: the lag grows to ~1 s in 2 s.
    sched, behind = simulate(rate=1000, duration=2.0, send_cost=0.002)
    assert behind
    assert sched.send_delay.percentile(100) > 500_000
    assert sched.window_wait_s == 0  # the server was never the reason


def test_a_server_slower_than_the_schedule_makes_the_session_behind() -> None:
    # Window 1 and a 5 ms round trip cap the sender at 200 requests/s against 1000 due.
    sched, behind = simulate(rate=1000, duration=1.0, window=1, rtt=0.005)
    assert behind
    assert sched.window_wait_s > 0.9
    report = sched.report(5.0)
    assert report.achieved_rate < report.rate


def test_bad_schedules_are_user_errors() -> None:
    bad: list[dict[str, Any]] = [{"rate": 0}, {"rate": -5}, {"rate": 10, "arrivals": "bursty"}]
    for kw in bad:
        with pytest.raises(UserError):
            ScheduleConfig(**kw)


def test_the_warm_up_is_sent_but_not_measured() -> None:
    sched = OpenLoopSchedule(ScheduleConfig(rate=100, warmup_s=1.0), start=0.0)
    for _ in range(300):  # 3 s at 100 records/s, one record per request
        due = sched.next_due(1)
        sched.on_send(due, due, 1)
        sched.on_ack(due, due, due + 0.5 if due < 1.0 else due + 0.002, 1)
    report = sched.report(3.0)
    assert (report.sent, report.sent_measured, report.acked_measured) == (300, 200, 200)
    # The slow warm-up acknowledgements are not in the latency.
    assert sched.latency_intended.count == 200
    assert sched.latency_intended.percentile(100) == pytest.approx(2_000, abs=2)
    assert report.elapsed_s == 2.0 and report.achieved_rate == pytest.approx(100)
