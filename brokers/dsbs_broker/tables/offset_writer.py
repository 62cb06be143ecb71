"""``OffsetWriter``: the offsets file's one writer thread, with group commit.

Why a dedicated thread rather than ``asyncio.to_thread`` per commit: at batch 1 every Fetch is
followed by an OffsetCommit, and a thread-pool hop per commit (executor submit, future chaining,
a GIL hand-off each way) cost more broker CPU than the fsync itself. Here the event loop only
encodes the lines and puts a job on a ``SimpleQueue`` (C, no Python lock); the thread takes every
job queued meanwhile, writes them with one ``write`` and at most one ``fsync``, and reports back
with one ``call_soon_threadsafe``. Commits that arrive while an fsync is running ride the next one
together (group commit), so under concurrency one fsync covers several commits.

Ordering and durability: jobs carry increasing sequence numbers and the thread finishes them in
order, so "job n is done" means every job up to n is written, and fsynced when any job of its
batch asked for it (an fsync covers the whole file, including earlier unsynced writes). A commit
waits for its own job; nothing is acknowledged before it is durable when fsync is asked for.

Compaction: the loop tracks the file's line count and, when a rewrite is due, snapshots the live
entries (newest per key, including everything handed over so far) into the job; the thread then
rewrites the file to that snapshot instead of appending what preceded it. The table is never read
from the thread.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass

from brokers.dsbs_broker.packets.wire import OffsetEntry
from brokers.dsbs_broker.tables.offsets import Key, OffsetLog, encode_lines

log = logging.getLogger("twinbench.dsbs.offsets")

_JOIN_TIMEOUT_S = 5.0


@dataclass(slots=True)
class _Job:
    seq: int
    data: str  # encoded lines
    lines: int
    fsync: bool
    snapshot: list[OffsetEntry] | None  # rewrite the file to this instead of appending before


class OffsetWriter:
    """Owns an open ``OffsetLog`` until ``close``; create and use it on the event loop."""

    def __init__(self, offset_log: OffsetLog, loop: asyncio.AbstractEventLoop) -> None:
        self._log = offset_log
        self._loop = loop
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        # Loop-side bookkeeping (never touched by the thread).
        self._submitted = 0
        self._done = 0
        self._waiters: deque[tuple[int, asyncio.Future[None]]] = deque()
        self._lines = offset_log.lines
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="dsbs-offsets", daemon=True)
        self._thread.start()

    @property
    def closed(self) -> bool:
        return self._closed

    def submit(
        self, entries: list[OffsetEntry], *, fsync: bool, live: Mapping[Key, OffsetEntry],
        wait: bool,
    ) -> asyncio.Future[None] | None:
        """Hand ``entries`` to the thread; with ``wait``, a future done once they are written
        (and fsynced if asked). ``live`` is the whole table, read only if compaction is due."""
        if self._closed:
            raise RuntimeError("OffsetWriter is closed")
        self._submitted += 1
        seq = self._submitted
        self._lines += len(entries)
        snapshot = None
        if OffsetLog.compaction_due(self._lines, len(live)):
            snapshot = list(live.values())
            self._lines = len(snapshot)
        self._jobs.put(_Job(seq, encode_lines(entries), len(entries), fsync, snapshot))
        if not wait:
            return None
        fut = self._loop.create_future()
        self._waiters.append((seq, fut))
        return fut

    async def close(self) -> None:
        """Finish every queued job, fsync, close the file and stop the thread."""
        if self._closed:
            return
        fut = self.submit([], fsync=True, live={}, wait=True)
        self._closed = True
        self._jobs.put(None)
        try:
            if fut is not None:  # always, with wait=True
                await fut
        finally:
            # The thread exits right after that last job; bounded all the same, so a cancelled
            # close (shutdown_timeout_s) cannot be held up here by a thread stuck in the kernel.
            await asyncio.to_thread(self._thread.join, _JOIN_TIMEOUT_S)

    # --- the thread -------------------------------------------------------------------------
    def _run(self) -> None:
        stop = False
        while not stop:
            batch = [self._jobs.get()]
            while True:  # everything queued meanwhile shares this write and fsync
                try:
                    batch.append(self._jobs.get_nowait())
                except queue.Empty:
                    break
            jobs = [j for j in batch if j is not None]
            stop = len(jobs) != len(batch)
            error: BaseException | None = None
            if jobs:
                try:
                    self._write(jobs)
                except Exception as exc:  # reported to the waiting commits
                    # One line: an I/O error is the disk's, not a bug; the coordinator turns
                    # it into the broker's halt.
                    log.error("writing %s failed: %s", self._log.path, exc)
                    error = exc
            if stop:
                try:
                    self._log.close()
                except OSError as exc:
                    log.error("closing %s failed: %s", self._log.path, exc)
            if jobs:
                try:
                    self._loop.call_soon_threadsafe(self._finished, jobs[-1].seq, error)
                except RuntimeError:  # the loop is closed: nobody is waiting any more
                    return

    def _write(self, jobs: list[_Job]) -> None:
        start = 0
        for i in range(len(jobs) - 1, -1, -1):
            snapshot = jobs[i].snapshot
            if snapshot is not None:
                # The latest snapshot holds the newest entry of every key handed over up to its
                # job, the jobs before it included: their lines need not be appended first.
                self._log.compact(snapshot)
                start = i + 1
                break
        rest = jobs[start:]
        if rest:
            data = "".join(j.data for j in rest)
            self._log.append_encoded(data, sum(j.lines for j in rest),
                                     fsync=any(j.fsync for j in rest))

    # --- back on the loop -------------------------------------------------------------------
    def _finished(self, seq: int, error: BaseException | None) -> None:
        self._done = seq
        w = self._waiters
        while w and w[0][0] <= seq:
            _, fut = w.popleft()
            if fut.done():  # the committing request was cancelled
                continue
            if error is None:
                fut.set_result(None)
            else:
                fut.set_exception(error)
