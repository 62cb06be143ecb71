"""Transactional appends and markers through the idempotence table, on a real segment log:
the last stable offset, fencing by epoch, the flag that spares other partitions any scan, and
the tables rebuilt after a restart."""

from __future__ import annotations

from pathlib import Path

import pytest

from brokers.core.config import StorageConfig
from brokers.core.errors import InvalidProducerEpoch, InvalidRecord
from brokers.core.logs import stored_batch_headers
from brokers.core.producer_state import ProducerStates
from brokers.core.storage import PartitionLog
from brokers.core.transactions.markers import marker_batch
from brokers.core.transactions.partition import AbortedTxn
from brokers.core.transactions.states import FLAG_NAME
from tests.support.record_builder import build_batch

pytestmark = pytest.mark.filesystem
CONFIG = StorageConfig(segment_bytes=1024)
MAX = CONFIG.max_batch_bytes


def txn(pid: int, seq: int, n: int = 2, epoch: int = 0, transactional: bool = True) -> bytes:
    return build_batch([(None, b"%d-%d" % (pid, seq + i)) for i in range(n)], producer_id=pid,
                       producer_epoch=epoch, base_sequence=seq, transactional=transactional)


def open_log(tmp_path: Path) -> PartitionLog:
    return PartitionLog.open(tmp_path / "t-0", CONFIG)


def test_a_transaction_holds_the_stable_offset_until_its_marker(tmp_path):
    log = open_log(tmp_path)
    states = ProducerStates(stored_batch_headers)
    states.append("t", 0, log, txn(1, 0, epoch=0, transactional=False), -1, MAX)
    assert states.txns.get("t", 0, log) is None  # no transaction, no flag, no table
    assert not (log.directory / FLAG_NAME).exists()
    states.append("t", 0, log, txn(5, 0), -1, MAX)  # offsets 2-3
    states.append("t", 0, log, txn(6, 0), -1, MAX)  # 4-5
    states.append("t", 0, log, txn(5, 2), -1, MAX)  # 6-7
    assert (log.directory / FLAG_NAME).exists()
    table = states.txns.get("t", 0, log)
    assert table is not None and table.last_stable_offset(log.log_end_offset) == 2
    states.append_marker("t", 0, log, 5, 0, False, 1, -1, 1000)  # abort at 8
    assert table.last_stable_offset(log.log_end_offset) == 4
    states.append_marker("t", 0, log, 6, 0, True, 1, -1, 1000)  # commit at 9
    assert table.last_stable_offset(log.log_end_offset) == log.log_end_offset == 10
    assert table.aborted == [AbortedTxn(5, 2, 8)]
    # The producer numbers on in its next transaction, same epoch.
    states.append("t", 0, log, txn(5, 4), -1, MAX)
    log.close()

    # A restart (or a new leader) rebuilds both tables from the log.
    log = open_log(tmp_path)
    again = ProducerStates(stored_batch_headers)
    table = again.txns.get("t", 0, log)
    assert table is not None
    assert table.aborted == [AbortedTxn(5, 2, 8)] and table.open_transactions == {5: 10}
    assert table.last_stable_offset(log.log_end_offset) == 10
    again.append("t", 0, log, txn(5, 6), -1, MAX)  # the sequence survived the restart too
    log.close()


def test_markers_fence_by_epoch(tmp_path):
    log = open_log(tmp_path)
    states = ProducerStates(stored_batch_headers)
    states.append("t", 0, log, txn(5, 0, epoch=3), -1, MAX)
    with pytest.raises(InvalidProducerEpoch):
        states.append_marker("t", 0, log, 5, 2, True, 1, -1, 0)  # a zombie coordinator's
    # A timeout abort bumps the epoch: the old epoch's late batches are refused after it.
    states.append_marker("t", 0, log, 5, 4, False, 1, -1, 0)
    with pytest.raises(InvalidProducerEpoch):
        states.append("t", 0, log, txn(5, 2, epoch=3), -1, MAX)
    states.append("t", 0, log, txn(5, 0, epoch=4), -1, MAX)
    log.close()
    log = open_log(tmp_path)
    again = ProducerStates(stored_batch_headers)
    with pytest.raises(InvalidProducerEpoch):
        again.append("t", 0, log, txn(5, 2, epoch=3), -1, MAX)
    log.close()


def test_a_producer_cannot_write_a_control_batch(tmp_path):
    log = open_log(tmp_path)
    states = ProducerStates(stored_batch_headers)
    with pytest.raises(InvalidRecord):
        states.append("t", 0, log, marker_batch(5, 0, True, 0, 0), -1, MAX)
    assert log.log_end_offset == 0
    log.close()


def test_forget_drops_the_table_and_the_next_use_rebuilds_it(tmp_path):
    log = open_log(tmp_path)
    states = ProducerStates(stored_batch_headers)
    states.append("t", 0, log, txn(5, 0), -1, MAX)
    states.forget("t", 0)
    table = states.txns.get("t", 0, log)
    assert table is not None and table.open_transactions == {5: 0}
    states.forget_topic("t")
    assert states.txns.get("t", 0, None) is None
    log.close()


def test_a_repeated_marker_is_answered_with_the_first_and_survives_a_restart(tmp_path):
    """The coordinator numbers a transactional id's transactions and its markers carry the
    number: a repeat of transaction 1's commit, arriving after transaction 2 opened, answers
    the offset of the marker already written and leaves transaction 2 open, also on a log
    rebuilt after a restart."""
    log = open_log(tmp_path)
    states = ProducerStates(stored_batch_headers)
    states.append("t", 0, log, txn(5, 0), -1, MAX)  # 0-1
    first = states.append_marker("t", 0, log, 5, 0, True, 1, -1, 0)  # at 2
    states.append("t", 0, log, txn(5, 2), -1, MAX)  # 3-4: transaction 2
    again = states.append_marker("t", 0, log, 5, 0, True, 1, -1, 0)
    assert again.last_offset == first.last_offset == 2 and log.log_end_offset == 5
    table = states.txns.get("t", 0, log)
    assert table is not None and table.last_stable_offset(5) == 3
    log.close()
    log = open_log(tmp_path)
    rebuilt = ProducerStates(stored_batch_headers)
    assert rebuilt.append_marker("t", 0, log, 5, 0, True, 1, -1, 0).last_offset == 2
    assert rebuilt.append_marker("t", 0, log, 5, 0, False, 2, -1, 0).last_offset == 5
    table = rebuilt.txns.get("t", 0, log)
    assert table is not None and table.aborted == [AbortedTxn(5, 3, 5)]
    log.close()
