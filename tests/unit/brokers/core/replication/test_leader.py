"""The leader's state machine of one replicated partition: high watermark, ISR, min ISR."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brokers.core.errors import NotEnoughReplicas, NotLeaderOrFollower, OffsetOutOfRange
from brokers.core.replication.leader import REFUSED_BACKOFF_MS, LeaderPartition

LAG = 30_000


def _leader(isr=(1, 2, 3), end=0, hw=0, now=0) -> LeaderPartition:
    return LeaderPartition(1, 5, (1, 2, 3), isr, log_end_offset=end, high_watermark=hw,
                           now_ms=now)


def test_high_watermark_waits_for_every_isr_member():
    p = _leader()
    assert p.on_append(10) is None  # followers have not fetched it
    assert p.on_follower_fetch(2, 10, 1) is None  # broker 3 still has nothing
    assert p.high_watermark == 0
    assert p.on_follower_fetch(3, 4, 1) == 4
    assert p.on_follower_fetch(3, 10, 2) == 10
    assert p.high_watermark == 10


def test_a_follower_past_the_leaders_log_end_is_refused_and_not_counted():
    """Its log holds another leader's records (two leaders of one epoch, a restarted leader's
    unflushed tail): counting its offset would commit records it does not hold."""
    p = _leader()
    p.on_append(10)
    assert p.on_follower_fetch(2, 10, 1) is None
    with pytest.raises(OffsetOutOfRange):
        p.on_follower_fetch(3, 15, 1)
    assert p.high_watermark == 0 and p.follower(3).log_end_offset <= 0


def test_a_retry_answered_from_its_first_copy_does_not_move_the_log_end_back():
    """Found by the whole-broker simulation (nemesis seed 3): an idempotent retry of the batch
    at offsets 226..227 arrives after the batch ending at 228; the handler reports the first
    copy's end (227). Taken as the log end, followers at 228 were refused for good."""
    p = _leader(end=226, hw=226)
    p.on_append(227)
    p.on_append(228)
    p.on_append(227)  # the duplicate
    assert p.log_end_offset == 228
    assert p.on_follower_fetch(2, 228, 1) is None  # not refused as past the log end
    assert p.on_follower_fetch(3, 228, 1) == 228


def test_a_follower_outside_the_isr_does_not_hold_the_high_watermark():
    p = _leader(isr=(1, 2))
    p.on_append(10)
    assert p.on_follower_fetch(3, 0, 1) is None
    assert p.on_follower_fetch(2, 10, 1) == 10


def test_a_leader_alone_in_the_isr_commits_its_own_appends():
    p = _leader(isr=(1,))
    assert p.on_append(7) == 7
    assert p.high_watermark == 7


def test_the_high_watermark_never_moves_back():
    p = _leader(end=10, hw=10)
    p.on_follower_fetch(2, 3, 1)  # a follower still truncating or catching up
    p.on_follower_fetch(3, 10, 1)
    assert p.high_watermark == 10


def test_a_new_leader_never_claims_more_than_its_log_holds():
    assert _leader(end=4, hw=9).high_watermark == 4


def test_fetch_from_a_broker_that_is_no_replica_is_refused():
    with pytest.raises(NotLeaderOrFollower):
        _leader().on_follower_fetch(9, 0, 1)


def test_a_follower_that_stops_fetching_is_proposed_out_after_the_lag_time():
    p = _leader(now=0)
    p.on_append(10)
    p.on_follower_fetch(2, 10, 1_000)
    assert p.propose(LAG, LAG) is None  # nobody lags yet: new ISR members start caught up
    assert p.propose(LAG + 1, LAG) == frozenset({1, 2})
    assert p.change_in_flight
    assert p.propose(LAG + 2, LAG) is None  # one proposal at a time
    assert p.high_watermark == 0  # a proposal changes nothing until it is committed
    assert p.isr_committed({1, 2}) == 10  # broker 3 no longer holds it back
    assert not p.change_in_flight


def test_a_follower_fetching_but_always_behind_lags_too():
    p = _leader()
    for t in range(0, 40):
        now = t * 1_000
        p.on_append((t + 1) * 10)
        p.on_follower_fetch(2, t * 10, now)  # one append behind: reaches the previous end
        p.on_follower_fetch(3, max(0, t - 5) * 10, now)  # five behind: never reaches it
    assert p.follower(3).last_caught_up_ms == 0  # the start of this leadership
    assert p.lagging(LAG, LAG) == frozenset()
    assert p.lagging(LAG + 1, LAG) == frozenset({3})  # broker 2 keeps up one fetch late


def test_a_follower_reaching_the_previous_log_end_counts_as_caught_up_then():
    p = _leader()
    p.on_append(10)
    p.on_follower_fetch(3, 5, 1_000)  # leader end at this fetch: 10
    p.on_append(20)
    p.on_follower_fetch(3, 10, 2_000)  # reached 10: caught up as of 1_000
    assert p.follower(3).last_caught_up_ms == 1_000


def test_a_caught_up_follower_rejoins_once_past_the_high_watermark_and_epoch_start():
    p = _leader(isr=(1, 2), end=10, hw=10)
    p.on_append(12)
    p.on_follower_fetch(2, 12, 1)
    assert p.high_watermark == 12
    p.on_follower_fetch(3, 9, 2)
    assert p.caught_up() == frozenset()  # below the epoch start (10): may hold an old tail
    p.on_follower_fetch(3, 11, 3)
    assert p.caught_up() == frozenset()  # below the high watermark
    p.on_follower_fetch(3, 12, 4)
    assert p.propose(5, LAG) == frozenset({1, 2, 3})
    p.isr_committed({1, 2, 3})
    assert p.isr == frozenset({1, 2, 3})


def test_a_refused_proposal_is_made_again_from_the_committed_isr():
    p = _leader()
    assert p.propose(LAG + 1, LAG) == frozenset({1})
    p.isr_refused()
    assert p.isr == frozenset({1, 2, 3})
    assert p.propose(LAG + 2, LAG) == frozenset({1})


def test_a_refused_proposal_is_not_made_again_before_the_backoff():
    """A store that refuses an expansion (a fenced broker) is not asked again on every fetch."""
    p = _leader()
    assert p.propose(LAG + 1, LAG) == frozenset({1})
    p.isr_refused(LAG + 1)
    assert p.propose(LAG + 1 + REFUSED_BACKOFF_MS - 1, LAG) is None
    assert p.propose(LAG + 1 + REFUSED_BACKOFF_MS, LAG) == frozenset({1})


def test_the_leader_is_always_in_its_isr_and_the_isr_within_the_replicas():
    p = _leader(isr=(2, 3, 7))
    assert p.isr == frozenset({1, 2, 3})
    p.isr_committed({9})
    assert p.isr == frozenset({1})


def test_min_insync_replicas():
    p = _leader(isr=(1, 2))
    p.check_min_isr(2)
    with pytest.raises(NotEnoughReplicas, match=r"min\.insync\.replicas is 3"):
        p.check_min_isr(3)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["append", "fetch", "shrink", "expand"]),
                          st.integers(1, 3), st.integers(0, 30)), max_size=60))
def test_high_watermark_is_never_above_what_every_isr_member_has(steps):
    """Whatever the order of appends, fetches and committed ISR changes, the high watermark
    never passes the log end an ISR member reported (or the high watermark when it joined),
    never moves back, and never passes the leader's own log end."""
    p = _leader()
    ends = {1: 0, 2: 0, 3: 0}
    joined_at = {1: 0, 2: 0, 3: 0}
    last_hw = 0
    for now, (kind, who, amount) in enumerate(steps):
        if kind == "append":
            ends[1] += amount
            p.on_append(ends[1])
        elif kind == "fetch" and who != 1:
            ends[who] = min(ends[1], ends[who] + amount)
            p.on_follower_fetch(who, ends[who], now)
        elif kind == "shrink" and who != 1:
            p.isr_committed(p.isr - {who})
        elif kind == "expand" and who != 1 and who not in p.isr:
            joined_at[who] = p.high_watermark
            p.isr_committed(p.isr | {who})
        hw = p.high_watermark
        assert last_hw <= hw <= ends[1]
        last_hw = hw
        for r in p.isr:
            assert hw <= max(ends[r], joined_at[r])


def test_a_replica_being_added_holds_the_high_watermark_already():
    """Should the store commit the expansion and the leader die, the new member may be elected:
    it must have every record below the high watermark."""
    p = _leader(isr=(1, 2), end=10, hw=10)
    p.on_follower_fetch(3, 10, 1)
    assert p.propose(2, LAG) == frozenset({1, 2, 3})
    p.on_append(15)
    assert p.on_follower_fetch(2, 15, 3) is None  # broker 3 is still at 10
    assert p.on_follower_fetch(3, 15, 4) == 15
    p.isr_refused()
