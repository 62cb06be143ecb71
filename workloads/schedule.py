"""Open-loop send schedule: when each Produce request is due, and what lateness cost (sans-IO).

A closed-loop producer sends its next request when the previous one is answered, so a server
that stalls for 100 ms delays the requests it would have sent meanwhile and they are then timed
from their (late) actual send: the stall shows up as one slow sample (coordinated omission). An
open-loop producer has a schedule fixed in advance by the target rate; every request is timed
from its *intended* send time, so each request that fell due during the stall carries the part
of the stall it waited through (100 ms for the first, less for the later ones, as HdrHistogram's
expected-interval correction would add).

The schedule counts records, not requests: requests carry ``n`` records each, and a request is
due when its first record is (uniform: record ``k`` at ``k / rate``; poisson: records arrive as a
Poisson process of intensity ``rate``, so the gap before a request of ``n`` records is a sum of
``n`` exponential gaps, a gamma variate, drawn from a seeded RNG so runs are repeatable).

This object owns no clock and no socket: the caller passes every time (seconds, any monotonic
origin; the producer passes ``time.perf_counter()``) and does the waiting. It records, per
record (a request of ``n`` records counts ``n`` times, like the end-to-end histogram):

* ``send_delay``: actual send minus intended send (how far behind schedule the client ran),
* ``latency_intended``: acknowledgement minus intended send (what an operator's request sees),
* ``latency_actual``: acknowledgement minus actual send (what a closed-loop client reports).

The verdict :attr:`ScheduleReport.behind` says the client did not keep its schedule: when the
sending ended, its first unsent record had been due for more than ``tolerance_s``. A session so
marked must not report its achieved rate as the target's.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Literal

from brokers.core.errors import UserError
from workloads.latency import LatencyRecorder

__all__ = ["ARRIVALS", "OpenLoopSchedule", "ScheduleConfig", "ScheduleReport"]

ARRIVALS = ("uniform", "poisson")


@dataclass(frozen=True)
class ScheduleConfig:
    # Records per second this schedule emits (one producer's share of the workload's rate).
    rate: float
    # "uniform": evenly spaced records; "poisson": exponential gaps (memoryless arrivals).
    arrivals: Literal["uniform", "poisson"] = "uniform"
    # Seed of the poisson gaps (the driver derives one per producer so runs repeat).
    seed: int = 0
    # Lateness (s) still outstanding at the end beyond which the session fell behind schedule.
    tolerance_s: float = 0.1
    # Requests due in the first warmup_s seconds are sent but not measured (latency, rate).
    warmup_s: float = 0.0

    def __post_init__(self) -> None:
        if not self.rate > 0:
            raise UserError("rate must be positive")
        if self.arrivals not in ARRIVALS:
            raise UserError(f"arrivals must be one of {', '.join(ARRIVALS)}")
        if self.tolerance_s < 0 or self.warmup_s < 0:
            raise UserError("tolerance_s and warmup_s must be >= 0")


@dataclass(frozen=True)
class ScheduleReport:
    rate: float
    # Records that had fallen due / were sent / were acknowledged by the end of sending (all,
    # warm-up included; requests still in flight then are answered later).
    due: int
    sent: int
    acked: int
    # Records due after the warm-up that were sent / acknowledged: what rates are made of.
    sent_measured: int
    acked_measured: int
    # Seconds from the end of the warm-up to the end of the report.
    elapsed_s: float
    # Lateness (s) of the schedule at the end: the oldest unsent due record's age, or the last
    # send's delay when everything due was sent.
    final_lag_s: float
    # Seconds the sender spent blocked on a full pipelining window (backpressure from brokers).
    window_wait_s: float
    behind: bool

    @property
    def achieved_rate(self) -> float:
        """Records sent per second of schedule after the warm-up."""
        return self.sent_measured / self.elapsed_s if self.elapsed_s > 0 else 0.0


class OpenLoopSchedule:
    """Intended send times for one producer's requests, and the latency arithmetic on them."""

    __slots__ = (
        "_gap",
        "_next",
        "_pending",
        "_rng",
        "acked",
        "acked_measured",
        "config",
        "latency_actual",
        "latency_intended",
        "measure_from",
        "scheduled",
        "send_delay",
        "sent",
        "sent_measured",
        "start",
        "window_wait_s",
    )

    def __init__(self, config: ScheduleConfig, start: float) -> None:
        self.config = config
        self.start = start
        self._gap = 1.0 / config.rate
        self._rng = random.Random(config.seed) if config.arrivals == "poisson" else None
        # Intended time of the next request's first record.
        self._next = start
        # Intended time of the request handed out by next_due and maybe not yet sent.
        self._pending = start
        self.scheduled = 0  # records handed out by next_due
        self.sent = 0
        self.acked = 0
        # Requests due before this are warm-up: sent and acknowledged, never measured.
        self.measure_from = start + config.warmup_s
        self.sent_measured = 0
        self.acked_measured = 0
        self.window_wait_s = 0.0
        self.send_delay = LatencyRecorder("send_delay")
        self.latency_intended = LatencyRecorder("produce_intended")
        self.latency_actual = LatencyRecorder("produce_actual")

    def next_due(self, records: int) -> float:
        """Intended send time of the next request, carrying the next ``records`` records."""
        due = self._pending = self._next
        rng = self._rng
        if rng is None:
            self._next = self.start + (self.scheduled + records) * self._gap
        else:
            self._next = due + rng.gammavariate(records, self._gap)
        self.scheduled += records
        return due

    def due_by(self, now: float) -> int:
        """Records whose intended time is at or before ``now`` (poisson: those handed out so
        far plus the expected count since)."""
        if now < self.start:
            return 0
        if self._rng is None:
            return int((now - self.start) * self.config.rate) + 1
        if now < self._next:
            return self.scheduled
        return self.scheduled + int((now - self._next) * self.config.rate) + 1

    def waited(self, seconds: float) -> None:
        """The sender spent ``seconds`` blocked on a full window (backpressure, not CPU)."""
        self.window_wait_s += seconds

    def on_send(self, due: float, now: float, records: int) -> None:
        self.sent += records
        if due >= self.measure_from:
            self.send_delay.record(_us(now - due), records)
            self.sent_measured += records

    def on_ack(self, due: float, sent_at: float, now: float, records: int) -> None:
        self.acked += records
        if due >= self.measure_from:
            self.latency_intended.record(_us(now - due), records)
            self.latency_actual.record(_us(now - sent_at), records)
            self.acked_measured += records

    def lag(self, now: float) -> float:
        """How late the schedule is at ``now``: the age of its first record not yet sent."""
        first_unsent = self._pending if self.sent < self.scheduled else self._next
        return max(0.0, now - first_unsent)

    def report(self, now: float) -> ScheduleReport:
        """The verdict at ``now`` (the end of the sending phase)."""
        lag = self.lag(now)
        return ScheduleReport(
            rate=self.config.rate,
            due=self.due_by(now),
            sent=self.sent,
            acked=self.acked,
            sent_measured=self.sent_measured,
            acked_measured=self.acked_measured,
            elapsed_s=now - self.measure_from,
            final_lag_s=lag,
            window_wait_s=self.window_wait_s,
            behind=lag > self.config.tolerance_s,
        )


def _us(seconds: float) -> int:
    return round(seconds * 1e6)
