"""The in-memory Raft log: conflict truncation, compaction and the snapshot base, slicing."""

from __future__ import annotations

import pytest

from brokers.raft_broker.raft.log import RaftLog
from brokers.raft_broker.raft.messages import Entry


def entries(*terms: int, start: int = 1) -> list[Entry]:
    return [Entry(t, start + k, b"%d/%d" % (t, start + k)) for k, t in enumerate(terms)]


def test_an_empty_log_ends_at_zero_with_term_zero() -> None:
    log = RaftLog()
    assert (log.last_index, log.last_term, log.first_index) == (0, 0, 1)
    assert log.term_at(0) == 0
    assert log.term_at(1) is None


def test_append_adds_new_entries_and_keeps_ones_already_held() -> None:
    log = RaftLog()
    assert log.append(entries(1, 1, 2), committed=0) == 1
    # The same entries again (a duplicated Append) change nothing.
    assert log.append(entries(1, 2, start=2), committed=0) is None
    # An overlapping Append writes only what is new.
    assert log.append(entries(2, 2, start=3), committed=0) == 4
    assert [e.term for e in log.slice(1, 10)] == [1, 1, 2, 2]


def test_a_conflicting_entry_deletes_it_and_all_that_follow() -> None:
    log = RaftLog(entries=entries(1, 1, 1, 1))
    assert log.append([Entry(2, 3, b"new")], committed=2) == 3
    assert log.last_index == 3
    assert log.entry(3) == Entry(2, 3, b"new")
    assert log.entry(2) == entries(1, 1)[1]


def test_truncating_a_committed_entry_is_refused() -> None:
    log = RaftLog(entries=entries(1, 1, 1))
    with pytest.raises(AssertionError, match="committed"):
        log.append([Entry(2, 2, b"")], committed=2)
    assert log.last_index == 3


def test_entries_must_be_contiguous() -> None:
    log = RaftLog(entries=entries(1))
    with pytest.raises(ValueError, match="gap"):
        log.append(entries(1, start=3), committed=0)
    with pytest.raises(ValueError, match="follows"):
        RaftLog(entries=[Entry(1, 1), Entry(1, 3)])


def test_compaction_keeps_the_term_of_its_index_as_the_base() -> None:
    log = RaftLog(entries=entries(1, 1, 2, 3))
    log.compact(3)
    assert (log.snapshot_index, log.snapshot_term, log.first_index) == (3, 2, 4)
    assert log.term_at(3) == 2  # the base still answers the log-matching check
    assert log.term_at(2) is None  # compacted
    assert log.term_at(4) == 3
    assert len(log) == 1
    with pytest.raises(IndexError):
        log.entry(3)
    with pytest.raises(IndexError, match="compacted"):
        log.slice(2, 5)
    with pytest.raises(IndexError):
        log.compact(2)  # below the base
    with pytest.raises(IndexError):
        log.compact(9)  # past the end
    log.compact(4)
    assert (log.last_index, log.last_term, len(log)) == (4, 3, 0)


def test_appending_after_compaction_skips_compacted_entries() -> None:
    log = RaftLog(entries=entries(1, 1, 1))
    log.compact(2)
    assert log.append(entries(1, 1, 1, 2), committed=2) == 4
    assert [e.term for e in log.slice(3, 10)] == [1, 2]
    # A conflict past the base truncates as usual.
    assert log.append(entries(1, 1, 3), committed=2) == 3
    assert [e.term for e in log.slice(3, 10)] == [3]


def test_restore_replaces_the_log_by_the_snapshot_base() -> None:
    log = RaftLog(entries=entries(1, 1, 1))
    log.restore(10, 4)
    assert (log.snapshot_index, log.last_index, log.last_term, len(log)) == (10, 10, 4, 0)
    assert log.term_at(10) == 4
    assert log.append(entries(4, start=11), committed=10) == 11
    log2 = RaftLog(10, 4, entries(4, 5, start=11))
    assert log2.term_at(12) == 5


def test_slice_is_half_open_and_capped() -> None:
    log = RaftLog(entries=entries(1, 1, 1, 1, 1))
    assert [e.index for e in log.slice(2, 5)] == [2, 3, 4]
    assert [e.index for e in log.slice(2, 100, max_count=2)] == [2, 3]
    assert [e.index for e in log.slice(4, 100)] == [4, 5]
    assert log.slice(6, 100) == []
    assert log.slice(3, 3) == []


def test_up_to_date_compares_last_term_then_last_index() -> None:
    log = RaftLog(entries=entries(1, 2, 2))
    assert log.is_up_to_date(3, 2)
    assert log.is_up_to_date(1, 3)  # a later term wins even on a shorter log
    assert not log.is_up_to_date(2, 2)
    assert not log.is_up_to_date(9, 1)


def test_the_conflict_hint_skips_entries_of_later_terms() -> None:
    log = RaftLog(entries=entries(1, 1, 3, 3, 3))
    # The leader's entry 5 has term 2: our entries of term 3 cannot match it.
    assert log.conflict_hint(5, 2, floor=0) == 2
    # The leader is past our end: try from our last entry.
    assert log.conflict_hint(9, 3, floor=0) == 5
    # Never below the commit index.
    assert log.conflict_hint(5, 1, floor=4) == 4
