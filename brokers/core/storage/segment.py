"""One segment: a ``<base>.log`` file of stored batches plus its sparse index.

A segment reads and writes through one O_RDWR file descriptor (pread/pwritev, no per-call open)
while it is in use; the shared ``OpenSegments`` budget may close it when too many segments are
open, and the next use reopens it. It knows its size, next offset and largest timestamp, so the
log never has to ask the disk for them. Index files are written only when the segment is closed
(rolled or the log shut down); the active segment's index lives in memory and is rebuilt by the
recovery scan on open.
"""

from __future__ import annotations

import contextlib
import errno
import mmap
import os
from pathlib import Path

from brokers.core import fsyncs
from brokers.core.atomic_file import replace_file
from brokers.core.errors import CorruptMessage, KafkaError, KafkaStorageError
from brokers.core.protocol.records import (
    BROKER_PREFIX,
    HEADER_SIZE,
    LAST_OFFSET_DELTA,
    LAST_OFFSET_DELTA_AT,
    LOG_OVERHEAD,
    MAX_TIMESTAMP,
    MAX_TIMESTAMP_AT,
    OFFSET_AND_LENGTH,
    UnsupportedCompression,
    record_times,
)
from brokers.core.storage.batch_header import BatchInfo, check_batch
from brokers.core.storage.index import NO_TIMESTAMP, SparseIndex
from brokers.core.storage.open_files import OpenSegments

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIMEINDEX_SUFFIX = ".timeindex"
# Index entries hold u32 positions and relative offsets; the log rolls before either overflows.
U32_MAX = 0xFFFFFFFF
_IOV_MAX = os.sysconf("SC_IOV_MAX") if hasattr(os, "sysconf") else 1024
# Header bytes needed to walk a stored log (through lastOffsetDelta) and to answer time queries
# (through maxTimestamp).
_WALK_BYTES = LAST_OFFSET_DELTA_AT + LAST_OFFSET_DELTA.size
_NAV_BYTES = MAX_TIMESTAMP_AT + MAX_TIMESTAMP.size
# Bound once: called per batch on the append and read paths.
_pack_prefix = BROKER_PREFIX.pack
_unpack_length = OFFSET_AND_LENGTH.unpack_from
_unpack_last_delta = LAST_OFFSET_DELTA.unpack_from
_unpack_max_ts = MAX_TIMESTAMP.unpack_from
_PREFIX_SIZE = BROKER_PREFIX.size


def segment_stem(base_offset: int) -> str:
    """Kafka's file naming: the base offset, zero-padded to 20 digits so names sort numerically."""
    return f"{base_offset:020d}"


def parse_stem(name: str, suffix: str) -> int | None:
    if not name.endswith(suffix):
        return None
    stem = name[: -len(suffix)]
    if len(stem) != 20 or not stem.isdigit():
        return None
    return int(stem)


def _pwritev_all(fd: int, iov: list[bytes | memoryview], position: int) -> int:
    """pwritev everything in ``iov`` at ``position``, coping with short writes and IOV_MAX."""
    start = 0
    while start < len(iov):
        part = iov[start : start + _IOV_MAX]
        start += len(part)
        want = sum(len(x) for x in part)
        while want:
            n = os.pwritev(fd, part, position)
            if n <= 0:
                raise OSError(errno.ENOSPC, "pwritev wrote nothing")
            position += n
            want -= n
            if want:
                # Short write (rare for regular files: signals, quota). Drop what was written.
                while n >= len(part[0]):
                    n -= len(part[0])
                    part = part[1:]
                part = [memoryview(part[0])[n:], *part[1:]]
    return position


class Segment:
    """Mutable state of one segment. Only the owning PartitionLog touches it."""

    __slots__ = (
        "base_offset",
        "bytes_since_index",
        "directory",
        "dirty",
        "fd",
        "files",
        "index",
        "index_interval",
        "max_timestamp",
        "next_offset",
        "size",
    )

    def __init__(
        self, directory: Path, base_offset: int, fd: int, index_interval: int,
        files: OpenSegments,
    ) -> None:
        self.directory = directory
        self.base_offset = base_offset
        self.fd = fd  # -1 while closed by the budget (or for good)
        self.files = files
        self.index_interval = index_interval
        self.size = 0
        self.next_offset = base_offset
        self.max_timestamp = NO_TIMESTAMP
        self.index = SparseIndex()
        self.bytes_since_index = 0
        self.dirty = False
        if fd >= 0:
            files.touch(self)

    # ----------------------------------------------------------------- paths / lifecycle
    def path(self, suffix: str = LOG_SUFFIX) -> Path:
        return self.directory / (segment_stem(self.base_offset) + suffix)

    @classmethod
    def create(
        cls, directory: Path, base_offset: int, index_interval: int, files: OpenSegments
    ) -> Segment:
        # O_EXCL: the log only creates a base offset it does not already have a file for, so an
        # existing file here is a bug we would rather hear about than silently overwrite.
        path = directory / (segment_stem(base_offset) + LOG_SUFFIX)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        return cls(directory, base_offset, fd, index_interval, files)

    def _file(self) -> int:
        """The open descriptor, reopened if the budget closed it; marks the segment used."""
        fd = self.fd
        if fd < 0:
            try:
                fd = os.open(self.path(), os.O_RDWR)
            except OSError as exc:
                raise KafkaStorageError(f"cannot reopen {self.path()}: {exc}") from exc
            self.fd = fd
        self.files.touch(self)
        return fd

    def release(self) -> None:
        """Give the descriptor back to the budget: fdatasync unflushed appends, then close.
        The segment stays usable; its next use reopens the file."""
        fd = self.fd
        if fd < 0:
            return
        try:
            if self.dirty:
                fsyncs.fdatasync(fd)
                self.dirty = False
        except OSError as exc:
            raise KafkaStorageError(f"fsync of {self.path()} failed: {exc}") from exc
        finally:
            self.fd = -1
            self.files.forget(self)
            os.close(fd)

    @classmethod
    def open_existing(
        cls, directory: Path, base_offset: int, index_interval: int, files: OpenSegments, *,
        trust_index: bool,
    ) -> tuple[Segment, int, str]:
        """Open and validate; returns (segment, bytes dropped from the tail, why).

        ``trust_index`` (closed segments): load the index files if plausible and validate only
        the batches after the last entry. Otherwise (the active segment, or an implausible
        index) validate every batch from position 0, rebuilding the index as we go.
        """
        path = directory / (segment_stem(base_offset) + LOG_SUFFIX)
        fd = os.open(path, os.O_RDWR)
        seg = cls(directory, base_offset, fd, index_interval, files)
        try:
            file_size = os.fstat(fd).st_size
            if trust_index:
                index = seg._load_index(file_size)
                if index is not None:
                    start, expected = 0, base_offset
                    if len(index):
                        seg.index = index
                        seg.max_timestamp = index.ts_before[-1]
                        start, expected = index.positions[-1], base_offset + index.rels[-1]
                    end, why = seg._scan(start, expected, file_size)
                    if end == file_size:
                        return seg, 0, ""
                    # The data or the index is wrong; only a full scan can tell which.
                    seg._reset()
            end, why = seg._scan(0, base_offset, file_size)
            dropped = file_size - end
            if dropped:
                os.ftruncate(fd, end)
                fsyncs.fdatasync(fd)
            if trust_index:
                seg.write_index_files()
            return seg, dropped, why
        except BaseException:
            seg.close()
            raise

    def _reset(self) -> None:
        self.size = 0
        self.next_offset = self.base_offset
        self.max_timestamp = NO_TIMESTAMP
        self.index = SparseIndex()
        self.bytes_since_index = 0

    def _load_index(self, log_size: int) -> SparseIndex | None:
        try:
            index_bytes = self.path(INDEX_SUFFIX).read_bytes()
            time_bytes = self.path(TIMEINDEX_SUFFIX).read_bytes()
        except FileNotFoundError:
            return None
        return SparseIndex.decode(index_bytes, time_bytes, log_size)

    def _scan(self, start: int, expected_offset: int, file_size: int) -> tuple[int, str]:
        """Validate batches from ``start``; returns (end of the valid prefix, why it stopped).

        mmap rather than read(): the CRC runs over the page cache directly, with no copy, and a
        256 MiB segment costs no heap.
        """
        self.size = start
        self.next_offset = expected_offset
        self.bytes_since_index = 0
        if start >= file_size:
            return start, "" if start == file_size else "index points past the end"
        why = ""
        with mmap.mmap(self._file(), file_size, access=mmap.ACCESS_READ) as mm:
            view = memoryview(mm)
            try:
                pos = start
                offset = expected_offset
                while pos < file_size:
                    try:
                        info = check_batch(view, pos, None)
                    except KafkaError as exc:
                        why = exc.message
                        break
                    # A CRC-valid batch at the wrong offset is a stale or misplaced write;
                    # keeping it would invent or reorder records.
                    if info.base_offset != offset:
                        why = f"baseOffset {info.base_offset} where {offset} was expected"
                        break
                    if offset + info.last_offset_delta - self.base_offset > U32_MAX:
                        why = "relative offset overflows the index"
                        break
                    self._note_batch(
                        pos, info.size, offset, info.last_offset_delta, info.max_timestamp
                    )
                    offset += info.last_offset_delta + 1
                    pos += info.size
            finally:
                view.release()
        return self.size, why

    def _note_batch(
        self, position: int, size: int, base_offset: int, last_delta: int, max_ts: int
    ) -> None:
        """Account for a batch now stored at ``position`` (shared by append and recovery)."""
        if self.bytes_since_index >= self.index_interval:
            self.index.append(base_offset - self.base_offset, position, self.max_timestamp)
            self.bytes_since_index = 0
        self.bytes_since_index += size
        if max_ts > self.max_timestamp:
            self.max_timestamp = max_ts
        self.size = position + size
        self.next_offset = base_offset + last_delta + 1

    def write_index_files(self) -> None:
        """Persist the index atomically; called when the segment closes."""
        index_bytes, time_bytes = self.index.encode()
        for suffix, data in ((INDEX_SUFFIX, index_bytes), (TIMEINDEX_SUFFIX, time_bytes)):
            # The directory is not fsynced here: a roll fsyncs it once for both index files and
            # the new segment (PartitionLog._roll), and an index whose rename a crash undid is
            # only a cache that recovery checks against the log and rebuilds.
            replace_file(self.path(suffix), data, sync_dir=False)

    def flush(self) -> None:
        if self.dirty:
            fsyncs.fdatasync(self._file())
            self.dirty = False

    def close(self) -> None:
        """Close the descriptor without flushing (callers flush first when they must)."""
        if self.fd >= 0:
            fd, self.fd = self.fd, -1
            self.files.forget(self)
            os.close(fd)

    def delete(self) -> None:
        """Close and unlink. The .log goes first: without it the leftovers are orphans that the
        next open removes, whereas a .log without its index is merely rescanned."""
        self.close()
        for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIMEINDEX_SUFFIX):
            self.path(suffix).unlink(missing_ok=True)

    def retention_timestamp_ms(self) -> int:
        """The newest batch time, or the file's mtime when producers sent no timestamps."""
        if self.max_timestamp >= 0:
            return self.max_timestamp
        return int(os.stat(self.path()).st_mtime * 1000)

    # ----------------------------------------------------------------------- append
    def append(
        self,
        view: memoryview,
        batches: list[BatchInfo],
        first_offset: int,
        leader_epoch: int,
        fsync: bool,
    ) -> int:
        """Write validated batches at the end with rewritten offsets; returns the next offset.

        The payload is never copied: each batch becomes two iovecs, a fresh 16-byte prefix
        (baseOffset, batchLength, partitionLeaderEpoch) and a memoryview of the client's bytes
        from magic onwards.
        """
        start = self.size
        fd = self._file()
        try:
            if len(batches) == 1:
                # The common case, kept free of list building and loops.
                b = batches[0]
                iov: list[bytes | memoryview] = [
                    _pack_prefix(first_offset, b.size - LOG_OVERHEAD, leader_epoch),
                    view[b.position + _PREFIX_SIZE : b.position + b.size],
                ]
                if os.pwritev(fd, iov, start) != b.size:
                    os.ftruncate(fd, start)  # short write: redo it the careful way
                    _pwritev_all(fd, iov, start)
            else:
                iov = []
                offset = first_offset
                for b in batches:
                    iov.append(_pack_prefix(offset, b.size - LOG_OVERHEAD, leader_epoch))
                    iov.append(view[b.position + _PREFIX_SIZE : b.position + b.size])
                    offset += b.last_offset_delta + 1
                _pwritev_all(fd, iov, start)
            if fsync:
                fsyncs.fdatasync(fd)
        except OSError as exc:
            # All-or-nothing: cut off whatever part of this append reached the file.
            with contextlib.suppress(OSError):
                os.ftruncate(fd, start)
            raise KafkaStorageError(f"append to {self.path()} failed: {exc}") from exc
        pos = start
        offset = first_offset
        for b in batches:
            self._note_batch(pos, b.size, offset, b.last_offset_delta, b.max_timestamp)
            pos += b.size
            offset += b.last_offset_delta + 1
        self.dirty = not fsync
        return offset

    # --------------------------------------------------------------------- truncate
    def truncate_to(self, offset: int) -> None:
        """Drop every batch holding an offset at or after ``offset`` (a batch straddling it
        goes whole: batches are never split), durably; the index is rebuilt by a scan of what
        remains. Rare (a replica cutting a tail no leader has), so the full scan is affordable.
        """
        fd = self._file()
        pos = self.index.position_for_offset(max(0, offset - self.base_offset))
        cut = self.size
        while pos < self.size:
            head = self._pread(_WALK_BYTES, pos)
            if len(head) < _WALK_BYTES:
                raise KafkaStorageError(f"{self.path()} is shorter than its recorded size")
            base, length = _unpack_length(head, 0)
            if base + _unpack_last_delta(head, LAST_OFFSET_DELTA_AT)[0] >= offset:
                cut = pos
                break
            pos += length + LOG_OVERHEAD
        if cut == self.size:
            return
        try:
            os.ftruncate(fd, cut)
            fsyncs.fdatasync(fd)
        except OSError as exc:
            raise KafkaStorageError(f"truncation of {self.path()} failed: {exc}") from exc
        self._reset()
        end, why = self._scan(0, self.base_offset, cut)
        if end != cut:
            raise KafkaStorageError(f"{self.path()} failed its scan after truncation: {why}")
        self.dirty = False

    # ------------------------------------------------------------------------- read
    def _pread(self, n: int, position: int) -> bytes:
        try:
            return os.pread(self._file(), n, position)
        except OSError as exc:
            raise KafkaStorageError(f"read of {self.path()} failed: {exc}") from exc

    def read(self, offset: int, max_bytes: int) -> bytes | memoryview:
        """Whole batches from the one containing ``offset`` (which must be in this segment).

        One pread normally serves the whole call: it starts at the sparse index entry and reads
        max_bytes plus one index interval ahead, the header walk runs over that buffer, and the
        result is a memoryview slice of it (no copy). Reads never go past the recorded size,
        so a concurrent append can never be seen half-written.
        """
        size = self.size
        pos = self.index.position_for_offset(offset - self.base_offset)
        ahead = max(max_bytes, 0) + self.index_interval + HEADER_SIZE
        buf = self._pread(min(ahead, size - pos), pos)
        bstart = pos
        # 1. Walk headers from the index entry to the batch containing the offset.
        while True:
            rel = pos - bstart
            if rel + _WALK_BYTES > len(buf):
                buf = self._pread(min(ahead, size - pos), pos)
                bstart = pos
                rel = 0
                if len(buf) < _WALK_BYTES:
                    raise KafkaStorageError(f"{self.path()} is shorter than its recorded size")
            base, length = _unpack_length(buf, rel)
            if base + _unpack_last_delta(buf, rel + LAST_OFFSET_DELTA_AT)[0] >= offset:
                break
            pos += length + LOG_OVERHEAD
        first = pos
        # 2. The last whole-batch boundary within max_bytes (at least one batch): jump close
        #    to it with the index, then walk.
        limit = first + max_bytes
        if limit >= size:
            end = size
        else:
            end = max(first + length + LOG_OVERHEAD, self.index.position_at_or_before(limit))
            while end < limit:
                rel = end - bstart
                if rel < 0 or rel + LOG_OVERHEAD > len(buf):
                    buf = self._pread(min(ahead, size - end), end)
                    bstart = end
                    rel = 0
                blen = _unpack_length(buf, rel)[1] + LOG_OVERHEAD
                if end + blen > limit:
                    break
                end += blen
        rel = first - bstart
        if rel >= 0 and end - bstart <= len(buf):
            if rel == 0 and end - bstart == len(buf):
                return buf
            return memoryview(buf)[rel : end - bstart]
        data = self._pread(end - first, first)
        if len(data) != end - first:
            raise KafkaStorageError(f"{self.path()} is shorter than its recorded size")
        return data

    def find_timestamp(self, timestamp: int, min_offset: int = 0) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record here at or after ``min_offset`` whose
        timestamp is at least ``timestamp``, as Kafka answers ListOffsets by time.

        The sparse time index and the batch headers' maxTimestamp find the first batch that
        can hold such a record; only that batch is read whole and its records' times walked
        (``record_times``). A batch whose records all fall before ``min_offset`` (the log start
        after DeleteRecords) or before the time is passed over. Records without a timestamp
        (-1) never match: the time asked for is never negative.
        """
        if self.max_timestamp < timestamp:
            return None
        window = _Window(self, 2 * self.index_interval + HEADER_SIZE)
        pos = self.index.position_for_time(timestamp)
        while pos < self.size:
            hdr = window.get(pos, _NAV_BYTES)
            base, length = _unpack_length(hdr, 0)
            last = base + _unpack_last_delta(hdr, LAST_OFFSET_DELTA_AT)[0]
            if _unpack_max_ts(hdr, MAX_TIMESTAMP_AT)[0] >= timestamp and last >= min_offset:
                batch = self._pread(length + LOG_OVERHEAD, pos)
                try:
                    for offset, ts in record_times(batch):
                        if ts >= timestamp and offset >= min_offset:
                            return offset, ts
                except (CorruptMessage, UnsupportedCompression) as exc:
                    raise KafkaStorageError(
                        f"{self.path()}: unreadable batch at offset {base}: {exc}") from exc
            pos += length + LOG_OVERHEAD
        return None


class _Window:
    """A read-ahead buffer over a segment: header walks hit memory, not one pread each."""

    __slots__ = ("buf", "readahead", "seg", "start")

    def __init__(self, seg: Segment, readahead: int) -> None:
        self.seg = seg
        self.readahead = readahead
        self.buf = b""
        self.start = 0

    def get(self, position: int, n: int) -> bytes | memoryview:
        rel = position - self.start
        if rel < 0 or rel + n > len(self.buf):
            want = min(max(n, self.readahead), self.seg.size - position)
            self.buf = self.seg._pread(want, position)
            self.start = position
            rel = 0
            if len(self.buf) < n:
                raise KafkaStorageError(f"{self.seg.path()} is shorter than its recorded size")
        if rel == 0 and n == len(self.buf):
            return self.buf
        return memoryview(self.buf)[rel : rel + n]
