"""Offsets file and node state file: durable, replayable, tolerant of a torn tail."""

from __future__ import annotations

import pytest

from brokers.core.coordinator import OffsetAndMetadata, TopicPartition
from brokers.core.errors import UserError
from brokers.dsbs_broker.tables.offsets import OffsetLog, OffsetTable
from brokers.dsbs_broker.tables.state import NodeState, StateFile


@pytest.mark.filesystem
def test_offset_log_replays_newest_per_key_and_skips_a_torn_tail(tmp_path):
    path = tmp_path / "offsets.jsonl"
    log = OffsetLog(path)
    assert log.open() == []
    t = OffsetTable(1)
    tp = TopicPartition("t", 0)
    for off in (5, 9, 3):  # the last commit wins even when it moves backwards (a seek)
        t.commit("g", {tp: OffsetAndMetadata(off)}, 1000)
    log.append(t.unpersisted, fsync=True, live=1)
    log.close()
    with open(path, "a") as f:
        f.write('{"g": "g", "t": "t", "p"')  # crash mid-line
    log2 = OffsetLog(path)
    entries = log2.open()
    log2.close()
    assert [e.offset for e in entries] == [3]
    t2 = OffsetTable(1)
    t2.load(entries)
    assert t2.fetch("g", None)[tp].offset == 3
    # Compaction on open rewrote the file to the surviving entries.
    assert len(path.read_text().splitlines()) == 1


def test_merge_is_last_writer_wins_and_idempotent():
    a, b = OffsetTable(1), OffsetTable(2)
    tp = TopicPartition("t", 0)
    e1 = a.commit("g", {tp: OffsetAndMetadata(10)}, 1000)
    e2 = b.commit("g", {tp: OffsetAndMetadata(20)}, 2000)
    assert a.merge(e2) == e2 and a.merge(e1) == [] and a.merge(e2) == []
    assert a.fetch("g", [tp])[tp].offset == 20
    # A later commit on a, even with a slow clock, beats what it has seen.
    a.commit("g", {tp: OffsetAndMetadata(30)}, 500)
    assert b.merge(a.unpersisted[-1:]) and b.fetch("g", None)[tp].offset == 30


@pytest.mark.filesystem
def test_state_file_round_trip_and_node_mismatch(tmp_path):
    sf = StateFile(tmp_path)
    assert sf.load(3) == NodeState(3)
    sf.store(NodeState(3, 7, 2000))
    assert sf.load(3) == NodeState(3, 7, 2000)
    with pytest.raises(UserError):
        sf.load(4)
