"""PartitionLog: the ordered segments of one partition, with append, read, flush and retention.

Invariants kept by open() and every mutation:
* segments are sorted by base offset and contiguous: each base == the previous next_offset;
* only the last (active) segment is written to and only it may be empty or unflushed;
* closed segments were fdatasync'ed and had their index files written before the next segment
  file was created, so after a crash only the active segment can hold a torn tail;
* a closed segment's descriptor is released when it rolls, and any segment's may be closed by
  the shared ``OpenSegments`` budget; both reopen on use.

The log start offset is the base of the oldest segment, or higher once DeleteRecords advanced
it: then it is kept in ``log-start-offset`` in the partition's directory (written atomically and
durably before the answer), read back at open, and segments wholly below it are deleted. Reads
below it are OFFSET_OUT_OF_RANGE; the batch holding it may still begin below it (batches are
never split; clients skip the records before their fetch offset).

Disk errors are not retried: the first failed write, fsync, read or file operation takes the
whole data directory offline (``DataDir.fail``) and this log with it; from then on every call
raises KafkaStorageError, and ``close`` only releases descriptors.
"""

from __future__ import annotations

import logging
import os
from bisect import bisect_right
from pathlib import Path

from brokers.core.atomic_file import TMP_SUFFIX, fsync_dir, replace_file
from brokers.core.config import FlushMode, StorageConfig
from brokers.core.datadir import DataDir
from brokers.core.errors import KafkaStorageError, OffsetOutOfRange
from brokers.core.logs import AppendResult
from brokers.core.storage.batch_header import validate_batches
from brokers.core.storage.open_files import OpenSegments
from brokers.core.storage.segment import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIMEINDEX_SUFFIX,
    U32_MAX,
    Segment,
    parse_stem,
    segment_stem,
)

log = logging.getLogger("twinbench.storage")

# The partition's log start offset once DeleteRecords moved it past the oldest segment's base.
START_OFFSET_FILE = "log-start-offset"


class PartitionLog:
    """One partition's log in ``directory``. Synchronous; not thread-safe (one event loop)."""

    __slots__ = ("_bases", "_closed", "_datadir", "_files", "_fsync_each", "_roll_bytes",
                 "_segments", "_start", "config", "directory")

    def __init__(
        self, directory: Path, config: StorageConfig, segments: list[Segment],
        files: OpenSegments, datadir: DataDir,
    ) -> None:
        # Use PartitionLog.open(); this only wires up already-recovered segments.
        self.directory = directory
        self.config = config
        self._files = files
        self._datadir = datadir
        self._segments = segments
        self._bases = [s.base_offset for s in segments]
        self._fsync_each = config.flush.mode is FlushMode.EVERY_BATCH
        # Index positions are u32, so never let a segment grow past 4 GiB whatever the config says.
        self._roll_bytes = min(config.segment_bytes, U32_MAX)
        self._closed = False
        self._start = segments[0].base_offset

    def reconfigure(self, config: StorageConfig) -> None:
        """Apply a topic's own settings (retention, segment size) from the next append or
        retention check on; segments already written keep their size."""
        self.config = config
        self._fsync_each = config.flush.mode is FlushMode.EVERY_BATCH
        self._roll_bytes = min(config.segment_bytes, U32_MAX)

    # ------------------------------------------------------------------------- open
    @classmethod
    def open(
        cls, directory: Path, config: StorageConfig, *, files: OpenSegments | None = None,
        datadir: DataDir | None = None,
    ) -> PartitionLog:
        """Create the directory, or recover what is in it: validate, truncate a torn tail.

        ``files`` and ``datadir`` are shared by the logs of one broker (``LogManager``); a log
        opened alone gets its own descriptor budget and failure state.
        """
        directory = Path(directory)
        files = files if files is not None else OpenSegments(config.max_open_segments)
        datadir = datadir if datadir is not None else DataDir(directory)
        datadir.check()
        try:
            created = not directory.exists()
            directory.mkdir(parents=True, exist_ok=True)
            if created:
                fsync_dir(directory.parent)
            segments = cls._recover(directory, config, files)
            start = _read_start(directory)
        except (OSError, KafkaStorageError) as exc:
            raise datadir.fail(f"cannot open log {directory}", exc) from exc
        plog = cls(directory, config, segments, files, datadir)
        if start is not None:
            # Never past the end (a torn tail recovered away): the end is then the start.
            plog._start = min(max(start, plog._start), plog.log_end_offset)
        return plog

    @staticmethod
    def _recover(directory: Path, config: StorageConfig, files: OpenSegments) -> list[Segment]:
        bases: list[int] = []
        index_files: list[Path] = []
        for entry in os.scandir(directory):
            if entry.name.endswith(TMP_SUFFIX):
                # A half-written index from a crash during close; the real one is intact or absent.
                os.unlink(entry.path)
            elif (base := parse_stem(entry.name, LOG_SUFFIX)) is not None:
                bases.append(base)
            elif entry.name.endswith((INDEX_SUFFIX, TIMEINDEX_SUFFIX)):
                index_files.append(Path(entry.path))
        bases.sort()
        known = set(bases)
        for p in index_files:
            suffix = INDEX_SUFFIX if p.name.endswith(INDEX_SUFFIX) else TIMEINDEX_SUFFIX
            if parse_stem(p.name, suffix) not in known:
                p.unlink()  # its .log was deleted (retention) before a crash

        segments: list[Segment] = []
        expected: int | None = None
        dir_changed = False
        try:
            for i, base in enumerate(bases):
                last = i == len(bases) - 1
                if expected is not None and base != expected:
                    log.warning(
                        "%s: segment %d does not follow offset %d; deleting it and %d later "
                        "segment(s)", directory, base, expected, len(bases) - i - 1)
                    _unlink_segments(directory, bases[i:])
                    dir_changed = True
                    break
                seg, dropped, why = Segment.open_existing(
                    directory, base, config.index_interval_bytes, files, trust_index=not last)
                if dropped:
                    log.warning(
                        "%s: recovery dropped %d byte(s) from segment %d after offset %d (%s)",
                        directory, dropped, base, seg.next_offset, why)
                if seg.size == 0 and not last:
                    # An empty closed segment holds nothing; skipping it keeps offsets contiguous.
                    seg.delete()
                    dir_changed = True
                    continue
                segments.append(seg)
                if not last:
                    seg.release()  # validated; reopened when read
                expected = seg.next_offset
                if dropped and not last:
                    log.warning(
                        "%s: deleting %d segment(s) after the truncated segment %d",
                        directory, len(bases) - i - 1, base)
                    _unlink_segments(directory, bases[i + 1 :])
                    dir_changed = True
                    break
            if not segments:
                segments.append(Segment.create(
                    directory, expected or 0, config.index_interval_bytes, files))
                dir_changed = True
            if dir_changed:
                fsync_dir(directory)
        except BaseException:
            for s in segments:
                s.close()
            raise
        return segments

    # ------------------------------------------------------------------- properties
    @property
    def log_start_offset(self) -> int:
        return self._start

    @property
    def log_end_offset(self) -> int:
        return self._segments[-1].next_offset

    @property
    def dirty(self) -> bool:
        return self._segments[-1].dirty

    @property
    def size_bytes(self) -> int:
        """Total bytes of all segments (what size retention compares)."""
        return sum(s.size for s in self._segments)

    @property
    def segment_count(self) -> int:
        return len(self._segments)

    # ----------------------------------------------------------------------- append
    def append(
        self, records: bytes | bytearray | memoryview, leader_epoch: int = -1
    ) -> AppendResult:
        """Validate every batch in ``records``, then store them all (or none) at the log end.

        Raises CorruptMessage / InvalidRecord / MessageTooLarge for a bad batch (nothing is
        written) and KafkaStorageError when the disk fails (the partial write is truncated).
        """
        if self._closed:
            self._check_open()
        view = records if type(records) is memoryview else memoryview(records)
        if view.itemsize != 1 or view.ndim != 1:
            view = view.cast("B")
        batches = validate_batches(view, self.config.max_batch_bytes)
        seg = self._segments[-1]
        first = seg.next_offset
        if len(batches) == 1:
            total = batches[0].size
            count = batches[0].last_offset_delta + 1
        else:
            total = sum(b.size for b in batches)
            count = sum(b.last_offset_delta + 1 for b in batches)
        try:
            if seg.size and (
                seg.size + total > self._roll_bytes
                or first + count - 1 - seg.base_offset > U32_MAX
            ):
                seg = self._roll()
            end = seg.append(view, batches, first, leader_epoch, self._fsync_each)
        except KafkaStorageError as exc:
            raise self._failed(exc) from exc
        return AppendResult(first, end - 1, self._start)

    def _roll(self) -> Segment:
        """Close the active segment durably, then start a new one at the log end."""
        old = self._segments[-1]
        try:
            old.dirty = True  # always fdatasync on roll, whatever the policy (Kafka does too)
            old.flush()
            old.write_index_files()
            new = Segment.create(self.directory, old.next_offset, self.config.index_interval_bytes,
                                 self._files)
            fsync_dir(self.directory)
            old.release()  # a closed segment is read rarely: its descriptor goes back
        except OSError as exc:
            raise KafkaStorageError(f"cannot roll segment in {self.directory}: {exc}") from exc
        self._segments.append(new)
        self._bases.append(new.base_offset)
        return new

    # --------------------------------------------------------------------- truncate
    def truncate_to(self, offset: int) -> int:
        """Cut the log so it ends at or before ``offset`` (a whole batch at a time: a batch
        holding ``offset`` goes entirely); returns the new log end offset. Never cuts below
        the log start offset. A replica calls it for a tail the leader does not have."""
        self._check_open()
        offset = max(offset, self.log_start_offset)
        if offset >= self.log_end_offset:
            return self.log_end_offset
        keep = max(1, bisect_right(self._bases, offset))
        if keep > 1 and self._segments[keep - 1].base_offset == offset:
            keep -= 1  # a segment starting exactly at the cut goes whole
        try:
            for seg in self._segments[keep:]:
                seg.delete()
            active = self._segments[keep - 1]
            active.truncate_to(offset)
            if keep < len(self._segments):
                # It becomes the active segment again: its index lives in memory from now on,
                # and its stale index files must not outlive the cut.
                for suffix in (INDEX_SUFFIX, TIMEINDEX_SUFFIX):
                    active.path(suffix).unlink(missing_ok=True)
                fsync_dir(self.directory)
        except (OSError, KafkaStorageError) as exc:
            raise self._failed(f"truncation of {self.directory} failed: {exc}") from exc
        del self._segments[keep:]
        del self._bases[keep:]
        log.info("%s: truncated to end at %d", self.directory, self.log_end_offset)
        return self.log_end_offset

    # ------------------------------------------------------------------------- read
    def read(self, offset: int, max_bytes: int) -> bytes | memoryview:
        """Whole stored batches from the one containing ``offset``, up to ``max_bytes`` (but at
        least one batch); b"" at the log end. Stops at a segment boundary."""
        self._check_open()
        if offset < self._start or offset > self._segments[-1].next_offset:
            raise OffsetOutOfRange(
                f"offset {offset} outside [{self.log_start_offset}, {self.log_end_offset}]"
            )
        if offset == self._segments[-1].next_offset:
            return b""
        seg = self._segments[bisect_right(self._bases, offset) - 1]
        try:
            return seg.read(offset, max_bytes)
        except KafkaStorageError as exc:
            raise self._failed(exc) from exc

    def offset_for_timestamp(self, timestamp_ms: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record from the log start whose timestamp is at
        least ``timestamp_ms`` (``Segment.find_timestamp``), or None when there is none."""
        self._check_open()
        try:
            for seg in self._segments:
                if seg.next_offset <= self._start:
                    continue
                found = seg.find_timestamp(timestamp_ms, self._start)
                if found is not None:
                    return found
        except KafkaStorageError as exc:
            raise self._failed(exc) from exc
        return None

    # ------------------------------------------------------------- flush / retention
    def flush(self) -> None:
        self._check_open()
        try:
            self._segments[-1].flush()
        except (OSError, KafkaStorageError) as exc:
            raise self._failed(f"fsync of {self.directory} failed: {exc}") from exc

    def enforce_retention(self, now_ms: int) -> int:
        """Delete whole closed segments, oldest first, past retention_ms or retention_bytes.

        The active segment is never deleted, so the log end offset never moves backwards and
        log_start_offset becomes the base of the oldest remaining segment.
        """
        self._check_open()
        retention_ms = self.config.retention_ms
        retention_bytes = self.config.retention_bytes
        if retention_ms is None and retention_bytes is None:
            return 0
        total = self.size_bytes
        deleted = 0
        while len(self._segments) > 1:
            oldest = self._segments[0]
            expired = (
                retention_ms is not None
                and now_ms - oldest.retention_timestamp_ms() > retention_ms
            )
            too_big = retention_bytes is not None and total > retention_bytes
            if not (expired or too_big):
                break
            total -= oldest.size
            try:
                oldest.delete()
            except OSError as exc:
                raise self._failed(f"retention in {self.directory} failed: {exc}") from exc
            del self._segments[0]
            del self._bases[0]
            deleted += 1
        self._start = max(self._start, self._segments[0].base_offset)
        if deleted:
            log.info("%s: retention deleted %d segment(s); log start offset now %d",
                     self.directory, deleted, self.log_start_offset)
        return deleted

    def delete_records(self, offset: int) -> int:
        """DeleteRecords: make ``offset`` (at most the log end) the log start offset, durably,
        and delete the closed segments wholly below it; returns the log start offset. An
        offset at or below the current start changes nothing."""
        self._check_open()
        end = self.log_end_offset
        if not 0 <= offset <= end:
            raise OffsetOutOfRange(f"offset {offset} outside [0, {end}]")
        if offset <= self._start:
            return self._start
        try:
            replace_file(self.directory / START_OFFSET_FILE, f"{offset}\n")
        except OSError as exc:
            raise self._failed(f"cannot write the log start offset of {self.directory}: {exc}"
                               ) from exc
        self._start = offset
        deleted = 0
        while len(self._segments) > 1 and self._segments[1].base_offset <= offset:
            try:
                self._segments[0].delete()
            except OSError as exc:
                raise self._failed(f"deleting records in {self.directory} failed: {exc}"
                                   ) from exc
            del self._segments[0]
            del self._bases[0]
            deleted += 1
        log.info("%s: log start offset now %d (%d segment(s) deleted)", self.directory, offset,
                 deleted)
        return offset

    def close(self) -> None:
        """Flush and release file descriptors. Idempotent. An offline log is not flushed (that
        would retry the failed I/O); its descriptors are only released."""
        if self._closed:
            self._release_all()
            return
        try:
            self._segments[-1].flush()
        except (OSError, KafkaStorageError) as exc:
            raise self._failed(f"fsync of {self.directory} failed: {exc}") from exc
        finally:
            self._closed = True
            self._release_all()

    def take_offline(self) -> None:
        """The data directory failed elsewhere: refuse every further call."""
        self._closed = True

    def _release_all(self) -> None:
        for s in self._segments:
            s.close()

    def _failed(self, exc: Exception | str) -> KafkaStorageError:
        """Take the directory (and so this log) offline; the error for the caller to raise."""
        self._closed = True
        return self._datadir.fail(str(exc))

    def _check_open(self) -> None:
        if self._closed:
            raise KafkaStorageError(
                f"data directory {self._datadir.path} is offline: {self._datadir.offline}"
                if self._datadir.offline else f"log {self.directory} is closed")

    def __repr__(self) -> str:
        return (f"PartitionLog({str(self.directory)!r}, start={self.log_start_offset}, "
                f"end={self.log_end_offset}, segments={len(self._segments)})")


def _read_start(directory: Path) -> int | None:
    """The log start offset DeleteRecords set, None if it never did (or the file is junk:
    then the oldest segment's base, as before, and nothing below it is lost)."""
    try:
        text = (directory / START_OFFSET_FILE).read_text("ascii").strip()
    except FileNotFoundError:
        return None
    except UnicodeDecodeError:
        return None
    return int(text) if text.isdigit() else None


def _unlink_segments(directory: Path, bases: list[int]) -> None:
    for base in bases:
        for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIMEINDEX_SUFFIX):
            (directory / (segment_stem(base) + suffix)).unlink(missing_ok=True)
