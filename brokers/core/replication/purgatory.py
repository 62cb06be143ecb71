"""Delayed produces: acks=-1 answers parked until every in-sync replica has the batch.

A produce with acks=-1 is appended to the leader's log at once; its answer waits until the
partition's high watermark reaches the batch's end (then the ISR has it), or until its
timeout (REQUEST_TIMED_OUT: the batch stays in the log and an idempotent retry is
deduplicated), or until this broker stops leading the partition (NOT_LEADER_OR_FOLLOWER).

Sans-IO: ``park`` stores an opaque token the caller completes with what ``on_high_watermark``,
``expire`` and ``drop`` return. A partition's waiters are parked in offset order (appends are
sequential), so a high-watermark advance pops a prefix of one deque: no scan of the others.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(order=True, slots=True)
class _Deadline:
    at: float
    seq: int
    key: Hashable = field(compare=False)


class DelayedProduces(Generic[T]):
    def __init__(self) -> None:
        self._waiting: dict[Hashable, deque[tuple[int, int, T]]] = {}
        self._deadlines: list[_Deadline] = []
        self._live: set[int] = set()  # seqs still parked (a deadline entry may be stale)
        self._seq = 0

    def __len__(self) -> int:
        return len(self._live)

    def park(self, key: Hashable, end_offset: int, deadline: float, token: T) -> None:
        """Wait until ``key``'s high watermark reaches ``end_offset`` (the offset after the
        batch) or until ``deadline``."""
        self._seq += 1
        self._waiting.setdefault(key, deque()).append((end_offset, self._seq, token))
        heapq.heappush(self._deadlines, _Deadline(deadline, self._seq, key))
        self._live.add(self._seq)

    def on_high_watermark(self, key: Hashable, high_watermark: int) -> list[T]:
        """Tokens whose batch is now below ``key``'s high watermark, oldest first."""
        queue = self._waiting.get(key)
        done: list[T] = []
        while queue and queue[0][0] <= high_watermark:
            _, seq, token = queue.popleft()
            if seq in self._live:
                self._live.discard(seq)
                done.append(token)
        if queue is not None and not queue:
            del self._waiting[key]
        return done

    def expire(self, now: float) -> list[T]:
        """Tokens whose deadline passed (oldest deadline first)."""
        done: list[T] = []
        while self._deadlines and self._deadlines[0].at <= now:
            d = heapq.heappop(self._deadlines)
            if d.seq not in self._live:
                continue
            queue = self._waiting[d.key]
            for i, (_, seq, token) in enumerate(queue):
                if seq == d.seq:
                    del queue[i]
                    done.append(token)
                    break
            if not queue:
                del self._waiting[d.key]
            self._live.discard(d.seq)
        return done

    def drop(self, key: Hashable) -> list[T]:
        """Every token parked on ``key`` (this broker no longer leads it)."""
        queue = self._waiting.pop(key, deque())
        done = [token for _, seq, token in queue if seq in self._live]
        for _, seq, _ in queue:
            self._live.discard(seq)
        return done

    def next_deadline(self) -> float | None:
        while self._deadlines and self._deadlines[0].seq not in self._live:
            heapq.heappop(self._deadlines)
        return self._deadlines[0].at if self._deadlines else None
