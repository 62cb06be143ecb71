"""The consumer-side verifier catches loss, duplicates and reordering (no I/O)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from workloads.verify import Verifier


def acked(n: int) -> bytearray:
    return bytearray(b"\x01" * n)


def feed(v: Verifier, partition: int, pid: int, seqs: list[int]) -> None:
    v.add_batch(partition, [pid] * len(seqs), seqs)


def test_clean_run_is_ok():
    v = Verifier()
    v.expect(1, acked(100))
    for s in range(0, 100, 20):
        feed(v, s // 20 % 3, 1, list(range(s, s + 20)))
    r = v.report()
    assert r.ok
    assert (r.records, r.unique, r.lost, r.duplicates, r.out_of_order) == (100, 100, 0, 0, 0)
    assert r.expected == 100 and sum(r.per_partition.values()) == 100


def test_loss_is_acked_minus_seen():
    v = Verifier()
    v.expect(1, acked(60))
    feed(v, 0, 1, list(range(0, 20)))
    feed(v, 0, 1, list(range(40, 60)))
    r = v.report()
    assert r.lost == 20 and not r.ok


def test_unacked_deliveries_are_not_loss_or_errors():
    v = Verifier()
    a = acked(40)
    a[20:40] = bytes(20)  # producer never got acks for 20..39
    v.expect(1, a)
    feed(v, 0, 1, list(range(0, 40)))
    r = v.report()
    assert r.ok and r.unexpected == 20 and r.lost == 0


def test_duplicates_across_partitions_and_batches():
    v = Verifier()
    v.expect(1, acked(40))
    feed(v, 0, 1, list(range(0, 20)))
    feed(v, 1, 1, list(range(20, 40)))
    feed(v, 1, 1, list(range(20, 40)))  # redelivered batch (producer retry)
    feed(v, 0, 1, [5])
    r = v.report()
    assert r.duplicates == 21 and r.out_of_order == 0 and r.lost == 0


def test_reordering_within_a_partition():
    v = Verifier()
    v.expect(1, acked(40))
    feed(v, 0, 1, list(range(20, 40)))
    feed(v, 0, 1, list(range(0, 20)))  # older batch after a newer one, same partition
    r = v.report()
    assert r.out_of_order == 20 and r.duplicates == 0 and r.lost == 0


def test_order_is_per_partition_and_per_producer():
    v = Verifier()
    v.expect(1, acked(40))
    v.expect(2, acked(40))
    feed(v, 0, 1, list(range(20, 40)))
    feed(v, 1, 1, list(range(0, 20)))  # other partition: fine
    feed(v, 0, 2, list(range(0, 40)))  # other producer: fine
    assert v.report().ok


def test_mixed_batch_uses_slow_path():
    v = Verifier()
    v.expect(1, acked(4))
    v.expect(2, acked(4))
    v.add_batch(0, [1, 2, 1, 2], [0, 0, 1, 1])
    v.add_batch(0, [1, 2, 1, 2], [3, 3, 2, 2])
    r = v.report()
    assert r.records == 8 and r.out_of_order == 2 and r.lost == 0 and r.duplicates == 0


def test_merge_of_verifiers_from_other_processes():
    a, b = Verifier(), Verifier()
    a.expect(1, acked(40))
    feed(a, 0, 1, list(range(0, 20)))
    feed(b, 1, 1, list(range(20, 40)))
    feed(b, 1, 1, [3])  # seen by a as well: duplicate after merge
    a.merge(b)
    r = a.report()
    assert (r.records, r.unique, r.lost, r.duplicates) == (41, 40, 0, 1)


@settings(max_examples=80, deadline=None)
@given(
    n=st.integers(1, 300),
    batch=st.integers(1, 25),
    drops=st.sets(st.integers(0, 299), max_size=5),
    dups=st.sets(st.integers(0, 299), max_size=5),
)
def test_counts_match_a_naive_model(n, batch, drops, dups):
    v = Verifier()
    v.expect(9, acked(n))
    delivered = 0
    for i, s in enumerate(range(0, n, batch)):
        seqs = [q for q in range(s, min(s + batch, n)) if q not in drops]
        extra = [q for q in range(s, min(s + batch, n)) if q in dups and q not in drops]
        feed(v, i % 2, 9, seqs)
        if extra:
            feed(v, i % 2, 9, extra)
        delivered += len(seqs) + len(extra)
    r = v.report()
    lost = len({d for d in drops if d < n})
    dup = len({d for d in dups if d < n and d not in drops})
    assert r.records == delivered
    assert r.lost == lost
    assert r.duplicates == dup and r.out_of_order == 0
