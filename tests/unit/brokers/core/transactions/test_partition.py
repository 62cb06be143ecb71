"""PartitionTxns (the last stable offset and the aborted list) and the marker batch format."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch

from brokers.core.errors import CorruptMessage
from brokers.core.protocol.records import iter_batches
from brokers.core.transactions.markers import marker_batch, marker_is_commit, read_marker
from brokers.core.transactions.partition import AbortedTxn, PartitionTxns


def test_open_transactions_hold_the_last_stable_offset_back():
    t = PartitionTxns()
    assert t.last_stable_offset(10) == 10
    t.on_data(7, 3)
    t.on_data(7, 5)  # the same transaction: its first offset stays
    t.on_data(8, 4)
    assert t.last_stable_offset(10) == 3
    assert t.last_stable_offset(2) == 2  # never above the high watermark
    t.on_marker(7, 6, commit=True)
    assert t.last_stable_offset(10) == 4 and t.aborted == []
    t.on_marker(8, 7, commit=False)
    assert t.last_stable_offset(10) == 10
    assert t.aborted == [AbortedTxn(8, 4, 7)]


def test_a_marker_with_nothing_open_changes_nothing():
    t = PartitionTxns()
    t.on_marker(9, 0, commit=False)
    assert t.aborted == [] and t.last_stable_offset(1) == 1


def test_aborted_between_and_retention():
    t = PartitionTxns()
    for pid, first, marker in ((1, 0, 2), (2, 3, 5), (3, 6, 9)):
        t.on_data(pid, first)
        t.on_marker(pid, marker, commit=False)
    assert [a.producer_id for a in t.aborted_between(0, 100)] == [1, 2, 3]
    assert [a.producer_id for a in t.aborted_between(3, 6)] == [2]
    assert [a.producer_id for a in t.aborted_between(2, 3)] == [1]  # its marker is at 2
    assert [a.producer_id for a in t.aborted_between(10, 20)] == []
    t.drop_before(5)
    assert [a.producer_id for a in t.aborted] == [2, 3]


events = st.lists(st.tuples(st.integers(0, 3), st.sampled_from(["data", "commit", "abort"])),
                  max_size=40)


@settings(max_examples=200, deadline=None)
@given(events=events, start=st.integers(0, 45), width=st.integers(0, 45))
def test_matches_a_brute_force_model(events, start, width):
    """Every offset holds one event; the model recomputes everything from the whole history."""
    t = PartitionTxns()
    for offset, (pid, kind) in enumerate(events):
        if kind == "data":
            t.on_data(pid, offset)
        else:
            t.on_marker(pid, offset, commit=kind == "commit")
    opened: dict[int, int] = {}
    aborted = []
    for offset, (pid, kind) in enumerate(events):
        if kind == "data":
            opened.setdefault(pid, offset)
        elif pid in opened:
            first = opened.pop(pid)
            if kind == "abort":
                aborted.append((pid, first, offset))
    hw = len(events)
    assert t.last_stable_offset(hw) == min([hw, *opened.values()])
    end = start + width
    assert [tuple(a) for a in t.aborted_between(start, end)] == [
        a for a in aborted if a[2] >= start and a[1] < end]
    rebuilt = PartitionTxns()
    rebuilt.load([(o, pid, True, None if k == "data" else k == "commit", 0)
                  for o, (pid, k) in enumerate(events)])
    assert rebuilt.aborted == t.aborted and rebuilt.open_transactions == t.open_transactions


def test_a_late_repeat_of_a_marker_does_not_end_the_next_transaction():
    """A marker numbered at or below the last one written for its producer is a repeat: the
    offset of the marker already written, so a commit held in a one-way cut cannot commit the
    producer's next transaction here (which it may yet abort)."""
    t = PartitionTxns()
    t.on_data(7, 0)
    assert t.repeated_marker(7, 1) is None
    t.on_marker(7, 2, commit=True, txn_seq=1)
    t.on_data(7, 3)  # transaction 2 opens
    assert t.repeated_marker(7, 1) == 2  # transaction 1's marker again: already written at 2
    assert t.repeated_marker(7, 2) is None and t.is_open(7)
    assert t.repeated_marker(8, 1) is None  # numbered per producer
    assert t.repeated_marker(7, 0) is None  # unnumbered (older logs): always written
    t.on_marker(7, 5, commit=False, txn_seq=2)
    assert t.repeated_marker(7, 1) == t.repeated_marker(7, 2) == 5
    rebuilt = PartitionTxns()
    rebuilt.load([(0, 7, True, None, 0), (2, 7, True, True, 1), (3, 7, True, None, 0),
                  (5, 7, True, False, 2)])
    assert rebuilt.repeated_marker(7, 2) == 5 and rebuilt.repeated_marker(7, 3) is None
    assert rebuilt.aborted == t.aborted == [AbortedTxn(7, 3, 5)]


@pytest.mark.parametrize("commit", [True, False])
def test_marker_batch_is_kafkas_control_batch(commit):
    raw = marker_batch(42, 3, commit, coordinator_epoch=5, timestamp_ms=1000)
    (h,) = iter_batches(raw, verify_crc=True)
    assert (h.producer_id, h.producer_epoch, h.base_sequence, h.records_count) == (42, 3, -1, 1)
    assert h.is_control and h.is_transactional
    assert marker_is_commit(raw) is commit and read_marker(raw) == (commit, 5)
    # kafka-python, an independent reader, sees the same control record.
    batch = DefaultRecordBatch(bytearray(raw))
    assert batch.validate_crc() and batch.is_control_batch and batch.is_transactional
    (record,) = list(batch)
    assert record.key == (b"\x00\x00\x00\x01" if commit else b"\x00\x00\x00\x00")
    assert record.value == b"\x00\x00\x00\x00\x00\x05"


def test_a_garbled_control_record_is_corrupt():
    raw = bytearray(marker_batch(1, 0, True, 0, 0))
    raw[-9] = 0x7F  # the key's type: neither abort nor commit
    with pytest.raises(CorruptMessage):
        marker_is_commit(raw)
    with pytest.raises(CorruptMessage):
        marker_is_commit(raw[:64])
