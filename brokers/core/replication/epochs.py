"""The leader-epoch cache of one partition log: where each leader epoch's records begin.

Every batch a leader appends carries its epoch in the partitionLeaderEpoch header field
(outside the CRC, so the broker stamps it without touching a record). The cache keeps one
entry per epoch, (epoch, first offset written in it), in increasing order of both; it is what
answers OffsetForLeaderEpoch ("where does your log of epoch E end?") and what a returning
replica consults to find where its log parts from the leader's (``truncation.py``).

Sans-IO: the text of its checkpoint file (Kafka's leader-epoch-checkpoint layout: a version
line ``0``, a count line, then one ``<epoch> <start offset>`` line per entry) is produced and
parsed here, and ``from_checkpoint`` decides how much of it a restarted broker can trust; the
replica manager reads and writes the file next to the partition's segments.

The checkpoint spares a restarted broker the scan of every stored batch header. It is written
whenever the cache changes, without fsync: it is checked against the log at start (each
entry's epoch must begin at its offset), and a missing, torn, damaged or stale file costs a
scan, never a wrong answer.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from brokers.core.errors import KafkaStorageError

UNDEFINED_EPOCH = -1
UNDEFINED_OFFSET = -1
CHECKPOINT_VERSION = 0


@dataclass(frozen=True, slots=True)
class EpochEntry:
    epoch: int
    start_offset: int


class LeaderEpochCache:
    __slots__ = ("_entries", "_epochs")

    def __init__(self, entries: Iterable[EpochEntry] = ()) -> None:
        self._entries: list[EpochEntry] = []
        self._epochs: list[int] = []  # the entries' epochs, for bisection
        for e in entries:
            self.assign(e.epoch, e.start_offset)

    @property
    def entries(self) -> tuple[EpochEntry, ...]:
        return tuple(self._entries)

    @property
    def latest_epoch(self) -> int:
        return self._entries[-1].epoch if self._entries else UNDEFINED_EPOCH

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Records of ``epoch`` start at ``start_offset`` (called for every appended batch;
        a no-op unless the epoch is new). Entries the new one contradicts (an epoch at least as
        large, or one starting at or after it) go: they describe a log that was cut. True when
        the cache changed and its checkpoint must be rewritten."""
        if epoch < 0 or start_offset < 0:
            return False  # an unreplicated batch (epoch -1) belongs to no leader epoch
        if self._entries:
            last = self._entries[-1]
            if last.epoch == epoch and last.start_offset <= start_offset:
                return False
        keep = len(self._entries)
        while keep and (self._entries[keep - 1].epoch >= epoch
                        or self._entries[keep - 1].start_offset >= start_offset):
            keep -= 1
        del self._entries[keep:]
        del self._epochs[keep:]
        self._entries.append(EpochEntry(epoch, start_offset))
        self._epochs.append(epoch)
        return True

    def end_offset_for(self, epoch: int, log_end_offset: int) -> tuple[int, int]:
        """OffsetForLeaderEpoch's answer for ``epoch``: (the largest epoch <= ``epoch`` this
        log has, the offset where that epoch's records end here, i.e. where the first larger
        epoch starts, or the log end for the latest epoch). (UNDEFINED, UNDEFINED) for an
        undefined epoch or one newer than any here."""
        if epoch == UNDEFINED_EPOCH or not self._entries:
            return UNDEFINED_EPOCH, UNDEFINED_OFFSET
        if epoch == self._entries[-1].epoch:
            return epoch, log_end_offset
        higher = bisect.bisect_right(self._epochs, epoch)
        if higher == len(self._entries):
            return UNDEFINED_EPOCH, UNDEFINED_OFFSET
        end = self._entries[higher].start_offset
        if higher == 0:
            # Older than every epoch here: nothing of it is in this log, which starts at end.
            return epoch, end
        return self._entries[higher - 1].epoch, end

    def truncate_from_end(self, end_offset: int) -> bool:
        """The log was cut to end at ``end_offset``: drop epochs that started at or after it."""
        keep = bisect.bisect_left([e.start_offset for e in self._entries], end_offset)
        if keep == len(self._entries):
            return False
        del self._entries[keep:]
        del self._epochs[keep:]
        return True

    def truncate_from_start(self, start_offset: int) -> bool:
        """Retention removed everything below ``start_offset``: the epoch holding it now
        starts there, older ones go."""
        starts = [e.start_offset for e in self._entries]
        holder = bisect.bisect_right(starts, start_offset) - 1
        if holder < 0 or (holder == 0 and starts[0] == start_offset):
            return False
        epoch = self._entries[holder].epoch
        self._entries[: holder + 1] = [EpochEntry(epoch, start_offset)]
        self._epochs[: holder + 1] = [epoch]
        return True

    # --- checkpoint text --------------------------------------------------------------------
    def encode(self) -> str:
        lines = [str(CHECKPOINT_VERSION), str(len(self._entries))]
        lines += [f"{e.epoch} {e.start_offset}" for e in self._entries]
        return "\n".join(lines) + "\n"

    @classmethod
    def decode(cls, text: str, source: str = "leader-epoch-checkpoint") -> LeaderEpochCache:
        """Parse a checkpoint; KafkaStorageError naming ``source`` and the line when it is not
        one (a damaged file must stop the partition, not silently forget epochs)."""
        lines = text.splitlines()

        def bad(why: str) -> KafkaStorageError:
            return KafkaStorageError(f"{source}: {why}")

        if len(lines) < 2 or lines[0].strip() != str(CHECKPOINT_VERSION):
            raise bad(f"expected version {CHECKPOINT_VERSION} and a count")
        try:
            count = int(lines[1])
        except ValueError:
            raise bad(f"line 2: count {lines[1]!r} is not a number") from None
        if count != len(lines) - 2:
            raise bad(f"count says {count} entries, the file has {len(lines) - 2}")
        cache = cls()
        for n, line in enumerate(lines[2:], start=3):
            parts = line.split()
            try:
                epoch, start = (int(p) for p in parts) if len(parts) == 2 else (-1, -1)
            except ValueError:
                epoch, start = -1, -1
            if epoch < 0 or start < 0:
                raise bad(f"line {n}: {line!r} is not '<epoch> <start offset>'")
            if cache._entries and (epoch <= cache.latest_epoch
                                   or start <= cache._entries[-1].start_offset):
                raise bad(f"line {n}: entries must grow in epoch and offset")
            cache.assign(epoch, start)
        return cache


def from_checkpoint(
    text: str | None, log_start: int, log_end: int, epoch_at: Callable[[int], int],
) -> tuple[LeaderEpochCache, int]:
    """The cache a checkpoint gives a log, and the offset from which the log's batch headers
    must still be scanned (and ``assign``ed) to complete it.

    ``epoch_at(offset)`` is the leader epoch of the stored batch holding ``offset``. The
    checkpoint is trusted only if every entry inside the log starts exactly where the log
    says its epoch starts (the batch at the offset has that epoch, the one before it an older
    one); then only the batches from the last entry on are scanned. Otherwise (no file, a
    damaged one, one the log has moved past: a crash between an append and the rewrite, a cut)
    the whole log is scanned."""
    if text is None:
        return LeaderEpochCache(), log_start
    try:
        cache = LeaderEpochCache.decode(text)
    except KafkaStorageError:
        return LeaderEpochCache(), log_start
    cache.truncate_from_end(log_end)
    cache.truncate_from_start(log_start)
    for e in cache.entries:
        if epoch_at(e.start_offset) != e.epoch or (
                e.start_offset > log_start and epoch_at(e.start_offset - 1) >= e.epoch):
            return LeaderEpochCache(), log_start
    entries = cache.entries
    return cache, entries[-1].start_offset if entries else log_start
