"""Wake-ups for Fetch long-polls: a Produce that appends to a partition wakes its waiters.

A long-polling Fetch registers one future under every partition it asks for; the first append
to any of them (or the deadline) wakes it, and it re-reads. Notification is O(waiters of that
partition), and a partition nobody waits on costs one dict lookup per append.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from brokers.core.coordinator import TopicPartition


class AppendNotifier:
    def __init__(self) -> None:
        # Waiters per partition in the order they came (a dict as an ordered set): woken in
        # that order, never in the order of their addresses, so a seeded simulation replays.
        self._waiters: dict[TopicPartition, dict[asyncio.Future[None], None]] = {}

    def notify(self, tp: TopicPartition) -> None:
        waiters = self._waiters.pop(tp, None)
        if waiters:
            for fut in waiters:
                if not fut.done():
                    fut.set_result(None)

    async def wait_any(self, partitions: Iterable[TopicPartition], timeout_s: float) -> bool:
        """Wait until one of ``partitions`` gets an append; False on timeout."""
        if timeout_s <= 0:
            return False
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        tps = list(partitions)
        for tp in tps:
            self._waiters.setdefault(tp, {})[fut] = None
        try:
            await asyncio.wait_for(fut, timeout_s)
            return True
        except TimeoutError:
            return False
        finally:
            for tp in tps:
                waiters = self._waiters.get(tp)
                if waiters is not None:
                    waiters.pop(fut, None)
                    if not waiters:
                        del self._waiters[tp]

    def wake_all(self) -> None:
        """Release every waiter (shutdown, or leadership changed under them)."""
        waiters, self._waiters = self._waiters, {}
        for group in waiters.values():
            for fut in group:
                if not fut.done():
                    fut.set_result(None)
