"""Recovery on open: torn tails, corrupt CRCs, garbage, broken indexes, missing segments."""

import logging
import os
import struct
from pathlib import Path

import pytest

from brokers.core.config import StorageConfig
from brokers.core.storage import PartitionLog
from tests.support.batches import build_batch, parse_batches, stored_form

# Every test here works on real files (partition logs in a temporary directory).
pytestmark = pytest.mark.filesystem

SEG = dict(segment_bytes=1024, index_interval_bytes=128)


def write_log(directory: Path, n: int, **kw) -> list[tuple[int, bytes]]:
    """Append n batches and close; returns (base offset, stored bytes) per batch."""
    log = PartitionLog.open(directory, StorageConfig(**kw))
    out = []
    for i in range(n):
        b = build_batch([f"r{i}-{j}".encode().ljust(12, b"_") for j in range(1 + i % 3)],
                        base_timestamp=1000 + i)
        r = log.append(b)
        out.append((r.base_offset, stored_form(b, r.base_offset)))
    log.close()
    return out


def read_all(log: PartitionLog) -> bytes:
    got = b""
    off = log.log_start_offset
    while off < log.log_end_offset:
        chunk = bytes(log.read(off, 1 << 20))
        got += chunk
        off = parse_batches(chunk)[-1].last_offset + 1
    return got


def segment_files(d: Path) -> list[Path]:
    return sorted(d.glob("*.log"))


def reopen(d: Path, **kw) -> PartitionLog:
    return PartitionLog.open(d, StorageConfig(**kw))


def assert_prefix(log: PartitionLog, stored: list[tuple[int, bytes]], keep: int) -> None:
    assert read_all(log) == b"".join(raw for _, raw in stored[:keep])
    expected_end = stored[keep][0] if keep < len(stored) else log.log_end_offset
    assert log.log_end_offset == expected_end


@pytest.fixture
def warnings(caplog):
    caplog.set_level(logging.WARNING, logger="twinbench.storage")
    return caplog


def test_half_written_last_batch_is_truncated(tmp_path, warnings):
    d = tmp_path / "t-0"
    stored = write_log(d, 5)
    seg = segment_files(d)[-1]
    size = seg.stat().st_size
    cut = len(stored[-1][1]) // 2
    os.truncate(seg, size - cut)
    log = reopen(d)
    assert_prefix(log, stored, 4)
    assert seg.stat().st_size == size - len(stored[-1][1])
    assert any(f"dropped {len(stored[-1][1]) - cut} byte" in r.getMessage()
               for r in warnings.records)
    # The log continues at the right offset, and the next open is clean.
    r = log.append(build_batch([b"again"]))
    assert r.base_offset == stored[4][0]
    log.close()
    warnings.clear()
    log = reopen(d)
    assert log.log_end_offset == stored[4][0] + 1
    assert not warnings.records
    log.close()


def test_corrupt_crc_in_last_batch_is_truncated(tmp_path, warnings):
    d = tmp_path / "t-0"
    stored = write_log(d, 4)
    seg = segment_files(d)[-1]
    with open(seg, "r+b") as f:
        f.seek(-3, os.SEEK_END)
        byte = f.read(1)
        f.seek(-3, os.SEEK_END)
        f.write(bytes([byte[0] ^ 0x40]))
    log = reopen(d)
    assert_prefix(log, stored, 3)
    assert "CRC" in warnings.text
    log.close()


def test_garbage_appended_is_dropped(tmp_path, warnings):
    d = tmp_path / "t-0"
    stored = write_log(d, 4)
    seg = segment_files(d)[-1]
    size = seg.stat().st_size
    with open(seg, "ab") as f:
        f.write(os.urandom(300))
    log = reopen(d)
    assert_prefix(log, stored, 4)
    assert seg.stat().st_size == size
    assert "dropped 300 byte" in warnings.text
    log.close()


def test_zero_filled_tail_is_dropped(tmp_path, warnings):
    # What a filesystem can leave after a crash: the size grew but the data never landed.
    d = tmp_path / "t-0"
    stored = write_log(d, 3)
    with open(segment_files(d)[-1], "ab") as f:
        f.write(b"\0" * 4096)
    log = reopen(d)
    assert_prefix(log, stored, 3)
    log.close()


def test_valid_batch_with_wrong_offset_is_not_kept(tmp_path, warnings):
    # A CRC-valid batch stamped with an offset that does not follow: stale bytes, not data.
    d = tmp_path / "t-0"
    stored = write_log(d, 3)
    with open(segment_files(d)[-1], "ab") as f:
        f.write(stored[0][1])  # a copy of batch 0, baseOffset 0 again
    log = reopen(d)
    assert_prefix(log, stored, 3)
    assert "baseOffset 0" in warnings.text
    log.close()


def test_torn_tail_in_active_segment_with_many_segments(tmp_path, warnings):
    d = tmp_path / "t-0"
    stored = write_log(d, 60, **SEG)
    segs = segment_files(d)
    assert len(segs) > 3
    os.truncate(segs[-1], segs[-1].stat().st_size - 5)
    log = reopen(d, **SEG)
    assert_prefix(log, stored, 59)
    log.close()


def test_whole_active_segment_torn_to_nothing(tmp_path):
    d = tmp_path / "t-0"
    stored = write_log(d, 60, **SEG)
    last = segment_files(d)[-1]
    base = int(last.name[:20])
    os.truncate(last, 10)
    log = reopen(d, **SEG)
    keep = next(i for i, (b, _) in enumerate(stored) if b == base)
    assert_prefix(log, stored, keep)
    assert log.log_end_offset == base
    log.close()


def test_corrupt_closed_segment_index_is_rebuilt(tmp_path, warnings):
    d = tmp_path / "t-0"
    stored = write_log(d, 60, **SEG)
    first_index = d / "00000000000000000000.index"
    assert first_index.stat().st_size > 0
    first_index.write_bytes(b"\xff" * 7)  # torn
    log = reopen(d, **SEG)
    assert_prefix(log, stored, 60)
    assert not warnings.records  # nothing lost, so nothing to warn about
    log.close()
    assert first_index.stat().st_size % 8 == 0  # rewritten


def test_index_entry_pointing_mid_batch_falls_back_to_full_scan(tmp_path):
    d = tmp_path / "t-0"
    stored = write_log(d, 60, **SEG)
    idx = d / "00000000000000000000.index"
    data = bytearray(idx.read_bytes())
    rel, pos = struct.unpack_from(">II", data, len(data) - 8)
    struct.pack_into(">II", data, len(data) - 8, rel, pos + 3)
    idx.write_bytes(bytes(data))
    log = reopen(d, **SEG)
    assert_prefix(log, stored, 60)
    log.close()


def test_missing_index_files_are_rebuilt(tmp_path):
    d = tmp_path / "t-0"
    stored = write_log(d, 60, **SEG)
    for p in d.glob("*.index"):
        p.unlink()
    for p in d.glob("*.timeindex"):
        p.unlink()
    (d / "00000000000000000000.index.tmp").write_bytes(b"junk")
    log = reopen(d, **SEG)
    assert_prefix(log, stored, 60)
    assert log.offset_for_timestamp(1030) == (stored[30][0], 1030)
    log.close()
    assert not list(d.glob("*.tmp"))


def test_corruption_in_closed_segment_truncates_there_and_drops_later(tmp_path, warnings):
    d = tmp_path / "t-0"
    stored = write_log(d, 60, **SEG)
    segs = segment_files(d)
    victim = segs[1]
    size = victim.stat().st_size
    with open(victim, "r+b") as f:  # flip a byte in the last batch of segment 1
        f.seek(size - 2)
        b = f.read(1)
        f.seek(size - 2)
        f.write(bytes([b[0] ^ 1]))
    log = reopen(d, **SEG)
    next_base = int(segs[2].name[:20])
    keep = next(i for i, (b, _) in enumerate(stored) if b == next_base) - 1
    assert_prefix(log, stored, keep)
    assert len(segment_files(d)) == 2
    assert "deleting" in warnings.text
    # Appends go on from the recovered end, into the recovered segment or a new one.
    r = log.append(build_batch([b"z"]))
    assert r.base_offset == stored[keep][0]
    log.close()


def test_gap_between_segments_drops_the_later_ones(tmp_path, warnings):
    d = tmp_path / "t-0"
    stored = write_log(d, 60, **SEG)
    segs = segment_files(d)
    segs[2].unlink()  # offsets of segment 2 vanish: 3.. can no longer follow contiguously
    log = reopen(d, **SEG)
    keep = next(i for i, (b, _) in enumerate(stored) if b == int(segs[2].name[:20]))
    assert_prefix(log, stored, keep)
    assert "does not follow" in warnings.text
    assert not list(d.glob(f"{segs[3].name[:20]}.*"))
    log.close()


def test_oldest_segments_missing_is_a_later_log_start(tmp_path):
    # Exactly the state retention leaves (plus orphan index files from a crash mid-delete).
    d = tmp_path / "t-0"
    stored = write_log(d, 60, **SEG)
    segs = segment_files(d)
    segs[0].unlink()
    log = reopen(d, **SEG)
    start = int(segs[1].name[:20])
    assert log.log_start_offset == start
    assert not (d / "00000000000000000000.index").exists()
    keep_from = next(i for i, (b, _) in enumerate(stored) if b == start)
    assert read_all(log) == b"".join(raw for _, raw in stored[keep_from:])
    log.close()


def test_empty_directory_and_stray_files(tmp_path):
    d = tmp_path / "t-0"
    d.mkdir()
    (d / "leader-epoch-checkpoint").write_text("0\n")
    (d / "notasegment.log").write_bytes(b"x")
    log = reopen(d)
    assert (log.log_start_offset, log.log_end_offset) == (0, 0)
    log.close()
