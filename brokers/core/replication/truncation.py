"""Where a returning replica cuts its log before it fetches from a new leader.

A replica that led (or followed) in an older epoch may hold records no in-sync replica copied;
the new leader never had them, and keeping them would make the two logs disagree at the same
offsets. The replica asks the leader, with OffsetForLeaderEpoch, where the leader's log of the
replica's latest epoch ends, and cuts there. When the leader does not have that epoch at all,
its answer names the largest epoch it has below it; records of the epochs in between are the
replica's alone, so it cuts to the start of its first epoch above the leader's, and asks again
about its (now older) latest epoch. Each round removes at least one epoch, so it ends.

Because an epoch has one leader, two logs that hold the same epoch at the same offset agree on
every record up to it; under that property the rounds stop exactly at the longest common prefix
of the two logs (tests/unit/brokers/core/replication/test_truncation.py checks it on generated
histories).

Sans-IO: ``next_cut`` is one round; the fetcher sends the requests and applies the cuts.
"""

from __future__ import annotations

from dataclasses import dataclass

from brokers.core.replication.epochs import UNDEFINED_EPOCH, UNDEFINED_OFFSET, LeaderEpochCache


@dataclass(frozen=True, slots=True)
class Cut:
    """One round's outcome: cut the log to end at ``end_offset`` (no cut when it is at or
    beyond the log end); when ``done`` is False, ask the leader again about the cache's
    latest epoch after the cut."""

    end_offset: int
    done: bool


def first_question(cache: LeaderEpochCache) -> int:
    """The epoch to ask the leader about: the replica's latest, or UNDEFINED when it has none
    (then it cuts to its high watermark without asking: ``no_epochs_cut``)."""
    return cache.latest_epoch


def no_epochs_cut(log_end_offset: int, high_watermark: int) -> Cut:
    """A log without epochs (written before replication) keeps what was committed: its records
    below the high watermark are on every in-sync replica."""
    return Cut(min(log_end_offset, high_watermark), True)


def next_cut(
    cache: LeaderEpochCache, log_end_offset: int, asked_epoch: int,
    leader_epoch: int, leader_end_offset: int, high_watermark: int,
) -> Cut:
    """One round: the leader answered (``leader_epoch``, ``leader_end_offset``) for
    ``asked_epoch``, this replica's latest epoch."""
    if leader_epoch == UNDEFINED_EPOCH or leader_end_offset == UNDEFINED_OFFSET:
        # The leader knows no epoch at or below ours (it is older than our log: a fenced or
        # confused leader). Keep only what was committed.
        return no_epochs_cut(log_end_offset, high_watermark)
    if leader_epoch == asked_epoch:
        return Cut(min(leader_end_offset, log_end_offset), True)
    # The leader lacks our latest epoch: everything we wrote after its epoch goes.
    own_epoch, own_end = cache.end_offset_for(leader_epoch, log_end_offset)
    if own_epoch == leader_epoch:
        return Cut(min(leader_end_offset, own_end, log_end_offset), True)
    end = min(leader_end_offset, own_end, log_end_offset)
    # Nothing of ours at or below the leader's epoch is left to compare: done.
    return Cut(end, own_epoch == UNDEFINED_EPOCH or end <= 0)
