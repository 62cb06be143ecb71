"""The delay line's state machine (sans-IO): packets in with the time they were seen, releases
out when they are due.

Every packet of one queue waits the same time, so a queue is a FIFO and what is due is always a
prefix of it: ``release`` returns, per queue, the last id due, which one batch verdict accepts
with everything before it (nfqueue.py). Changing a queue's delay applies to packets seen from
then on; packets already waiting keep the time they were promised, so the FIFO stays ordered
when the delay grows, and when it shrinks they leave no earlier than the ones behind them.

The line also keeps what the harness reports per session (``QueueStats``): packets held, how
long they were held and how late they left against their due time (the wake-up latency of the
process that runs the line), and packets the kernel let through undelayed (gaps in the ids:
the queue was full or the reader's socket buffer was, and the queue fails open).
"""

from __future__ import annotations

from collections import deque
from dataclasses import asdict, dataclass


@dataclass
class QueueStats:
    # Packets held and released.
    packets: int = 0
    # Sum over them of release time minus the time they were seen (seconds).
    held_s: float = 0.0
    # Sum and maximum of release time minus due time (seconds): the line's own lateness.
    late_s: float = 0.0
    max_late_s: float = 0.0
    # Packets the kernel passed without queueing them here (gaps in the packet ids).
    bypassed: int = 0

    def as_json(self) -> dict[str, float | int]:
        return asdict(self)


class _Queue:
    def __init__(self, delay_s: float) -> None:
        self.delay_s = delay_s
        # (due, seen, packet id), in arrival order.
        self.waiting: deque[tuple[float, float, int]] = deque()
        self.last_due = float("-inf")
        self.last_id: int | None = None
        self.stats = QueueStats()


class DelayLine:
    """Queues by number, each with its own delay (seconds)."""

    def __init__(self, delays_s: dict[int, float]) -> None:
        self._queues: dict[int, _Queue] = {}
        self.set_delays(delays_s)

    def set_delays(self, delays_s: dict[int, float]) -> None:
        """New delays for the queues named (a queue not seen before is added)."""
        for queue, delay in delays_s.items():
            if not delay >= 0:
                raise ValueError(f"queue {queue}: delay must be >= 0 s, got {delay!r}")
            if queue in self._queues:
                self._queues[queue].delay_s = delay
            else:
                self._queues[queue] = _Queue(delay)

    @property
    def queues(self) -> tuple[int, ...]:
        return tuple(self._queues)

    def delay_of(self, queue: int) -> float:
        return self._queues[queue].delay_s

    def hold(self, queue: int, packet_id: int, now: float) -> None:
        """A packet of ``queue`` seen at ``now``: due ``delay`` later (never before one seen
        earlier, so a shortened delay keeps the queue in order)."""
        q = self._queues[queue]
        if q.last_id is not None:
            gap = (packet_id - q.last_id - 1) & 0xFFFFFFFF
            # A huge gap is a packet id from before (the counter wrapped or went back): no gap.
            if gap < 0x80000000:
                q.stats.bypassed += gap
        q.last_id = packet_id
        due = max(now + q.delay_s, q.last_due)
        q.last_due = due
        q.waiting.append((due, now, packet_id))

    def next_due(self) -> float | None:
        """When the earliest waiting packet is due (None: nothing waits)."""
        dues = [q.waiting[0][0] for q in self._queues.values() if q.waiting]
        return min(dues) if dues else None

    def release(self, now: float, everything: bool = False) -> list[tuple[int, int]]:
        """(queue, last id due) for every queue with packets due at ``now`` (all of them with
        ``everything``: the line is closing); they count as released at ``now``."""
        out = []
        for number, q in self._queues.items():
            last = None
            while q.waiting and (everything or q.waiting[0][0] <= now):
                due, seen, last = q.waiting.popleft()
                late = max(0.0, now - due)
                q.stats.packets += 1
                q.stats.held_s += now - seen
                q.stats.late_s += late
                q.stats.max_late_s = max(q.stats.max_late_s, late)
            if last is not None:
                out.append((number, last))
        return out

    def waiting(self) -> int:
        return sum(len(q.waiting) for q in self._queues.values())

    def stats(self) -> dict[int, QueueStats]:
        return {number: q.stats for number, q in self._queues.items()}
