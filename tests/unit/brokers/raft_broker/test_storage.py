"""What a Raft node keeps on disk comes back as written; a crash's torn append is dropped; a
damaged vote file is one clear error, never a reset."""

from __future__ import annotations

from pathlib import Path

import pytest

from brokers.raft_broker.raft.log import HardState, Snapshot
from brokers.raft_broker.raft.messages import Entry
from brokers.raft_broker.storage import RaftStorage, StorageError

pytestmark = pytest.mark.filesystem


def _entries(first: int, n: int, term: int = 1) -> list[Entry]:
    return [Entry(term, i, f"e{i}".encode()) for i in range(first, first + n)]


def test_vote_entries_and_snapshot_come_back(tmp_path: Path) -> None:
    s = RaftStorage(tmp_path)
    s.append(_entries(1, 5))
    s.save_hard_state(HardState(3, 2, 5))
    s.close()
    back = RaftStorage(tmp_path)
    assert back.entries == _entries(1, 5)
    # The vote and term are kept; the commit index is learnt again from the leader.
    assert back.hard_state == HardState(3, 2, 0)
    back.save_snapshot(Snapshot(3, 1, b"image"), replaces_log=False)
    back.close()
    again = RaftStorage(tmp_path)
    assert again.snapshot == Snapshot(3, 1, b"image")
    assert [e.index for e in again.entries] == [4, 5]
    again.save_snapshot(Snapshot(9, 2, b"leader's"), replaces_log=True)
    assert again.entries == []


def test_a_later_leaders_entries_replace_the_overwritten_tail(tmp_path: Path) -> None:
    s = RaftStorage(tmp_path)
    s.append(_entries(1, 5))
    s.append(_entries(4, 3, term=2))
    s.close()
    assert [(e.index, e.term) for e in RaftStorage(tmp_path).entries] == [
        (1, 1), (2, 1), (3, 1), (4, 2), (5, 2), (6, 2)]


def test_a_torn_append_is_dropped_on_load(tmp_path: Path) -> None:
    s = RaftStorage(tmp_path)
    s.append(_entries(1, 3))
    s.close()
    log = tmp_path / "log"
    whole = log.read_bytes()
    log.write_bytes(whole[:-2])  # the last frame cut short by a crash
    back = RaftStorage(tmp_path)
    assert [e.index for e in back.entries] == [1, 2]
    back.append(_entries(3, 1))  # appends go on after the sound prefix
    back.close()
    assert [e.index for e in RaftStorage(tmp_path).entries] == [1, 2, 3]


def test_a_damaged_vote_file_is_one_clear_error(tmp_path: Path) -> None:
    (tmp_path / "vote.json").write_text("{not json")
    with pytest.raises(StorageError, match=r"vote\.json: not a Raft vote file"):
        RaftStorage(tmp_path)
