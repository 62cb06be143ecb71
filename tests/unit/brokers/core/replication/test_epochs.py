"""The leader-epoch cache: assignment, OffsetForLeaderEpoch lookups, cuts, checkpoint text."""

from __future__ import annotations

from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from brokers.core.errors import KafkaStorageError
from brokers.core.replication.epochs import (
    UNDEFINED_EPOCH,
    UNDEFINED_OFFSET,
    EpochEntry,
    LeaderEpochCache,
    from_checkpoint,
)

UNDEFINED = (UNDEFINED_EPOCH, UNDEFINED_OFFSET)


def _cache(*pairs: tuple[int, int]) -> LeaderEpochCache:
    return LeaderEpochCache(EpochEntry(e, o) for e, o in pairs)


def test_only_a_new_epoch_changes_the_cache():
    c = LeaderEpochCache()
    assert c.assign(0, 0)
    assert not c.assign(0, 5)  # more batches of the same epoch
    assert c.assign(2, 10)
    assert not c.assign(-1, 11)  # an unreplicated batch
    assert c.entries == (EpochEntry(0, 0), EpochEntry(2, 10))


def test_an_epoch_that_wrote_nothing_is_replaced_by_the_next_at_the_same_offset():
    c = _cache((0, 0), (1, 10))
    assert c.assign(2, 10)
    assert c.entries == (EpochEntry(0, 0), EpochEntry(2, 10))


def test_an_older_or_contradicted_entry_goes():
    c = _cache((0, 0), (3, 10), (4, 20))
    c.assign(2, 15)  # a log cut and rewritten in epoch 2 (entries 3, 4 describe the cut part)
    assert c.entries == (EpochEntry(0, 0), EpochEntry(2, 15))


def test_end_offset_for():
    c = _cache((1, 0), (3, 10), (6, 25))
    assert c.end_offset_for(6, 40) == (6, 40)  # the latest epoch ends at the log end
    assert c.end_offset_for(3, 40) == (3, 25)
    assert c.end_offset_for(4, 40) == (3, 25)  # no epoch 4 here: 3 is the largest below
    assert c.end_offset_for(1, 40) == (1, 10)
    assert c.end_offset_for(0, 40) == (0, 0)  # older than the log: nothing of it here
    assert c.end_offset_for(7, 40) == UNDEFINED  # newer than any epoch here
    assert c.end_offset_for(UNDEFINED_EPOCH, 40) == UNDEFINED
    assert LeaderEpochCache().end_offset_for(3, 40) == UNDEFINED


def test_truncate_from_end_and_start():
    c = _cache((1, 0), (3, 10), (6, 25))
    assert not c.truncate_from_end(30)
    assert c.truncate_from_end(25)
    assert c.entries == (EpochEntry(1, 0), EpochEntry(3, 10))
    assert c.truncate_from_start(12)
    assert c.entries == (EpochEntry(3, 12),)
    assert not c.truncate_from_start(12)
    assert not c.truncate_from_start(5)


def test_checkpoint_text_is_kafkas_layout():
    c = _cache((1, 0), (3, 10))
    assert c.encode() == "0\n2\n1 0\n3 10\n"
    assert LeaderEpochCache.decode(c.encode()).entries == c.entries
    assert LeaderEpochCache.decode("0\n0\n").entries == ()


@pytest.mark.parametrize("text,why", [
    ("", "version"),
    ("1\n0\n", "version"),
    ("0\nx\n", "not a number"),
    ("0\n2\n1 0\n", "count says 2"),
    ("0\n1\n1\n", "line 3"),
    ("0\n1\n-1 0\n", "line 3"),
    ("0\n1\na b\n", "line 3"),
    ("0\n2\n3 10\n1 20\n", "grow"),
    ("0\n2\n1 10\n3 10\n", "grow"),
])
def test_a_damaged_checkpoint_is_an_error_naming_the_file(text, why):
    with pytest.raises(KafkaStorageError, match=f"p-0/leader-epoch-checkpoint: .*{why}"):
        LeaderEpochCache.decode(text, "p-0/leader-epoch-checkpoint")


@given(st.lists(st.tuples(st.integers(0, 50), st.integers(0, 1_000)), max_size=30))
def test_entries_always_grow_and_survive_the_checkpoint(assignments):
    c = LeaderEpochCache()
    for epoch, offset in assignments:
        c.assign(epoch, offset)
        entries = c.entries
        assert all(a.epoch < b.epoch and a.start_offset < b.start_offset
                   for a, b in pairwise(entries))
        assert entries[-1] == EpochEntry(epoch, offset) or (
            entries[-1].epoch == epoch and entries[-1].start_offset <= offset)
    assert LeaderEpochCache.decode(c.encode()).entries == c.entries


@given(st.text(max_size=60))
def test_any_text_decodes_or_fails_cleanly(text):
    """Garbage is a KafkaStorageError, never another exception; what decodes re-encodes."""
    try:
        cache = LeaderEpochCache.decode(text)
    except KafkaStorageError:
        return
    assert LeaderEpochCache.decode(cache.encode()).entries == cache.entries


# --- the checkpoint at start: trusted only where the log agrees --------------------------------
def _log(*runs: tuple[int, int]) -> list[int]:
    """A log as the epoch of each offset: runs of (epoch, records)."""
    return [epoch for epoch, n in runs for _ in range(n)]


def _cache_of(log: list[int], start: int = 0) -> list[EpochEntry]:
    cache = LeaderEpochCache()
    for offset in range(start, len(log)):
        cache.assign(log[offset], offset)
    return list(cache.entries)


def test_a_checkpoint_the_log_agrees_with_is_completed_from_its_last_entry():
    log = _log((0, 5), (2, 5), (3, 5))
    text = LeaderEpochCache([EpochEntry(0, 0), EpochEntry(2, 5)]).encode()
    cache, scan_from = from_checkpoint(text, 0, len(log), log.__getitem__)
    assert scan_from == 5  # only the batches of epoch 2 on are read
    for offset in range(scan_from, len(log)):
        cache.assign(log[offset], offset)
    assert list(cache.entries) == _cache_of(log)


@pytest.mark.parametrize("text", [
    None,  # no file
    "0\n2\n0 0\n",  # torn: the count says two entries
    "garbage",
    # Stale: written before a cut at 7 and a new epoch from there (a crash before the rewrite).
    LeaderEpochCache([EpochEntry(0, 0), EpochEntry(2, 5)]).encode(),
    # An epoch recorded later than it began.
    LeaderEpochCache([EpochEntry(0, 0), EpochEntry(4, 9)]).encode(),
])
def test_a_missing_damaged_or_stale_checkpoint_costs_a_full_scan(text):
    log = _log((0, 5), (4, 10))
    cache, scan_from = from_checkpoint(text, 0, len(log), log.__getitem__)
    assert (list(cache.entries), scan_from) == ([], 0)


def test_a_checkpoint_past_the_log_end_or_below_its_start_is_cut_to_the_log():
    log = _log((1, 10), (2, 10))
    text = LeaderEpochCache([EpochEntry(1, 0), EpochEntry(2, 10), EpochEntry(5, 30)]).encode()
    cache, scan_from = from_checkpoint(text, 4, len(log), log.__getitem__)
    assert list(cache.entries) == [EpochEntry(1, 4), EpochEntry(2, 10)] and scan_from == 10
