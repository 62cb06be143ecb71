"""PartitionLog: append/read round trips, roll-over, reopen, retention, flush policy, rejections."""

import os
import struct
from pathlib import Path

import pytest

from brokers.core.config import FlushMode, FlushPolicy, StorageConfig
from brokers.core.errors import (
    CorruptMessage,
    InvalidRecord,
    KafkaStorageError,
    MessageTooLarge,
    OffsetOutOfRange,
)
from brokers.core.logs import AppendResult
from brokers.core.protocol.records import ATTR_LOG_APPEND_TIME, Record
from brokers.core.storage import PartitionLog
from tests.support.batches import build_batch, parse_batches, stored_form
from tests.support.record_builder import build_batch as record_batch

# Every test here works on real files (partition logs in a temporary directory).
pytestmark = pytest.mark.filesystem


def cfg(**kw) -> StorageConfig:
    return StorageConfig(**kw)


def open_log(tmp_path: Path, **kw) -> PartitionLog:
    return PartitionLog.open(tmp_path / "t-0", cfg(**kw))


def batch_of(n: int, tag: str = "v", size: int = 8, ts: int = 1_700_000_000_000) -> bytes:
    return build_batch([f"{tag}{i}".encode().ljust(size, b".") for i in range(n)],
                       base_timestamp=ts)


def files(log: PartitionLog, suffix: str = ".log") -> list[str]:
    return sorted(p.name for p in log.directory.iterdir() if p.name.endswith(suffix))


# ------------------------------------------------------------------------- basics
def test_new_log_is_empty(tmp_path):
    log = open_log(tmp_path)
    assert (log.log_start_offset, log.log_end_offset, log.dirty) == (0, 0, False)
    assert log.read(0, 1000) == b""
    assert files(log) == ["00000000000000000000.log"]
    assert log.offset_for_timestamp(0) is None
    log.close()


def test_append_assigns_contiguous_offsets_and_stores_client_bytes(tmp_path):
    log = open_log(tmp_path)
    b1, b2 = batch_of(3, "a"), batch_of(5, "b")
    assert log.append(b1) == AppendResult(0, 2, 0)
    assert log.append(memoryview(bytearray(b2)), leader_epoch=4) == AppendResult(3, 7, 0)
    assert log.log_end_offset == 8
    data = bytes(log.read(0, 1 << 20))
    assert data == stored_form(b1, 0) + stored_form(b2, 3, 4)
    parsed = parse_batches(data)
    assert [p.base_offset for p in parsed] == [0, 3]
    assert [p.leader_epoch for p in parsed] == [-1, 4]
    assert parsed[1].values[4] == b"b4......"
    log.close()


def test_several_batches_in_one_append(tmp_path):
    log = open_log(tmp_path)
    payload = batch_of(2, "x") + batch_of(1, "y") + batch_of(4, "z")
    assert log.append(payload) == AppendResult(0, 6, 0)
    assert [p.base_offset for p in parse_batches(log.read(0, 1 << 20))] == [0, 2, 3]
    log.close()


def test_read_from_middle_of_batch_returns_containing_batch(tmp_path):
    log = open_log(tmp_path)
    for i in range(10):
        log.append(batch_of(5, str(i)))
    for offset in (0, 1, 4, 5, 23, 49):
        first = parse_batches(log.read(offset, 1))[0]
        assert first.base_offset <= offset <= first.last_offset
    log.close()


def test_max_bytes_whole_batches_but_at_least_one(tmp_path):
    log = open_log(tmp_path)
    sizes = []
    for i in range(6):
        b = batch_of(3, str(i))
        sizes.append(len(b))
        log.append(b)
    assert len(parse_batches(log.read(0, 0))) == 1  # at least one, even for max_bytes 0
    assert len(parse_batches(log.read(0, sizes[0] - 1))) == 1
    assert len(parse_batches(log.read(0, sizes[0] + sizes[1]))) == 2
    assert len(parse_batches(log.read(0, sizes[0] + sizes[1] + 5))) == 2
    assert len(parse_batches(log.read(3, sizes[1] + sizes[2]))) == 2
    assert len(parse_batches(log.read(0, 1 << 20))) == 6
    big = batch_of(50, "big", size=100)
    log.append(big)
    assert len(log.read(18, 10)) == len(big)  # larger than max_bytes, still returned whole
    log.close()


def test_out_of_range_offsets(tmp_path):
    log = open_log(tmp_path)
    log.append(batch_of(3))
    assert log.read(3, 100) == b""
    with pytest.raises(OffsetOutOfRange):
        log.read(4, 100)
    with pytest.raises(OffsetOutOfRange):
        log.read(-1, 100)
    log.close()


def test_read_uses_sparse_index_with_many_batches(tmp_path):
    log = open_log(tmp_path, index_interval_bytes=256)
    stored = []
    for i in range(300):
        b = batch_of(1 + i % 4, str(i))
        r = log.append(b)
        stored.append((r.base_offset, r.last_offset, stored_form(b, r.base_offset)))
    seg = log._segments[-1]
    assert len(seg.index) > 50
    for base, last, raw in stored[::7]:
        for off in (base, last):
            assert bytes(log.read(off, 1))[: len(raw)] == raw
    log.close()


# ---------------------------------------------------------------------- segments
def test_roll_over_and_reads_across_segments(tmp_path):
    log = open_log(tmp_path, segment_bytes=1024, index_interval_bytes=128)
    expected = b""
    offsets = []
    for i in range(40):
        b = batch_of(2, str(i), size=20)
        r = log.append(b)
        offsets.append(r.base_offset)
        expected += stored_form(b, r.base_offset)
    names = files(log)
    assert len(names) > 3
    assert names[0] == "00000000000000000000.log"
    # Segment names are the base offsets, and bases follow each other contiguously.
    bases = [int(n[:20]) for n in names]
    assert all(b in offsets for b in bases)
    for s in log._segments:
        assert s.size <= 1024
    # Read everything segment by segment (reads stop at a segment end).
    got = b""
    off = 0
    while off < log.log_end_offset:
        chunk = bytes(log.read(off, 1 << 20))
        assert chunk
        got += chunk
        off = parse_batches(chunk)[-1].last_offset + 1
    assert got == expected
    # Closed segments have index files; rolling fsyncs.
    assert len(files(log, ".index")) == len(names) - 1
    log.close()


def test_batch_bigger_than_segment_gets_its_own_segment(tmp_path):
    log = open_log(tmp_path, segment_bytes=1024)
    log.append(batch_of(1))
    big = batch_of(30, "big", size=60)
    assert len(big) > 1024
    r = log.append(big)
    log.append(batch_of(1, "after"))
    assert [int(n[:20]) for n in files(log)] == [0, 1, 31]
    assert bytes(log.read(r.base_offset, 1)) == stored_form(big, r.base_offset)
    log.close()


def test_reopen_after_clean_close(tmp_path):
    c = dict(segment_bytes=2048, index_interval_bytes=200)
    log = open_log(tmp_path, **c)
    stored = []
    for i in range(60):
        b = batch_of(3, str(i), size=16, ts=1000 + i)
        r = log.append(b)
        stored.append((r.base_offset, stored_form(b, r.base_offset)))
    end, nseg = log.log_end_offset, len(log._segments)
    log.close()
    log.close()  # idempotent
    log2 = open_log(tmp_path, **c)
    assert (log2.log_start_offset, log2.log_end_offset, len(log2._segments)) == (0, end, nseg)
    for base, raw in stored:
        assert bytes(log2.read(base, 1)) == raw
    assert log2.offset_for_timestamp(1030) == (90, 1030)
    r = log2.append(batch_of(1, "new"))
    assert r.base_offset == end
    log2.close()


def test_closed_log_refuses_use(tmp_path):
    log = open_log(tmp_path)
    log.close()
    with pytest.raises(KafkaStorageError):
        log.append(batch_of(1))
    with pytest.raises(KafkaStorageError):
        log.read(0, 1)


# ---------------------------------------------------------------------- time index
def test_offset_for_timestamp(tmp_path):
    log = open_log(tmp_path, segment_bytes=1024, index_interval_bytes=64)
    # Timestamps go backwards now and then, as producer clocks do.
    times = [100, 200, 150, 300, 250, 400, 500, 450, 600] * 4
    times = [t + 1000 * (i // 9) for i, t in enumerate(times)]
    for i, t in enumerate(times):
        log.append(build_batch([b"x" * 30, b"y"], base_timestamp=t - 5, timestamp_deltas=[0, 5]))
        assert log.log_end_offset == 2 * (i + 1)
    # Kafka answers the first *record* at or after the time: each batch holds (t-5, t).
    records = [(2 * i + k, t - 5 + 5 * k) for i, t in enumerate(times) for k in (0, 1)]
    for target in [0, 95, 96, 100, 101, 146, 160, 201, 296, 299, 300, 301, 3596, 3600, 3601]:
        want = next(((o, ts) for o, ts in records if ts >= target), None)
        assert log.offset_for_timestamp(target) == want, target
    log.close()


def test_offset_for_timestamp_inside_one_batch(tmp_path):
    """librdkafka's 0054-offset_time: two records in one batch, 1234 and 999999999999."""
    log = open_log(tmp_path)
    log.append(build_batch([b"a", b"b"], base_timestamp=1234,
                           timestamp_deltas=[0, 999999999999 - 1234]))
    assert log.offset_for_timestamp(1234) == (0, 1234)
    assert log.offset_for_timestamp(1235) == (1, 999999999999)
    assert log.offset_for_timestamp(999999999999) == (1, 999999999999)
    assert log.offset_for_timestamp(1000000000000) is None
    log.close()


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_offset_for_timestamp_in_compressed_batch(tmp_path, codec):
    log = open_log(tmp_path)
    recs = [Record(timestamp=1000 + 10 * i, key=None, value=b"v%d" % i) for i in range(20)]
    log.append(record_batch(recs, timestamp_ms=1000, compression=codec))
    assert log.offset_for_timestamp(1055) == (6, 1060)
    log.close()


def test_offset_for_timestamp_log_append_time(tmp_path):
    """Under LogAppendTime every record has the batch's time: the batch's first record."""
    log = open_log(tmp_path)
    log.append(build_batch([b"a", b"b", b"c"], base_timestamp=500, timestamp_deltas=[0, 1, 2],
                           attributes=ATTR_LOG_APPEND_TIME))
    assert log.offset_for_timestamp(501) == (0, 502)
    log.close()


def test_offset_for_timestamp_skips_records_without_time_and_below_log_start(tmp_path):
    log = open_log(tmp_path)
    log.append(build_batch([b"a", b"b"], base_timestamp=-1))  # no timestamps (-1)
    log.append(build_batch([b"c", b"d", b"e"], base_timestamp=100, timestamp_deltas=[0, 1, 2]))
    assert log.offset_for_timestamp(0) == (2, 100)
    log.delete_records(3)
    assert log.offset_for_timestamp(0) == (3, 101)
    log.delete_records(5)
    assert log.offset_for_timestamp(0) is None
    log.close()


# ---------------------------------------------------------------------- retention
def _fill(log: PartitionLog, n: int, ts) -> None:
    for i in range(n):
        log.append(batch_of(2, str(i), size=40, ts=ts(i)))


def test_time_retention_deletes_old_closed_segments_only(tmp_path):
    log = open_log(tmp_path, segment_bytes=1024, retention_ms=1000)
    _fill(log, 30, lambda i: 10_000 if i < 15 else 20_000)
    nseg = len(log._segments)
    assert nseg > 3
    end = log.log_end_offset
    # At 20_500 only segments whose newest batch is 10_000 are older than 1 s.
    deleted = log.enforce_retention(20_500)
    assert deleted >= 1
    assert all(s.max_timestamp == 20_000 for s in log._segments[:-1]) or len(log._segments) == 1
    assert log.log_start_offset == log._segments[0].base_offset > 0
    with pytest.raises(OffsetOutOfRange):
        log.read(0, 100)
    assert parse_batches(log.read(log.log_start_offset, 1))[0].base_offset == log.log_start_offset
    # Far in the future everything is expired, but the active segment stays.
    log.enforce_retention(10**12)
    assert len(log._segments) == 1
    assert log.log_end_offset == end
    assert files(log) == [f"{log.log_start_offset:020d}.log"]
    assert len(files(log, ".index")) == 0
    log.close()
    # The new start offset survives a restart (it is the first file's name).
    log2 = open_log(tmp_path, segment_bytes=1024, retention_ms=1000)
    assert (log2.log_start_offset, log2.log_end_offset) == (log.log_start_offset, end)
    log2.close()


def test_size_retention(tmp_path):
    log = open_log(tmp_path, segment_bytes=1024, retention_bytes=2500)
    _fill(log, 40, lambda i: 1000)
    assert log.size_bytes > 2500
    deleted = log.enforce_retention(0)
    assert deleted > 0
    assert log.size_bytes <= 2500 or len(log._segments) == 1
    assert log.enforce_retention(0) == 0
    log.close()


def test_size_retention_never_deletes_active_segment(tmp_path):
    log = open_log(tmp_path, segment_bytes=100_000, retention_bytes=10)
    _fill(log, 5, lambda i: 1)
    assert log.enforce_retention(10**12) == 0
    assert log.log_start_offset == 0
    log.close()


def test_no_retention_configured_keeps_everything(tmp_path):
    log = open_log(tmp_path, segment_bytes=1024)
    _fill(log, 30, lambda i: 1)
    assert log.enforce_retention(10**15) == 0
    log.close()


# ------------------------------------------------------------------- flush policy
@pytest.fixture
def fsyncs(monkeypatch):
    calls: list[int] = []
    real = os.fdatasync

    def counting(fd: int) -> None:
        calls.append(fd)
        real(fd)

    monkeypatch.setattr(os, "fdatasync", counting)
    return calls


def test_every_batch_fsyncs_before_returning(tmp_path, fsyncs):
    log = open_log(tmp_path, flush=FlushPolicy(FlushMode.EVERY_BATCH))
    for i in range(5):
        log.append(batch_of(2, str(i)))
        assert len(fsyncs) == i + 1
        assert not log.dirty
    log.close()
    assert len(fsyncs) == 5  # nothing dirty left to flush


def test_interval_policy_marks_dirty_and_flush_clears(tmp_path, fsyncs):
    log = open_log(tmp_path, flush=FlushPolicy(FlushMode.INTERVAL_MS, 50))
    log.append(batch_of(1))
    log.append(batch_of(1))
    assert log.dirty and fsyncs == []
    log.flush()
    assert not log.dirty and len(fsyncs) == 1
    log.flush()
    assert len(fsyncs) == 1  # nothing to do
    log.append(batch_of(1))
    log.close()
    assert len(fsyncs) == 2  # close flushes


def test_os_policy_never_fsyncs_on_append(tmp_path, fsyncs):
    log = open_log(tmp_path, segment_bytes=1024)
    for i in range(5):
        log.append(batch_of(1, str(i)))
    assert fsyncs == [] and log.dirty
    _fill(log, 30, lambda i: 1)  # rolls: each closed segment is fsynced once
    assert 0 < len(fsyncs) == len(log._segments) - 1
    log.close()


# ---------------------------------------------------------------------- rejections
def _corrupt(b: bytes, at: int, value: int) -> bytes:
    x = bytearray(b)
    x[at] = value
    return bytes(x)


@pytest.mark.parametrize(
    ("payload", "error"),
    [
        (lambda good: _corrupt(good, 16, 1), CorruptMessage),  # bad magic
        (lambda good: _corrupt(good, 17, good[17] ^ 0xFF), CorruptMessage),  # bad CRC
        (lambda good: good[:-2], CorruptMessage),  # truncated
        (lambda good: good + good[:30], CorruptMessage),  # trailing partial batch
        (lambda good: good + batch_of(300, "big", size=20), MessageTooLarge),  # oversized 2nd
        (lambda good: b"", InvalidRecord),
        (lambda good: good + struct.pack(">qi", 0, 2**31 - 1), MessageTooLarge),
    ],
)
def test_rejections_leave_the_log_unchanged(tmp_path, payload, error):
    log = open_log(tmp_path, max_batch_bytes=4096)
    good = batch_of(2)
    log.append(good)
    before = (log.log_end_offset, bytes(log.read(0, 1 << 20)), log._segments[-1].size)
    with pytest.raises(error):
        log.append(payload(good))
    after = (log.log_end_offset, bytes(log.read(0, 1 << 20)), log._segments[-1].size)
    assert after == before
    assert os.path.getsize(log._segments[-1].path()) == before[2]
    log.close()


def test_write_failure_truncates_partial_append(tmp_path, monkeypatch):
    from brokers.core.storage import segment as segmod

    log = open_log(tmp_path)
    log.append(batch_of(2))
    size = log._segments[-1].size
    real = os.pwritev

    def half_then_fail(fd, bufs, pos):
        real(fd, [bytes(bufs[0])], pos)  # part of the batch reaches the file
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(segmod.os, "pwritev", half_then_fail)
    with pytest.raises(KafkaStorageError):
        log.append(batch_of(3))
    monkeypatch.setattr(segmod.os, "pwritev", real)
    assert os.path.getsize(log._segments[-1].path()) == size
    assert log.log_end_offset == 2
    # Not retried: the log is offline until the broker restarts on a healthy disk.
    with pytest.raises(KafkaStorageError, match=r"offline: append .* No space left"):
        log.append(batch_of(1))
    with pytest.raises(KafkaStorageError, match="offline"):
        log.read(0, 1 << 20)
    log.close()
    assert log._segments[-1].fd == -1
    again = open_log(tmp_path)
    assert again.log_end_offset == 2
    assert again.append(batch_of(1)).base_offset == 2
    again.close()


def test_failed_fsync_is_not_retried(tmp_path, monkeypatch):
    """fsyncgate: after a failed fsync the kernel may have dropped the dirty pages, so a second
    fsync that succeeds would claim durability that is not there. The log goes offline."""
    from brokers.core.storage import segment as segmod

    log = open_log(tmp_path, flush=FlushPolicy(FlushMode.INTERVAL_MS, 50))
    log.append(batch_of(2))
    calls = []

    def failing(fd):
        calls.append(fd)
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(segmod.os, "fdatasync", failing)
    with pytest.raises(KafkaStorageError, match="Input/output error"):
        log.flush()
    with pytest.raises(KafkaStorageError, match="offline"):
        log.flush()
    log.close()  # releases descriptors without another fsync
    assert len(calls) == 1


def test_short_writes_are_completed(tmp_path, monkeypatch):
    from brokers.core.storage import segment as segmod

    real = os.pwritev

    def one_byte_at_a_time(fd, bufs, pos):
        first = next(bytes(b) for b in bufs if len(b))
        return real(fd, [first[:7]], pos)

    log = open_log(tmp_path)
    monkeypatch.setattr(segmod.os, "pwritev", one_byte_at_a_time)
    b1 = batch_of(3) + batch_of(2, "q")
    log.append(b1)
    monkeypatch.setattr(segmod.os, "pwritev", real)
    assert [p.base_offset for p in parse_batches(log.read(0, 1 << 20))] == [0, 3]
    log.close()


def test_append_does_not_copy_the_payload(tmp_path, monkeypatch):
    from brokers.core.storage import segment as segmod

    seen = []
    real = os.pwritev

    def spy(fd, bufs, pos):
        seen.append(list(bufs))
        return real(fd, bufs, pos)

    monkeypatch.setattr(segmod.os, "pwritev", spy)
    log = open_log(tmp_path)
    wire = bytearray(b"frame-header" + batch_of(4))
    log.append(memoryview(wire)[12:])
    (iov,) = seen
    assert len(iov) == 2 and len(iov[0]) == 16
    assert isinstance(iov[1], memoryview) and iov[1].obj is wire  # a view, not a copy
    log.close()


def test_reads_with_batches_larger_than_the_read_ahead(tmp_path):
    log = open_log(tmp_path, index_interval_bytes=1)
    stored = []
    for i in range(12):
        b = batch_of(3 + i, str(i), size=900)
        r = log.append(b)
        stored.append((r.base_offset, r.last_offset, stored_form(b, r.base_offset)))
    for base, last, raw in stored:
        for off in (base, (base + last) // 2, last):
            assert bytes(log.read(off, 0)) == raw
            assert bytes(log.read(off, len(raw) + 10)) == raw
    two = stored[3][2] + stored[4][2]
    assert bytes(log.read(stored[3][0] + 1, len(two))) == two
    log.close()


# -------------------------------------------------------------------- DeleteRecords
def test_delete_records_moves_the_start_durably_and_drops_whole_segments_below(tmp_path):
    log = open_log(tmp_path, segment_bytes=1024)
    for i in range(6):
        log.append(batch_of(2, tag=f"b{i}", size=300))
    assert log.segment_count > 2 and log.log_end_offset == 12
    bases = [int(n.split(".")[0]) for n in files(log)]
    target = bases[2] + 1  # inside the third segment
    assert log.delete_records(target) == target
    assert log.log_start_offset == target
    assert [int(n.split(".")[0]) for n in files(log)] == bases[2:]  # wholly below: gone
    with pytest.raises(OffsetOutOfRange):
        log.read(target - 1, 1000)
    assert log.read(target, 1000)  # the batch holding the start is still served whole
    assert log.delete_records(1) == target  # below the start: nothing changes
    with pytest.raises(OffsetOutOfRange):
        log.delete_records(13)  # beyond the high watermark
    log.close()
    again = open_log(tmp_path, segment_bytes=1024)
    assert (again.log_start_offset, again.log_end_offset) == (target, 12)
    with pytest.raises(OffsetOutOfRange):
        again.read(target - 1, 1000)
    assert again.delete_records(12) == 12 and again.read(12, 1000) == b""
    again.close()
