"""The segment-descriptor budget: however many partitions and segments, at most the cap is open,
and every byte stays readable (descriptors are reopened on use)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from brokers.core.config import FlushMode, FlushPolicy, StorageConfig
from brokers.core.storage import LogManager, PartitionLog
from tests.support.batches import build_batch, parse_batches

# Every test here works on real files (partition logs in a temporary directory).
pytestmark = pytest.mark.filesystem


def open_segment_fds(root: Path) -> int:
    """Descriptors of this process pointing at a .log file under ``root``."""
    n = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(str(root)) and target.endswith(".log"):
            n += 1
    return n


def values(data) -> list[bytes]:
    return [v for b in parse_batches(bytes(data)) for v in b.values]


def test_many_partitions_share_a_capped_budget(tmp_path):
    m = LogManager(tmp_path, StorageConfig(max_open_segments=4))
    for p in range(30):
        m.get_or_create("t", p).append(build_batch([f"v{p}".encode()]))
        assert open_segment_fds(tmp_path) <= 4
    for p in range(30):  # every one readable, each read reopening an evicted file
        assert values(m.get("t", p).read(0, 1 << 20)) == [f"v{p}".encode()]
        assert open_segment_fds(tmp_path) <= 4
    for p in range(30):  # and appendable again
        assert m.get("t", p).append(build_batch([b"w"])).base_offset == 1
    assert len(m.files) <= 4
    m.close()
    assert open_segment_fds(tmp_path) == 0
    m = LogManager(tmp_path, StorageConfig(max_open_segments=4))
    assert len(m.load_existing()) == 30  # recovery keeps within the budget too
    assert open_segment_fds(tmp_path) <= 4
    assert values(m.get("t", 29).read(0, 1 << 20)) == [b"v29", b"w"]
    m.close()


def test_a_rolled_segment_gives_its_descriptor_back(tmp_path):
    log = PartitionLog.open(tmp_path / "t-0", StorageConfig(segment_bytes=1024))
    for i in range(40):
        log.append(build_batch([f"{i:04d}".encode() * 20]))
    assert log.segment_count > 5
    assert open_segment_fds(tmp_path) == 1  # only the active segment
    got, offset = [], 0
    while offset < log.log_end_offset:
        chunk = values(log.read(offset, 1 << 20))
        got.extend(chunk)
        offset += len(chunk)
    assert got == [f"{i:04d}".encode() * 20 for i in range(40)]
    log.close()
    reopened = PartitionLog.open(tmp_path / "t-0", StorageConfig(segment_bytes=1024))
    assert open_segment_fds(tmp_path) == 1  # closed segments are validated, then released
    reopened.close()


@pytest.fixture
def fsyncs(monkeypatch):
    from brokers.core.storage import segment as segmod

    calls: list[int] = []
    real = os.fdatasync

    def record(fd: int) -> None:
        calls.append(fd)
        real(fd)

    monkeypatch.setattr(segmod.os, "fdatasync", record)
    return calls


def test_an_evicted_segment_with_unflushed_appends_is_fsynced_first(tmp_path, fsyncs):
    """A write-back error after close() would never reach a descriptor opened later, so the
    budget flushes before it closes (whatever the flush policy)."""
    config = StorageConfig(max_open_segments=1, flush=FlushPolicy(FlushMode.INTERVAL_MS, 1000))
    m = LogManager(tmp_path, config)
    a = m.get_or_create("t", 0)
    a.append(build_batch([b"a"]))
    assert a.dirty and fsyncs == []
    m.get_or_create("t", 1)  # evicts t-0
    assert len(fsyncs) == 1 and not a.dirty
    assert m.flush_dirty() == 0
    m.close()
