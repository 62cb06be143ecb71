"""A transaction's pending offsets and its group marker (no I/O): committed or dropped once,
and a late repeat of an earlier transaction's marker leaves the next transaction's alone."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping

import pytest

from brokers.core.coordinator import OffsetAndMetadata, TopicPartition
from brokers.core.errors import CoordinatorNotAvailable
from brokers.core.transactions.offsets import (
    complete_pending,
    done_key,
    is_done_key,
    is_pending,
    parse_pending,
    pending_key,
)
from brokers.dsbs_broker.packets.wire import OffsetEntry
from brokers.dsbs_broker.tables.validation import offset_problem

P0 = TopicPartition("src", 0)
PID = 4000


class Offsets:
    """The offset half of the Coordinator seam, in memory; ``fail_deletes`` deletes fail
    first (a coordinator stopping mid-marker)."""

    def __init__(self) -> None:
        self.stored: dict[TopicPartition, OffsetAndMetadata] = {}
        self.fail_deletes = 0

    async def fetch_offsets(self, group_id: str, partitions: Iterable[TopicPartition] | None
                            ) -> dict[TopicPartition, OffsetAndMetadata]:
        return dict(self.stored)

    async def commit_offsets(self, group_id: str,
                             offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
        self.stored.update(offsets)

    async def delete_offsets(self, group_id: str,
                             partitions: Iterable[TopicPartition] | None) -> None:
        if self.fail_deletes:
            self.fail_deletes -= 1
            raise CoordinatorNotAvailable("stopped")
        for tp in list(partitions or ()):
            self.stored.pop(tp, None)

    def pend(self, offset: int) -> None:
        self.stored[pending_key(PID, P0)] = OffsetAndMetadata(offset)

    def real(self) -> int | None:
        om = self.stored.get(P0)
        return None if om is None else om.offset


def marker(store: Offsets, commit: bool, txn_seq: int) -> int:
    return asyncio.run(complete_pending(store, "g", PID, commit, txn_seq))  # type: ignore[arg-type]


def test_a_late_repeat_of_a_marker_leaves_the_next_transactions_offsets_alone():
    store = Offsets()
    store.pend(10)
    assert marker(store, True, 1) == 1  # transaction 1 commits offset 10
    assert store.real() == 10 and pending_key(PID, P0) not in store.stored
    store.pend(20)  # transaction 2's TxnOffsetCommit
    # Transaction 1's marker again (held in a one-way cut, or its old coordinator's): a
    # repeat, so transaction 2's pending offset stays, neither committed nor dropped.
    assert marker(store, True, 1) == 0 and marker(store, False, 1) == 0
    assert store.stored[pending_key(PID, P0)] == OffsetAndMetadata(20) and store.real() == 10
    assert marker(store, False, 2) == 1  # transaction 2 aborts: its offset goes
    assert store.real() == 10 and pending_key(PID, P0) not in store.stored
    assert store.stored[done_key(PID)] == OffsetAndMetadata(2)


def test_a_marker_stopped_midway_is_applied_whole_by_its_retry():
    store = Offsets()
    store.pend(10)
    store.fail_deletes = 1
    with pytest.raises(CoordinatorNotAvailable):
        marker(store, True, 1)  # copied, not yet deleted, not yet recorded as applied
    assert done_key(PID) not in store.stored
    assert marker(store, True, 1) == 1
    assert store.real() == 10 and set(store.stored) == {P0, done_key(PID)}


def test_unnumbered_markers_are_always_applied():
    store = Offsets()
    store.pend(10)
    assert marker(store, True, 0) == 1 and store.real() == 10
    assert done_key(PID) not in store.stored


def test_the_applied_key_is_hidden_and_not_a_pending_offset():
    key = done_key(PID)
    assert is_pending(key) and is_done_key(key)  # never shown by OffsetFetch
    assert parse_pending(key) is None  # never makes a partition unstable
    assert not is_done_key(pending_key(PID, P0)) and not is_done_key(TopicPartition("src", 0))
    # DSBS's gossip accepts it as it accepts pending offsets.
    entry = OffsetEntry("g", key.topic, key.partition, 3, -1, -1, "", 1, 0)
    assert offset_problem(entry) is None
