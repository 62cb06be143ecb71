"""Growing a DSBS topic (CreatePartitions): existing partitions keep their replicas, and the
grown record outranks every older record of the topic, so no merge order shrinks it."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from brokers.dsbs_broker import placement
from brokers.dsbs_broker.metadata import TopicStore, grown, rank
from brokers.dsbs_broker.wire import TopicRecord

_ids = st.sets(st.integers(0, 50), min_size=1, max_size=12)


@given(_ids, _ids, st.integers(1, 20), st.integers(1, 20), st.integers(1, 3))
def test_growing_never_moves_an_existing_partition(created_on, live_now, parts, more, rf):
    rf = min(rf, len(created_on))
    ring = placement.assign_ring("t", created_on, parts, rf)
    rec = TopicRecord("t", 1, 0, parts, rf, ring, explicit=True, token=7)
    new = grown(rec, parts + more, 9, tuple(live_now))
    assert new.num_partitions == parts + more and len(set(new.ring)) == len(new.ring)
    for p in range(parts):
        assert placement.replicas(new.ring, rf, p) == placement.replicas(ring, rf, p)


def test_a_grown_ring_spreads_new_partitions_over_members_that_joined():
    ring = placement.assign_ring("t", [1], 1, 1)
    new = grown(TopicRecord("t", 1, 1, 1, 1, ring), 3, 1, (1, 2, 3))
    assert sorted(placement.replicas(new.ring, 1, p)[0] for p in range(3)) == [1, 2, 3]


def test_a_wrapped_ring_is_kept_so_no_partition_moves():
    ring = placement.assign_ring("t", [1, 2], 4, 1)  # 4 partitions wrap over 2 brokers
    new = grown(TopicRecord("t", 1, 1, 4, 1, ring), 6, 2, (1, 2, 3))
    assert new.ring == ring


def test_the_larger_topic_wins_in_every_merge_order():
    """Increases from one base by different brokers (to 3, to 5, 3 then 4, to 4): every
    broker keeps the largest whatever order the records reach it in; equal counts are settled
    by the writer id, the same everywhere."""
    base = TopicRecord("t", 1, 0, 2, 1, (0, 1), explicit=True, token=5)
    to3 = grown(base, 3, 2, (0, 1, 2))
    to5 = grown(base, 5, 1, (0, 1, 2))
    to4 = grown(to3, 4, 2, (0, 1, 2))
    to4_other = grown(base, 4, 1, (0, 1))
    records = [base, to3, to5, to4, to4_other]
    assert max(records, key=rank) is to5
    for order in itertools.permutations(records):
        store = TopicStore()
        for r in order:
            store.apply(r)
        assert store.get("t") == to5
    for order in itertools.permutations([base, to3, to4, to4_other]):
        store = TopicStore()
        shown = 0
        for r in order:
            store.apply(r)
            now = store.get("t")
            assert now is not None and now.num_partitions >= shown  # never shrinks
            shown = now.num_partitions
        assert store.get("t") == to4_other  # same count as to4: the lower writer id
