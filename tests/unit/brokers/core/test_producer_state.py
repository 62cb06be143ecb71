"""The idempotence table (sans-IO): hypothesis drives producers that retry, skip and restart
against a list standing in for the log, and checks what Kafka's ProducerStateManager promises."""

from __future__ import annotations

from typing import NamedTuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brokers.core.errors import InvalidProducerEpoch, OutOfOrderSequenceNumber
from brokers.core.producer_state import (
    CACHED_BATCHES,
    PartitionProducers,
    last_sequence,
)


class Stored(NamedTuple):
    """A stored batch's header fields, as ``load`` reads them."""

    base_offset: int
    last_offset_delta: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    attributes: int = 0


class Partition:
    """The log as a list of headers, appended to through the table as the produce path does."""

    def __init__(self) -> None:
        self.table = PartitionProducers()
        self.log: list[Stored] = []
        self.end = 0

    def produce(self, pid: int, epoch: int, seq: int, delta: int) -> int:
        """The base offset the producer is told; raises what the producer would see."""
        dup = self.table.check(pid, epoch, seq, delta)
        if dup is not None:
            return dup
        base = self.end
        self.log.append(Stored(base, delta, pid, epoch, seq))
        self.end += delta + 1
        self.table.record(pid, epoch, seq, delta, base)
        return base


# One producer's sends: each step is a new batch (its record count) or a retry of one of the
# batches still in flight (an index into the last CACHED_BATCHES sent).
steps = st.lists(
    st.one_of(
        st.tuples(st.just("new"), st.integers(1, 20)),
        st.tuples(st.just("retry"), st.integers(0, CACHED_BATCHES - 1)),
    ),
    max_size=60,
)


@settings(max_examples=300, deadline=None)
@given(steps=steps, pids=st.integers(1, 3), start_seq=st.sampled_from([0, 2**31 - 30]))
def test_retries_of_the_last_batches_are_never_stored_twice(steps, pids, start_seq) -> None:
    p = Partition()
    sent: dict[int, list[tuple[int, int, int]]] = {pid: [] for pid in range(pids)}
    next_seq = dict.fromkeys(range(pids), start_seq)
    for i, (kind, arg) in enumerate(steps):
        pid = i % pids
        if kind == "new" or not sent[pid]:
            count = arg if kind == "new" else 1
            seq = next_seq[pid]
            base = p.produce(pid, 0, seq, count - 1)
            sent[pid].append((seq, count - 1, base))
            next_seq[pid] = (last_sequence(seq, count - 1) + 1) % 2**31
        else:
            recent = sent[pid][-CACHED_BATCHES:]
            seq, delta, base = recent[arg % len(recent)]
            assert p.produce(pid, 0, seq, delta) == base  # the first copy's offset
    stored = sum(len(v) for v in sent.values())
    assert len(p.log) == stored  # every distinct batch once, no retry
    assert [b.base_offset for b in p.log] == sorted(b for v in sent.values() for *_, b in v)


@settings(max_examples=200, deadline=None)
@given(counts=st.lists(st.integers(1, 10), min_size=1, max_size=10), gap=st.integers(1, 1000))
def test_a_sequence_from_the_future_is_out_of_order_and_changes_nothing(counts, gap) -> None:
    p = Partition()
    seq = 0
    for n in counts:
        p.produce(7, 3, seq, n - 1)
        seq += n
    before = list(p.log)
    with pytest.raises(OutOfOrderSequenceNumber):
        p.produce(7, 3, seq + gap, 0)
    assert p.log == before
    end = p.end
    assert p.produce(7, 3, seq, 0) == end  # the right next number is still accepted


@settings(max_examples=200, deadline=None)
@given(epoch=st.integers(1, 2**15 - 1), older=st.integers(1, 100))
def test_an_older_epoch_is_refused_and_a_newer_one_starts_at_zero(epoch, older) -> None:
    p = Partition()
    p.produce(1, epoch, 0, 4)
    with pytest.raises(InvalidProducerEpoch):
        p.produce(1, max(epoch - older, 0), 5, 0)
    if epoch < 2**15 - 1:
        with pytest.raises(OutOfOrderSequenceNumber):
            p.produce(1, epoch + 1, 5, 0)
        assert p.produce(1, epoch + 1, 0, 0) == 5
        with pytest.raises(InvalidProducerEpoch):  # the old epoch is fenced from now on
            p.produce(1, epoch, 5, 0)


def test_an_unknown_producer_is_accepted_at_any_sequence() -> None:
    # Kafka 2.8's rule: its batches may have gone with retention.
    p = Partition()
    assert p.produce(9, 0, 1234, 0) == 0
    assert p.produce(9, 0, 1235, 0) == 1


def test_a_retry_older_than_the_cache_is_out_of_order() -> None:
    p = Partition()
    for seq in range(CACHED_BATCHES + 1):
        p.produce(1, 0, seq, 0)
    with pytest.raises(OutOfOrderSequenceNumber):
        p.produce(1, 0, 0, 0)


@settings(max_examples=200, deadline=None)
@given(steps=steps)
def test_a_table_loaded_from_the_log_answers_as_the_live_one(steps) -> None:
    p = Partition()
    seq = 0
    for kind, arg in steps:
        if kind == "new":
            p.produce(1, 0, seq, arg - 1)
            seq += arg
    loaded = PartitionProducers()
    loaded.load(p.log)
    for probe in range(max(seq - 30, 0), seq + 2):
        for delta in (0, 1, 4):
            answers = []
            for table in (p.table, loaded):
                try:
                    answers.append(table.check(1, 0, probe, delta))
                except OutOfOrderSequenceNumber:
                    answers.append("out of order")
            assert answers[0] == answers[1]


def test_the_least_recently_active_producer_is_forgotten_at_the_cap() -> None:
    table = PartitionProducers(max_producers=2)
    table.record(1, 0, 0, 0, 0)
    table.record(2, 0, 0, 0, 1)
    table.record(1, 0, 1, 0, 2)  # 1 is now the most recent
    table.record(3, 0, 0, 0, 3)
    assert len(table) == 2
    assert table.check(2, 0, 50, 0) is None  # forgotten: treated as a new producer
    with pytest.raises(OutOfOrderSequenceNumber):
        table.check(1, 0, 50, 0)


def test_sequences_wrap_at_the_int32_limit() -> None:
    assert last_sequence(2**31 - 1, 0) == 2**31 - 1
    assert last_sequence(2**31 - 2, 3) == 1
    p = Partition()
    p.produce(1, 0, 2**31 - 2, 1)
    assert p.produce(1, 0, 0, 0) == 2
