"""The handlers' replication helpers, pure: the high-watermark cap and the epoch check."""

from __future__ import annotations

import pytest

from brokers.core.errors import FencedLeaderEpoch, UnknownLeaderEpoch
from brokers.core.handlers.fetch import _below, _check_epoch
from brokers.core.replication.leader import LeaderPartition
from tests.support.batches import build_batch, parse_batches, stored_form


def _log(sizes: list[int]) -> bytes:
    out, offset = b"", 0
    for n in sizes:
        out += stored_form(build_batch([b"x"] * n), offset, 3)
        offset += n
    return out


@pytest.mark.parametrize("hw,bases", [(0, []), (2, [0]), (5, [0, 2]), (9, [0, 2, 5]),
                                      (99, [0, 2, 5])])
def test_consumers_get_whole_batches_below_the_high_watermark(hw, bases):
    data = _log([2, 3, 4])
    assert [b.base_offset for b in parse_batches(_below(data, hw))] == bases


def test_a_followers_epoch_must_be_the_leaders():
    leader = LeaderPartition(1, 5, (1, 2), (1, 2), log_end_offset=0, high_watermark=0, now_ms=0)
    _check_epoch(leader, 5)
    _check_epoch(leader, -1)  # no epoch named: nothing to check
    with pytest.raises(FencedLeaderEpoch):
        _check_epoch(leader, 4)
    with pytest.raises(UnknownLeaderEpoch):
        _check_epoch(leader, 6)
