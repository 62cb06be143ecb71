"""Changing a DSBS topic (CreatePartitions, AlterConfigs): existing partitions keep their
replicas, and records of one topic merge so that no delivery order shrinks it or brings back
older configs, and brokers converge."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from brokers.dsbs_broker.packets.wire import TopicRecord
from brokers.dsbs_broker.tables import replica_placement
from brokers.dsbs_broker.tables.topics import TopicStore, grown, rank, with_configs

_ids = st.sets(st.integers(0, 50), min_size=1, max_size=12)


@given(_ids, _ids, st.integers(1, 20), st.integers(1, 20), st.integers(1, 3))
def test_growing_never_moves_an_existing_partition(created_on, live_now, parts, more, rf):
    rf = min(rf, len(created_on))
    ring = replica_placement.assign_ring("t", created_on, parts, rf)
    rec = TopicRecord("t", 1, 0, parts, rf, ring, explicit=True, token=7)
    new = grown(rec, parts + more, 9, tuple(live_now))
    assert new.num_partitions == parts + more and len(set(new.ring)) == len(new.ring)
    for p in range(parts):
        old = replica_placement.replicas(ring, rf, p)
        assert replica_placement.replicas(new.ring, rf, p) == old


def test_a_grown_ring_spreads_new_partitions_over_members_that_joined():
    ring = replica_placement.assign_ring("t", [1], 1, 1)
    new = grown(TopicRecord("t", 1, 1, 1, 1, ring), 3, 1, (1, 2, 3))
    assert sorted(replica_placement.replicas(new.ring, 1, p)[0] for p in range(3)) == [1, 2, 3]


def test_a_wrapped_ring_is_kept_so_no_partition_moves():
    ring = replica_placement.assign_ring("t", [1, 2], 4, 1)  # 4 partitions wrap over 2 brokers
    new = grown(TopicRecord("t", 1, 1, 4, 1, ring), 6, 2, (1, 2, 3))
    assert new.ring == ring


def test_the_larger_topic_wins_in_every_merge_order():
    """Increases from one base by different brokers (to 3, to 5, 3 then 4, to 4): every
    broker keeps the largest whatever order the records reach it in, and never shows fewer
    partitions than it showed before."""
    base = TopicRecord("t", 1, 0, 2, 1, (0, 1), explicit=True, token=5)
    to3 = grown(base, 3, 2, (0, 1, 2))
    to5 = grown(base, 5, 1, (0, 1, 2))
    to4 = grown(to3, 4, 2, (0, 1, 2))
    to4_other = grown(base, 4, 1, (0, 1))
    for records in ([base, to3, to5, to4, to4_other], [base, to3, to4, to4_other]):
        finals = []
        for order in itertools.permutations(records):
            store = TopicStore()
            shown = 0
            for r in order:
                store.apply(r)
                now = store.get("t")
                assert now is not None and now.num_partitions >= shown
                shown = now.num_partitions
            finals.append(store.get("t"))
        # Every order keeps the same record (the merge is a join).
        assert len(set(finals)) == 1
        assert finals[0].num_partitions == max(r.num_partitions for r in records)
    assert rank(to5) > rank(to4)


# One change a broker makes to the record it holds: grow by n partitions, or set configs.
_change = st.tuples(st.integers(0, 3), st.booleans(), st.integers(1, 3),
                    st.sampled_from(["60000", "120000", "-1"]))


@given(st.lists(st.tuples(st.integers(0, 2), _change), min_size=1, max_size=8),
       st.randoms(use_true_random=False))
def test_brokers_changing_one_topic_concurrently_converge_and_never_shrink_it(ops, rnd):
    """Three brokers each change the topic from whatever record they hold, some of their
    records reach others late or never, then they gossip until nothing changes: all hold the
    same record, with the largest partition count any of them wrote and the configs of the
    longest chain of config changes; no broker ever showed a topic shrink or configs go back."""
    base = TopicRecord("t", 1, 0, 1, 1, (0,), explicit=True, token=3)
    stores = [TopicStore() for _ in range(3)]
    for s in stores:
        s.apply(base)
    shown = [(1, 0)] * 3  # (partitions, config changes) each broker has shown
    written = []

    def deliver(i: int, rec: TopicRecord) -> None:
        stores[i].apply(rec)
        now = stores[i].records["t"]
        seen = (now.num_partitions, now.version - now.num_partitions)
        assert seen[0] >= shown[i][0] and seen[1] >= shown[i][1]
        shown[i] = seen

    for broker, (writer, grow, n, retention) in ops:
        cur = stores[broker].records["t"]
        rec = (grown(cur, cur.num_partitions + n, writer, (0, 1, 2)) if grow
               else with_configs(cur, {"retention.ms": retention}, writer))
        written.append(rec)
        deliver(broker, rec)
        for other in range(3):
            if other != broker and rnd.random() < 0.5:
                deliver(other, rec)
    for _ in range(10):
        for i, j in itertools.permutations(range(3), 2):
            deliver(j, stores[i].records["t"])
    finals = {s.records["t"] for s in stores}
    assert len(finals) == 1
    (final,) = finals
    assert final.num_partitions == max(r.num_partitions for r in [*written, base])
    longest = max(r.version - r.num_partitions for r in [*written, base])
    assert final.version - final.num_partitions >= longest
    # The merge is a join: the records alone, in any order, give that very record.
    for order in (written, rnd.sample(written, len(written))):
        store = TopicStore()
        for r in [base, *order]:
            store.apply(r)
        assert store.records["t"] == final
