"""Deleting a DSBS topic: deletion records (tombstones) and the creation epoch (no I/O).

Whatever order creation, change and deletion records of one name reach brokers in, the brokers
converge on one state; a deleted topic never comes back through a stale record of it, and a
new topic of the name is never undone by one.
"""

from __future__ import annotations

import itertools
import random

from hypothesis import given
from hypothesis import strategies as st

from brokers.dsbs_broker.packets.wire import (
    Gossip,
    Header,
    Packet,
    TopicRecord,
    UpdateTag,
    decode,
    encode,
    encode_update,
)
from brokers.dsbs_broker.tables.topics import (
    TopicStore,
    grown,
    merge,
    rank,
    record_from_json,
    record_to_json,
    tombstone,
    with_configs,
)

BASE = TopicRecord("t", 1, 0, 1, 1, (0,), explicit=True, token=1)


def test_a_tombstone_beats_every_record_of_its_creation_in_either_order():
    big = grown(with_configs(BASE, {"retention.ms": "1"}, 2), 9, 2, (0, 1, 2))
    tomb = tombstone(BASE, 1)
    for a, b in ((tomb, big), (big, tomb)):
        kept = merge(a, b)
        assert kept == tomb
    # The grown record outranks the tombstone, yet digests send the tombstone where it is
    # held (the content tags differ) and it wins there.
    holds_big, holds_tomb = TopicStore(), TopicStore()
    holds_big.apply(big)
    holds_tomb.apply(tomb)
    lo, hi, digest, _ = holds_big.digest(0, 10)
    assert rank(big) > rank(tomb) and holds_tomb.missing_from(lo, hi, tuple(digest)) == ["t"]
    holds_big.apply(tomb)
    assert holds_big.held("t") == tomb
    store = TopicStore()
    store.apply(tomb)
    assert "t" not in store and store.get("t") is None and store.held("t") == tomb
    assert not store.apply(BASE)  # a stale copy changes nothing


def test_a_new_topic_of_a_deleted_name_outranks_every_record_of_the_old_one():
    tomb = tombstone(BASE, 1)
    new = TopicRecord("t", 1, 2, 3, 1, (0, 1, 2), explicit=False, token=2, epoch=tomb.epoch + 1)
    late = grown(BASE, 50, 2, (0, 1, 2))  # changed by a broker that heard of neither
    for old in (tomb, late, merge(tomb, late)):
        assert merge(old, new) == new and merge(new, old) == new


def test_tombstones_and_epochs_survive_the_wire_and_the_topics_file():
    rec = tombstone(TopicRecord("t", 4, 0, 2, 1, (0, 1), token=9, epoch=3), 2)
    assert record_from_json(record_to_json(rec)) == rec
    assert encode_update(rec)[0] == UpdateTag.TOPIC
    packet = decode(encode(Packet(Header(1, 2, 3, 4), Gossip(), (rec,))))
    assert packet.updates == (rec,)


# One step of a history: which broker acts, what it does, which others hear of it at once.
_op = st.tuples(st.integers(0, 2), st.sampled_from(["grow", "config", "delete", "create"]),
                st.lists(st.booleans(), min_size=3, max_size=3))


@given(st.lists(_op, min_size=1, max_size=12), st.randoms(use_true_random=False))
def test_any_order_of_creation_and_deletion_records_converges(ops, rnd: random.Random):
    """Three brokers change, delete and re-create one name from what each holds, some
    records reaching others late or never; then they gossip until nothing changes. All end
    with the same record: the last creation's topic, deleted if its deletion was written;
    and no broker ever went back to an older creation."""
    stores = [TopicStore() for _ in range(3)]
    for s in stores:
        s.apply(BASE)
    written = [BASE]
    creations = [BASE.token]
    deleted: set[int] = set()
    shown = [BASE.epoch] * 3

    def deliver(i: int, rec: TopicRecord) -> None:
        stores[i].apply(rec)
        now = stores[i].held("t")
        assert now is not None and now.epoch >= shown[i]
        shown[i] = now.epoch

    for broker, kind, hear in ops:
        held = stores[broker].held("t")
        assert held is not None
        live = stores[broker].get("t")
        if kind == "create":
            # The arbiter's vote: every member answers with what it holds (all live here).
            for other in range(3):
                deliver(broker, stores[other].held("t"))  # type: ignore[arg-type]
            held = stores[broker].held("t")
            assert held is not None
            if not held.deleted:
                continue  # the name is taken: TOPIC_ALREADY_EXISTS
            token = len(creations) + 1
            rec = TopicRecord("t", 1, broker, 1, 1, (broker,), token=token,
                              epoch=held.epoch + 1)
            creations.append(token)
        elif live is None:
            continue  # nothing to change or delete here
        elif kind == "delete":
            rec = tombstone(live, broker)
            deleted.add(live.token)
        elif kind == "grow":
            rec = grown(live, live.num_partitions + 1, broker, (0, 1, 2))
        else:
            rec = with_configs(live, {"retention.ms": str(rnd.randint(1, 9))}, broker)
        written.append(rec)
        deliver(broker, rec)
        for other in range(3):
            if other != broker and hear[other]:
                deliver(other, rec)
    for _ in range(10):
        for i, j in itertools.permutations(range(3), 2):
            deliver(j, stores[i].held("t"))  # type: ignore[arg-type]
    finals = {s.held("t") for s in stores}
    assert len(finals) == 1
    (final,) = finals
    assert final is not None and final.token == creations[-1]
    assert final.deleted == (creations[-1] in deleted)
    # And the records alone, in any order, give that same state at once: the merge is a join.
    orders = [written, written[::-1], rnd.sample(written, len(written))]
    ends = set()
    for order in orders:
        store = TopicStore()
        for r in order:
            store.apply(r)
        ends.add(store.held("t"))
    assert ends == {final}


def test_a_cut_off_broker_learns_of_a_deletion_and_the_new_topic_after_healing():
    """On the simulated network: a topic is deleted and created again on one side of a
    partition; the cut-off broker, still holding the old topic, converges on the new one
    once the partition heals (anti-entropy carries the records after gossip gave up), and
    its stale record brings the old topic back nowhere."""
    from brokers.dsbs_broker.config import GossipConfig
    from brokers.dsbs_broker.gossip.simnet import SimNet
    from brokers.dsbs_broker.packets.wire import Status

    cfg = GossipConfig.LOCAL
    net = SimNet(cfg, seed=3)
    for i in range(3):
        net.add(i, seeds=(0, 1, 2))

    def alive(ids: set[int]) -> bool:
        return all((m := node.members.get(i)) is not None and m.status == Status.ALIVE
                   for node in net.live_nodes() for i in ids)

    assert net.run_until(lambda: alive({0, 1, 2}), timeout_s=10) is not None

    def request(node: int, partitions: int) -> int:
        return net.nodes[node].creations.request("t", partitions, 1, (), explicit=True,
                                                 now=net.now)

    rid = request(0, 2)
    assert net.run_until(lambda: rid in net.nodes[0].creations.completed, timeout_s=30)
    old = net.nodes[0].creations.completed.pop(rid).record
    assert old is not None
    assert net.run_until(lambda: all(n.topics.get("t") == old for n in net.live_nodes()),
                         timeout_s=10) is not None
    net.partition({0, 1}, {2})
    tomb = tombstone(old, 0)
    assert net.nodes[0].store_topic(tomb)
    net.nodes[0].push_topic(tomb)
    net.run_for(10 * cfg.tick_s + 3.0)
    assert net.nodes[1].topics.get("t") is None and net.nodes[2].topics.get("t") == old
    rid = request(1, 3)  # the name is free on this side once node 2 is declared dead
    assert net.run_until(lambda: rid in net.nodes[1].creations.completed, timeout_s=60)
    new = net.nodes[1].creations.completed.pop(rid).record
    assert new is not None and new.epoch == old.epoch + 1 and new.token != old.token
    net.heal()

    def converged() -> bool:
        held = {n.topics.held("t") for n in net.live_nodes()}
        return len(held) == 1 and next(iter(held)) == new

    assert net.run_until(converged, timeout_s=120) is not None
