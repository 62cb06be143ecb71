"""Truncating a partition log (a replica cutting a tail the leader does not have)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brokers.core.config import StorageConfig
from brokers.core.storage import PartitionLog
from tests.support.batches import build_batch, parse_batches

pytestmark = pytest.mark.filesystem

CONFIG = StorageConfig(segment_bytes=1024, index_interval_bytes=128)


def _fill(directory, sizes: list[int]) -> PartitionLog:
    log = PartitionLog.open(directory, CONFIG)
    for i, n in enumerate(sizes):
        log.append(build_batch([b"v%d-%d" % (i, j) * 8 for j in range(n)]), leader_epoch=i)
    return log


def _offsets(log: PartitionLog) -> list[int]:
    out, offset = [], log.log_start_offset
    while offset < log.log_end_offset:
        batches = parse_batches(log.read(offset, 1 << 20))
        out += [b.base_offset for b in batches]
        offset = batches[-1].last_offset + 1
    return out


def test_a_cut_inside_a_batch_removes_the_whole_batch(tmp_path):
    log = _fill(tmp_path / "p", [3, 3, 3])
    assert log.truncate_to(4) == 3
    assert _offsets(log) == [0]
    log.append(build_batch([b"new"]), leader_epoch=7)
    assert _offsets(log) == [0, 3]


def test_a_cut_at_or_past_the_end_changes_nothing(tmp_path):
    log = _fill(tmp_path / "p", [2, 2])
    assert log.truncate_to(4) == 4
    assert log.truncate_to(99) == 4


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
          HealthCheck.function_scoped_fixture])
@given(st.lists(st.integers(1, 5), min_size=1, max_size=40), st.data())
def test_any_cut_survives_a_reopen_and_later_appends(tmp_path_factory, sizes, data):
    directory = tmp_path_factory.mktemp("p")
    log = _fill(directory, sizes)
    segments_before = log.segment_count
    ends = [sum(sizes[: i + 1]) for i in range(len(sizes))]
    cut = data.draw(st.integers(0, ends[-1]))
    expected_end = max([0, *[e for e in ends if e <= cut]])
    assert log.truncate_to(cut) == expected_end
    assert log.segment_count <= segments_before
    log.append(build_batch([b"after"]), leader_epoch=99)
    log.close()
    reopened = PartitionLog.open(directory, CONFIG)
    assert reopened.log_end_offset == expected_end + 1
    starts = [0, *ends][: len([e for e in ends if e <= cut])]
    assert _offsets(reopened) == [*starts, expected_end]
    reopened.close()
