"""What a Raft node keeps on disk comes back as written; a crash's torn append is dropped; a
crash while a snapshot replaces the log leaves the old pair or the new one; a damaged vote file
is one clear error, never a reset."""

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
    log = tmp_path / "log.0"
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


def _crash_inside_a_snapshot(tmp_path: Path, *, after_rename: bool) -> None:
    """Stop as a crash would inside ``save_snapshot``: the next log is written, then (when
    ``after_rename``) the snapshot names it, and the old log is never removed."""
    import os
    import shutil

    s = RaftStorage(tmp_path)
    s.append(_entries(1, 4, term=1))
    s.close()
    shutil.copy(tmp_path / "log.0", tmp_path / "saved")
    s = RaftStorage(tmp_path)
    s.save_snapshot(Snapshot(6, 3, b"leader's"), replaces_log=True)
    s.close()
    # Undo what the crash never did: the old log is back, and maybe the old snapshot state.
    os.replace(tmp_path / "saved", tmp_path / "log.0")
    if not after_rename:
        (tmp_path / "snapshot").unlink()


def test_a_crash_before_the_snapshot_names_its_log_keeps_the_old_pair(tmp_path: Path) -> None:
    _crash_inside_a_snapshot(tmp_path, after_rename=False)
    back = RaftStorage(tmp_path)
    # Nothing acknowledged is lost: the entries are all there, the half-written switch gone.
    assert back.snapshot is None
    assert [(e.index, e.term) for e in back.entries] == [(1, 1), (2, 1), (3, 1), (4, 1)]
    assert sorted(p.name for p in tmp_path.glob("log.*")) == ["log.0"]


def test_a_crash_after_the_snapshot_names_its_log_keeps_the_new_pair(tmp_path: Path) -> None:
    _crash_inside_a_snapshot(tmp_path, after_rename=True)
    back = RaftStorage(tmp_path)
    # The leader's snapshot and none of the entries it replaced (they may conflict with it).
    assert back.snapshot == Snapshot(6, 3, b"leader's")
    assert back.entries == []
    assert sorted(p.name for p in tmp_path.glob("log.*")) == ["log.1"]
    back.append([Entry(3, 7, b"next")])
    back.close()
    assert [(e.index, e.term) for e in RaftStorage(tmp_path).entries] == [(7, 3)]


def test_a_directory_belongs_to_the_cluster_that_first_used_it(tmp_path: Path) -> None:
    RaftStorage(tmp_path, "one").close()
    RaftStorage(tmp_path, "one").close()  # the same cluster again: fine
    with pytest.raises(StorageError, match="holds the Raft log of cluster 'one', not of 'two'"):
        RaftStorage(tmp_path, "two")
    (tmp_path / "cluster.json").write_text("{")
    with pytest.raises(StorageError, match="not a cluster id file"):
        RaftStorage(tmp_path, "one")
