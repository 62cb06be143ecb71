"""Property tests: any sequence of appends reads back as the stored bytes, from any offset."""

import tempfile
from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brokers.core.config import StorageConfig
from brokers.core.storage import PartitionLog
from tests.support.batches import build_batch, parse_batches, stored_form

# Every test here works on real files (partition logs in a temporary directory).
pytestmark = pytest.mark.filesystem

batch_st = st.lists(st.binary(min_size=0, max_size=120), min_size=1, max_size=6)
# One append call = 1-3 concatenated batches.
append_st = st.lists(batch_st, min_size=1, max_size=3)
SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def _fill(directory: Path, appends, segment_bytes: int, interval: int):
    config = StorageConfig(segment_bytes=segment_bytes, index_interval_bytes=interval)
    log = PartitionLog.open(directory, config)
    stored: list[tuple[int, int, bytes]] = []  # (base, last, bytes) per batch
    for epoch, group in enumerate(appends):
        raws = [build_batch(values, base_timestamp=epoch) for values in group]
        r = log.append(b"".join(raws), leader_epoch=epoch)
        off = r.base_offset
        for raw, values in zip(raws, group, strict=True):
            stored.append((off, off + len(values) - 1, stored_form(raw, off, epoch)))
            off += len(values)
        assert off == r.last_offset + 1 == log.log_end_offset
    return log, config, stored


def _check_reads(log: PartitionLog, stored, data) -> None:
    for _ in range(10):
        offset = data.draw(st.integers(0, log.log_end_offset))
        max_bytes = data.draw(st.integers(0, 2000))
        got = bytes(log.read(offset, max_bytes))
        if offset == log.log_end_offset:
            assert got == b""
            continue
        i = next(i for i, (b, last, _) in enumerate(stored) if b <= offset <= last)
        # The result is a run of consecutive stored batches starting with the containing one.
        expect = b""
        j = i
        while j < len(stored) and expect != got and len(expect) < len(got):
            expect += stored[j][2]
            j += 1
        assert got == expect
        assert len(got) <= max_bytes or j == i + 1
        # Maximal: the next batch would not fit, or lives in the next segment.
        if j < len(stored) and stored[j][0] not in log._bases:
            assert len(got) + len(stored[j][2]) > max(max_bytes, len(stored[i][2]))


@SETTINGS
@given(appends=st.lists(append_st, min_size=1, max_size=25),
       segment_bytes=st.sampled_from([1024, 2048, 1 << 20]),
       interval=st.sampled_from([1, 100, 4096]),
       data=st.data())
def test_reads_return_stored_bytes(appends, segment_bytes, interval, data):
    with tempfile.TemporaryDirectory() as tmp:
        log, config, stored = _fill(Path(tmp) / "p-0", appends, segment_bytes, interval)
        _check_reads(log, stored, data)
        # Offsets are contiguous batch to batch.
        assert all(a[1] + 1 == b[0] for a, b in pairwise(stored))
        log.close()
        # And the same holds after a reopen (index files of closed segments trusted).
        log = PartitionLog.open(Path(tmp) / "p-0", config)
        assert log.log_end_offset == stored[-1][1] + 1
        _check_reads(log, stored, data)
        log.close()


@SETTINGS
@given(appends=st.lists(append_st, min_size=1, max_size=15), cut=st.integers(1, 400))
def test_any_torn_tail_recovers_to_a_batch_prefix(appends, cut):
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp) / "p-0"
        log, config, stored = _fill(d, appends, 1 << 20, 100)
        log.close()
        seg = d / "00000000000000000000.log"
        size = seg.stat().st_size
        with open(seg, "r+b") as f:
            f.truncate(max(0, size - cut))
        log = PartitionLog.open(d, config)
        keep = [s for s in stored if sum(len(x[2]) for x in stored[: stored.index(s) + 1])
                <= size - cut]
        end = keep[-1][1] + 1 if keep else 0
        assert log.log_end_offset == end
        got = b""
        if end:
            got = bytes(log.read(0, 1 << 30))
        assert got == b"".join(s[2] for s in keep)
        assert [p.base_offset for p in parse_batches(got)] == [s[0] for s in keep]
        log.close()
