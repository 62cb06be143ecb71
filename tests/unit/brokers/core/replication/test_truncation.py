"""Truncation on an epoch change: a returning replica keeps exactly what the new leader has.

The hypothesis test generates histories of a three-replica partition (leaders elected in
growing epochs, clean or not, appending; followers copying a prefix of their leader's log),
then lets one replica, as a follower of the last leader, run the OffsetForLeaderEpoch rounds
of ``truncation.next_cut`` against it. Its log must end up as the longest prefix the two logs
share: nothing the leader lacks survives, and nothing the leader has is cut needlessly.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from brokers.core.replication.epochs import LeaderEpochCache
from brokers.core.replication.truncation import Cut, first_question, next_cut, no_epochs_cut


def _cache_of(log: list[int], current_epoch: int | None = None) -> LeaderEpochCache:
    """The epoch cache a log of per-offset epochs has (plus a leader's own current epoch)."""
    cache = LeaderEpochCache()
    for offset, epoch in enumerate(log):
        cache.assign(epoch, offset)
    if current_epoch is not None:
        cache.assign(current_epoch, len(log))
    return cache


def _common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def _truncate(follower: list[int], leader: list[int], leader_epoch: int, hw: int) -> int:
    """Run the rounds; the follower's log end afterwards."""
    leader_cache = _cache_of(leader, leader_epoch)
    log = list(follower)
    cache = _cache_of(log)
    for _ in range(len(follower) + 2):  # each round removes an epoch: this bound is generous
        asked = first_question(cache)
        if asked < 0:
            cut = no_epochs_cut(len(log), hw)
        else:
            answer = leader_cache.end_offset_for(asked, len(leader))
            cut = next_cut(cache, len(log), asked, *answer, hw)
        del log[cut.end_offset:]
        cache.truncate_from_end(cut.end_offset)
        if cut.done:
            return len(log)
    raise AssertionError("truncation did not finish")


step = st.one_of(
    st.tuples(st.just("elect"), st.integers(0, 2)),
    st.tuples(st.just("append"), st.integers(1, 4)),
    st.tuples(st.just("copy"), st.integers(0, 2), st.integers(0, 20)),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(step, max_size=40), st.integers(0, 2), st.integers(0, 2))
def test_a_returning_replica_keeps_exactly_the_prefix_it_shares_with_the_leader(
        steps, last_leader, follower):
    logs: list[list[int]] = [[], [], []]
    epoch, leader = 0, 0
    for s in steps:
        if s[0] == "elect":  # clean or unclean alike: a new epoch, one leader
            epoch, leader = epoch + 1, s[1]
        elif s[0] == "append":
            logs[leader] += [epoch] * s[1]
        else:
            _, who, extra = s
            if who != leader:  # the follower ends up with a prefix of the leader's log
                keep = _common_prefix(logs[who], logs[leader])
                logs[who] = logs[leader][: min(len(logs[leader]), keep + extra)]
    if follower == last_leader:
        follower = (follower + 1) % 3
    epoch += 1  # the last election
    leader_log, follower_log = logs[last_leader], logs[follower]
    shared = _common_prefix(follower_log, leader_log)
    end = _truncate(follower_log, leader_log, epoch, hw=shared)
    assert end == shared


def test_an_old_leaders_uncommitted_tail_goes():
    # Broker A led epoch 1 and wrote 5 records, 3 reached B; B leads epoch 2 and appended 2.
    a, b = [1, 1, 1, 1, 1], [1, 1, 1, 2, 2]
    assert _truncate(a, b, 2, hw=3) == 3


def test_a_replica_with_epochs_the_leader_never_had_cuts_back_in_rounds():
    # The replica led epochs 2 and 4 alone; the leader's log has epochs 1 and 3 after them.
    follower, leader = [1, 1, 2, 2, 4, 4], [1, 1, 1, 3, 3]
    assert _truncate(follower, leader, 5, hw=2) == 2


def test_an_unexplained_answer_keeps_only_what_was_committed():
    cache = _cache_of([3, 3, 3])
    assert next_cut(cache, 3, 3, -1, -1, high_watermark=2) == Cut(2, True)
