"""The transaction state machine (txn_state): every transition and refusal of Kafka 2.8's
TransactionCoordinator, with a property test that random client histories keep its invariants."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brokers.core.coordinator import TopicPartition
from brokers.core.errors import (
    ConcurrentTransactions,
    InvalidProducerIdMapping,
    InvalidTransactionTimeout,
    InvalidTxnState,
    KafkaError,
    ProducerFenced,
)
from brokers.core.transactions import txn_state as ts
from brokers.core.transactions.txn_state import TxnRecord, TxnState

TID = "t"
A = TopicPartition("a", 0)
B = TopicPartition("b", 1)


def fresh() -> TxnRecord:
    rec, abort = ts.init_producer(None, TID, 60_000, 0, new_producer_id=7)
    assert not abort
    return rec


def test_a_new_id_gets_a_producer_at_epoch_0_and_a_known_one_is_bumped():
    rec = fresh()
    assert (rec.producer_id, rec.producer_epoch, rec.state) == (7, 0, TxnState.EMPTY)
    again, abort = ts.init_producer(rec, TID, 60_000, 1, new_producer_id=99)
    assert (again.producer_id, again.producer_epoch, abort) == (7, 1, False)
    assert (again.last_producer_id, again.last_producer_epoch) == (7, 0)


def test_exhausted_epochs_get_a_new_producer_id():
    rec = TxnRecord(TID, 7, ts.MAX_EPOCH, 1000, TxnState.COMPLETE_COMMIT)
    again, _ = ts.init_producer(rec, TID, 1000, 1, new_producer_id=8)
    assert (again.producer_id, again.producer_epoch) == (8, 0)


@pytest.mark.parametrize("timeout", [0, -1, ts.MAX_TRANSACTION_TIMEOUT_MS + 1])
def test_bad_timeouts_are_refused(timeout):
    with pytest.raises(InvalidTransactionTimeout):
        ts.init_producer(None, TID, timeout, 0, 1)


def test_init_on_an_open_transaction_fences_and_aborts_it():
    rec = ts.add_to_transaction(fresh(), TID, 7, 0, 5, [A])
    assert rec is not None and rec.state is TxnState.ONGOING
    fenced, abort = ts.init_producer(rec, TID, 60_000, 6, 99)
    assert abort and fenced.state is TxnState.PREPARE_ABORT and fenced.producer_epoch == 1
    assert fenced.partitions == {A}
    with pytest.raises(ConcurrentTransactions):
        ts.init_producer(fenced, TID, 60_000, 7, 99)
    done = ts.complete(fenced, 8)
    assert done.state is TxnState.COMPLETE_ABORT and not done.partitions
    again, _ = ts.init_producer(done, TID, 60_000, 9, 99)
    assert again.producer_epoch == 2


def test_kip_360_names_the_current_or_the_previous_pair_only():
    rec, _ = ts.init_producer(fresh(), TID, 60_000, 1, 99)  # epoch 1, previous 0
    for pair in ((7, 1), (7, 0), (-1, -1)):
        ts.init_producer(rec, TID, 60_000, 2, 99, expected=pair)
    with pytest.raises(ProducerFenced):
        ts.init_producer(rec, TID, 60_000, 2, 99, expected=(7, 5))


def test_adding_checks_the_producer_and_writes_only_news():
    rec = fresh()
    with pytest.raises(InvalidProducerIdMapping):
        ts.add_to_transaction(rec, TID, 8, 0, 1, [A])
    with pytest.raises(InvalidProducerIdMapping):
        ts.add_to_transaction(None, TID, 7, 0, 1, [A])
    with pytest.raises(ProducerFenced):
        ts.add_to_transaction(rec, TID, 7, 1, 1, [A])
    on = ts.add_to_transaction(rec, TID, 7, 0, 10, [A])
    assert on is not None and on.started_ms == 10
    assert ts.add_to_transaction(on, TID, 7, 0, 11, [A]) is None  # nothing new
    more = ts.add_to_transaction(on, TID, 7, 0, 12, [B], ["g"])
    assert more is not None and more.partitions == {A, B} and more.groups == {"g"}
    assert more.started_ms == 10


def test_ending_a_transaction():
    on = ts.add_to_transaction(fresh(), TID, 7, 0, 1, [A])
    assert on is not None
    prepared = ts.end_transaction(on, TID, 7, 0, True, 2)
    assert prepared is not None and prepared.state is TxnState.PREPARE_COMMIT
    with pytest.raises(ConcurrentTransactions):
        ts.end_transaction(prepared, TID, 7, 0, True, 3)
    with pytest.raises(InvalidTxnState):
        ts.end_transaction(prepared, TID, 7, 0, False, 3)
    with pytest.raises(ConcurrentTransactions):
        ts.add_to_transaction(prepared, TID, 7, 0, 3, [B])
    done = ts.complete(prepared, 4)
    assert ts.end_transaction(done, TID, 7, 0, True, 5) is None  # a retried commit
    with pytest.raises(InvalidTxnState):
        ts.end_transaction(done, TID, 7, 0, False, 5)
    with pytest.raises(InvalidTxnState):
        ts.end_transaction(fresh(), TID, 7, 0, True, 5)  # nothing began
    with pytest.raises(InvalidTxnState):
        ts.complete(done, 6)


def test_timeouts():
    on = ts.add_to_transaction(fresh(), TID, 7, 0, 1000, [A])
    assert on is not None
    assert not on.expired(61_000) and on.expired(61_001)
    aborted = ts.fence_for_abort(on, 61_001)
    assert aborted.state is TxnState.PREPARE_ABORT and aborted.producer_epoch == 1
    with pytest.raises(ProducerFenced):
        ts.end_transaction(aborted, TID, 7, 0, True, 61_002)  # the old epoch is fenced


def test_records_round_trip():
    on = ts.add_to_transaction(fresh(), TID, 7, 0, 1, [A, B], ["g1", "g2"])
    assert on is not None
    assert TxnRecord.from_dict(on.to_dict()) == on


ops = st.lists(st.one_of(
    st.tuples(st.just("init"), st.integers(0, 3)),
    st.tuples(st.just("add"), st.integers(0, 2)),
    st.tuples(st.just("end"), st.booleans()),
    st.tuples(st.just("complete"), st.just(0)),
    st.tuples(st.just("timeout"), st.just(0)),
), max_size=30)


@settings(max_examples=300, deadline=None)
@given(ops=ops)
def test_random_histories_keep_the_invariants(ops):
    """Whatever clients do, epochs never go back for a producer id, only an ONGOING
    transaction lists partitions being added, and a decision once stored is only completed."""
    rec: TxnRecord | None = None
    now = 0
    next_pid = 100
    for op, arg in ops:
        now += 1000
        before = rec
        try:
            if op == "init":
                rec, _ = ts.init_producer(rec, TID, 5000, now, next_pid)
                next_pid += 1
            elif op == "add" and rec is not None:
                new = ts.add_to_transaction(rec, TID, rec.producer_id, rec.producer_epoch, now,
                                            [TopicPartition("t", arg)])
                rec = new or rec
            elif op == "end" and rec is not None:
                new = ts.end_transaction(rec, TID, rec.producer_id, rec.producer_epoch, arg, now)
                rec = new or rec
            elif op == "complete" and rec is not None and rec.state.preparing:
                rec = ts.complete(rec, now)
            elif op == "timeout" and rec is not None and rec.expired(now):
                rec = ts.fence_for_abort(rec, now)
        except KafkaError:
            assert rec == before  # a refusal changes nothing
            continue
        if before is not None and rec is not None:
            if rec.producer_id == before.producer_id:
                assert rec.producer_epoch >= before.producer_epoch
            if before.state.preparing and rec.state is not before.state:
                assert rec.state.complete and rec.commits == before.commits
        if rec is not None and rec.state in (TxnState.EMPTY, *[s for s in TxnState
                                                                if s.complete]):
            assert not rec.partitions and not rec.groups
