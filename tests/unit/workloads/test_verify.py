"""The consumer-side verifier catches loss, duplicates and reordering (no I/O)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from workloads.verify import Verifier, fill, partition_of, tag


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


def test_loss_and_duplicates_per_partition_survive_a_merge_and_json():
    """Flags carry the partition's tag: loss is counted where it was acknowledged, duplicates
    where they were delivered, also when consumers in two processes saw the same record."""
    acked = bytearray(fill(0, 10) + fill(1, 10) + fill(300, 10))
    a, b = Verifier(), Verifier()
    a.expect(1, acked)
    b.expect(1, acked)
    a.add_batch(0, [1] * 10, list(range(10)))
    b.add_batch(1, [1] * 8, list(range(10, 18)))
    b.add_batch(0, [1] * 2, [3, 4])  # already seen by a: duplicates in partition 0
    b.add_batch(300, [1] * 10, list(range(20, 30)))
    a.merge(Verifier.from_json(b.to_json()))
    r = a.report()
    assert (r.lost, r.duplicates) == (2, 2)
    assert {p: (x.expected, x.lost, x.duplicates) for p, x in r.by_partition.items()} == {
        0: (10, 0, 2), 1: (10, 2, 0), -1: (10, 0, 0)}


def test_partition_tags_round_trip():
    assert [partition_of(tag(p)) for p in (0, 1, 253)] == [0, 1, 253]
    assert partition_of(tag(254)) == partition_of(tag(10_000)) == -1
    assert fill(2, 3) == bytes([3, 3, 3]) and len(fill(1, 70_000)) == 70_000
