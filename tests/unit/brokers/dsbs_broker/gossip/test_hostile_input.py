"""Forged and hostile gossip against the sans-IO state machine (no I/O).

Every rule of ``validation.py`` and every cap of ``GossipLimits`` is exercised through
``SwimNode.receive`` with crafted datagrams, authenticated with the cluster key (an insider or a
key-holding bug: validation is the second line) or unauthenticated (the first line). A property
test feeds random and random-but-signed datagrams to ``receive``: nothing may raise, and whatever
was accepted must still be encodable and pass validation.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brokers.core.coordinator import OffsetAndMetadata, TopicPartition
from brokers.dsbs_broker.config import GossipConfig, GossipLimits
from brokers.dsbs_broker.gossip.simnet import SIM_KEY, SimNet
from brokers.dsbs_broker.gossip.swim import SwimNode
from brokers.dsbs_broker.packets.auth import TAG_BYTES, Authenticator
from brokers.dsbs_broker.packets.wire import (
    FLAG_HMAC,
    Ack,
    DigestEntry,
    Gossip,
    Header,
    MemberUpdate,
    Message,
    OffsetEntry,
    Offsets,
    OffsetsAck,
    OffsetsPull,
    OffsetsPulled,
    Ping,
    PingReq,
    Status,
    Sync,
    TopicRecord,
    TxnAck,
    TxnEntry,
    TxnPart,
    TxnPull,
    TxnPulled,
    assemble,
    cluster_tag,
    encode_message,
    encode_txn_entry,
    encode_update,
)
from brokers.dsbs_broker.tables.validation import (
    MAX_INCARNATION,
    MAX_STAMP,
    member_problem,
    topic_problem,
    txn_problem,
)

TAG = cluster_tag("twinbench")
ATTACKER = ("203.0.113.9", 4444)  # TEST-NET-3: nobody's gossip address
_seq = itertools.count(1)


def forge(msg: Message, updates=(), *, sender: int = 4242, boot: int = 7,
          key: bytes | None = SIM_KEY, tag: int = TAG) -> bytes:
    """A datagram as a broker would send it (signed with ``key``, unsigned without)."""
    ups = [encode_update(u) for u in updates]
    header = Header(tag, sender, boot, next(_seq))
    limit = 1400 - (TAG_BYTES if key else 0)
    data, n = assemble(header, encode_message(msg), ups, limit=limit,
                       flags=FLAG_HMAC if key else 0)
    assert n == len(ups), "forged packet does not fit"
    return Authenticator(key).sign(data) if key else data


def member(node_id: int, inc: int = 1, status: Status = Status.ALIVE,
           host: str = "10.9.0.1", port: int = 7946, kafka: str = "10.9.0.1",
           kport: int = 9092) -> MemberUpdate:
    return MemberUpdate(node_id, inc, status, host, port, kafka, kport)


def topic(name: str = "t", parts: int = 1, rf: int = 1, ring=(0,), version: int = 1,
          creator: int = 0) -> TopicRecord:
    return TopicRecord(name, version, creator, parts, rf, tuple(ring))


def cluster(key: bytes | None = SIM_KEY, n: int = 3) -> tuple[SimNet, SwimNode]:
    net = SimNet(GossipConfig.LOCAL, seed=5, key=key)
    net.add_converged(n)
    return net, net.nodes[0]


def lone(limits: GossipLimits, key: bytes | None = SIM_KEY) -> SwimNode:
    return SwimNode(GossipConfig.LOCAL, node_id=0, gossip_addr=("10.0.0.1", 7946),
                    kafka_addr=("10.0.0.1", 9092), incarnation=1, now=0.0, key=key,
                    limits=limits)


def sent_to(node: SwimNode, addr) -> int:
    return sum(len(d) for a, d in node.take_outbox() if a == addr)


# --- authentication -------------------------------------------------------------------------

def test_unauthenticated_and_wrongly_keyed_packets_change_nothing():
    net, node = cluster()
    rec = topic("forged")
    before = (len(node.members), len(node.topics))
    node.receive(forge(Gossip(), [rec], key=None), ATTACKER, net.now)
    node.receive(forge(Gossip(), [rec], key=b"another cluster's key, 32 bytes!"), ATTACKER,
                 net.now)
    tampered = bytearray(forge(Gossip(), [rec]))
    tampered[-TAG_BYTES - 1] ^= 1
    node.receive(bytes(tampered), ATTACKER, net.now)
    assert node.counters["dropped_unauthenticated"] == 3
    assert (len(node.members), len(node.topics)) == before
    node.receive(forge(Gossip(), [rec]), ATTACKER, net.now)  # the same, keyed: accepted
    assert "forged" in node.topics


def test_an_insecure_broker_refuses_tagged_packets_and_the_reverse():
    net, node = cluster(key=None)
    node.receive(forge(Gossip(), [topic("x")]), ATTACKER, net.now)
    assert node.counters["dropped_bad_flags"] == 1 and "x" not in node.topics


# --- topic records --------------------------------------------------------------------------

@pytest.mark.parametrize(("rec", "reason"), [
    (topic(parts=2**32 - 1), "partitions"),
    (topic(parts=10_001), "partitions"),
    (topic(name=".."), "topic_name"),
    (topic(name="a/b"), "topic_name"),
    (topic(name="x" * 250), "topic_name"),
    (topic(name="white space"), "topic_name"),
    (topic(rf=2, ring=(0,)), "replication_factor"),
    (topic(ring=(0, 0)), "ring"),
    (topic(ring=(2**31,)), "ring"),
    (topic(version=2**32 - 1), "topic_version"),
    (topic(creator=2**31), "topic_creator"),
])
def test_invalid_topic_records_are_dropped(rec, reason):
    net, node = cluster()
    node.receive(forge(Gossip(), [rec]), ATTACKER, net.now)
    assert node.counters[f"dropped_invalid_{reason}"] == 1
    assert rec.name not in node.topics and node.queued() == 0  # not relayed either
    assert topic_problem(rec, GossipLimits()) == reason


def test_topic_table_and_partition_total_are_capped():
    node = lone(GossipLimits(max_topics=3, max_total_partitions=10))
    for i in range(5):
        node.receive(forge(Gossip(), [topic(f"t{i}")]), ATTACKER, 0.0)
    assert len(node.topics) == 3 and node.counters["dropped_topics_full"] == 2
    node.receive(forge(Gossip(), [topic("t0", parts=8, version=2)]), ATTACKER, 0.0)
    assert node.topics.get("t0").num_partitions == 8  # 8 + 1 + 1 = 10 partitions in all
    node.receive(forge(Gossip(), [topic("t1", parts=2, version=2)]), ATTACKER, 0.0)
    assert node.counters["dropped_partitions_full"] == 1 and node.topics.get("t1").version == 1
    # Local creation is refused by the same rules (the coordinator maps them to Kafka errors).
    assert node.topic_problem(topic("t9")) == "topics_full"
    assert not node.add_topic(topic("t9"), 0.0)


# --- members --------------------------------------------------------------------------------

@pytest.mark.parametrize(("u", "reason"), [
    (member(2**31), "node_id"),
    (member(9, inc=MAX_INCARNATION, status=Status.DEAD), "incarnation"),
    (member(9, inc=MAX_INCARNATION, status=Status.SUSPECT), "incarnation"),
    (member(9, host="localhost"), "gossip_address"),
    (member(9, host="224.0.0.1"), "gossip_address"),
    (member(9, host="255.255.255.255"), "gossip_address"),
    (member(9, host="0.0.0.0"), "gossip_address"),
    (member(9, port=0), "gossip_address"),
    (member(9, kafka="not a host!"), "kafka_address"),
    (member(9, kport=0), "kafka_address"),
])
def test_invalid_member_updates_are_dropped(u, reason):
    net, node = cluster()
    node.receive(forge(Gossip(), [u]), ATTACKER, net.now)
    assert node.counters[f"dropped_invalid_{reason}"] == 1
    assert u.node_id not in node.members
    assert member_problem(u) == reason


def test_kafka_host_names_and_ipv6_literals_are_accepted():
    net, node = cluster()
    node.receive(forge(Gossip(), [member(9, kafka="broker-9.example.org"),
                                  member(10, host="fd00::a", kafka="fd00::a"),
                                  member(11, inc=MAX_INCARNATION)]),  # a last refutation
                 ATTACKER, net.now)
    assert 9 in node.members and 10 in node.members and 11 in node.members


def test_forged_death_at_the_maximum_incarnation_cannot_overflow_the_refutation():
    net, node = cluster()
    me = node.node_id
    node.receive(forge(Gossip(), [member(me, MAX_INCARNATION, Status.DEAD)]), ATTACKER, net.now)
    assert node.counters["dropped_invalid_incarnation"] == 1 and node.incarnation == 1
    node.receive(forge(Gossip(), [member(me, MAX_INCARNATION - 1, Status.DEAD)]), ATTACKER,
                 net.now)
    assert node.incarnation == MAX_INCARNATION  # refuted at the last value the wire holds
    node.receive(forge(Gossip(), [member(me, MAX_INCARNATION - 1, Status.DEAD)]), ATTACKER,
                 net.now)
    assert node.incarnation == MAX_INCARNATION
    net.run_for(1.0)  # announcing it encodes fine, and the peers take it
    assert all(n.members.get(me).incarnation == MAX_INCARNATION
               and n.members.get(me).status == Status.ALIVE for n in net.live_nodes())


def test_member_table_is_capped():
    node = lone(GossipLimits(max_members=10))
    for i in range(1, 30):
        node.receive(forge(Gossip(), [member(i, host=f"10.9.0.{i}")]), ATTACKER, 0.0)
    assert len(node.members) == 10 and node.counters["dropped_members_full"] == 20
    # Known members still change state.
    node.receive(forge(Gossip(), [member(1, 2, Status.DEAD, host="10.9.0.1")]), ATTACKER, 0.0)
    assert node.members.get(1).status == Status.DEAD


def test_replay_table_keeps_the_most_recently_heard_senders():
    node = lone(GossipLimits(replay_senders=8))
    for sender in range(1, 100):
        node.receive(forge(Gossip(), sender=sender), ATTACKER, 0.0)
    assert len(node._replay) == 8 and list(node._replay) == list(range(92, 100))
    assert node.counters["replay_windows_evicted"] == 91


def test_out_of_range_sender_ids_are_dropped():
    net, node = cluster()
    node.receive(forge(Gossip(), sender=2**31), ATTACKER, net.now)
    assert node.counters["dropped_invalid_node_id"] == 1 and 2**31 not in node._replay


# --- PING_REQ and offsets -------------------------------------------------------------------

def test_ping_req_only_probes_members_at_their_own_address():
    net, node = cluster()
    node.take_outbox()
    victim = ("198.51.100.7", 53)
    node.receive(forge(PingReq(1, 1, *victim)), ATTACKER, net.now)
    node.receive(forge(PingReq(2, 99, "10.0.0.2", 7946)), ATTACKER, net.now)
    assert node.counters["dropped_ping_req_unknown_target"] == 2
    assert not node.take_outbox()
    node.receive(forge(PingReq(3, 1, *net.addr(1))), ATTACKER, net.now)
    assert [a for a, _ in node.take_outbox()] == [net.addr(1)]


def test_relays_are_capped():
    net = SimNet(GossipConfig.LOCAL, seed=5)
    net.add_converged(2)
    node = SwimNode(GossipConfig.LOCAL, node_id=0, gossip_addr=net.addr(0),
                    kafka_addr=("10.0.0.1", 9092), incarnation=1, now=0.0, key=SIM_KEY,
                    limits=GossipLimits(max_relays=4))
    node.receive(forge(Gossip(), [net.nodes[1].members.members[1].state]), ATTACKER, 0.0)
    for s in range(10):
        node.receive(forge(PingReq(s, 1, *net.addr(1))), ATTACKER, 0.0)
    assert len(node._relays) == 4 and node.counters["dropped_relays_full"] == 6


def _entry(**kw) -> OffsetEntry:
    base = dict(group="g", topic="t", partition=0, offset=5, leader_epoch=-1,
                commit_timestamp_ms=0, metadata=None, stamp=1 << 40, origin=1)
    base.update(kw)
    return OffsetEntry(**base)


def test_offsets_are_taken_only_from_live_members_at_their_address():
    net, node = cluster()
    one = net.addr(1)
    node.receive(forge(Offsets(1, (_entry(),)), sender=77), one, net.now)
    node.receive(forge(Offsets(2, (_entry(),)), sender=1, boot=50), ATTACKER, net.now)
    assert node.counters["dropped_offsets_from_non_member"] == 2
    assert not node.offsets.entries
    node.receive(forge(Offsets(3, (_entry(),)), sender=1, boot=51), one, net.now)
    assert node.offsets.fetch("g", None)[TopicPartition("t", 0)].offset == 5


@pytest.mark.parametrize(("entry", "reason"), [
    (_entry(stamp=2**64 - 1), "offset_stamp"),
    (_entry(topic="a/b"), "offset_topic"),
    (_entry(topic="txn:12:a/b"), "offset_topic"),  # a pending key must name a real topic
    (_entry(topic="txn:-3:t"), "offset_topic"),
    (_entry(topic="txn:x:t"), "offset_topic"),
    (_entry(partition=2**31), "offset_partition"),
    (_entry(offset=-5), "offset_value"),
    (_entry(origin=2**31), "offset_origin"),
])
def test_invalid_offset_entries_drop_the_batch_unacknowledged(entry, reason):
    net, node = cluster()
    node.take_outbox()
    node.receive(forge(Offsets(1, (_entry(topic="ok"), entry)), sender=1, boot=60),
                 net.addr(1), net.now)
    assert node.counters[f"dropped_invalid_{reason}"] == 1
    assert not node.offsets.entries and not node.take_outbox()


def test_a_transactions_pending_offsets_replicate_like_any_offset():
    """The core keeps a transaction's offsets under ``txn:<producer id>:<topic>`` until its
    marker (brokers/core/transactions/offsets.py): not a topic name, longer than one may be,
    and still an offset the group's successors must hold."""
    net, node = cluster()
    key = f"txn:{2**62}:{'t' * 249}"
    node.receive(forge(Offsets(1, (_entry(topic=key),)), sender=1, boot=61), net.addr(1),
                 net.now)
    assert TopicPartition(key, 0) in node.offsets.fetch("g", None)


def test_the_largest_accepted_stamp_leaves_the_clock_room():
    net, node = cluster()
    node.receive(forge(Offsets(1, (_entry(stamp=MAX_STAMP),)), sender=1, boot=70),
                 net.addr(1), net.now)
    (e,) = node.offsets.commit("g", {TopicPartition("t", 0): OffsetAndMetadata(6)}, 1000)
    assert e.stamp == MAX_STAMP + 1
    node.offsets.mark_dirty([("g", "t", 0)], [1, 2])
    net.run_for(1.0)  # replicating it encodes (u64) and the successors merge it
    assert node.counters["offset_batches_out"] > 0


# --- amplification --------------------------------------------------------------------------

def _big(net: SimNet, node: SwimNode) -> None:
    for i in range(40):
        node.add_topic(TopicRecord(f"topic-{i:02d}", 1, 0, 1, 1, (0,)), net.now)
    node.take_outbox()


@pytest.mark.parametrize("key", [None, SIM_KEY], ids=["insecure", "keyed-wrong-source"])
def test_a_spoofed_sync_cannot_make_a_broker_send_more_than_3x(key):
    net, node = cluster(key=key, n=60)
    _big(net, node)
    # A join SYNC naming member 1 (replayed or forged), sent from the victim's address.
    req = forge(Sync(True, True, 0, 2**64 - 1, ()), sender=1, boot=90, key=key)
    node.receive(req, ATTACKER, net.now)
    out = sent_to(node, ATTACKER)
    assert out <= 3 * len(req), (out, len(req))
    assert node.counters["replies_capped"] > 0


def test_a_verified_member_gets_the_whole_join_reply():
    net, node = cluster(n=60)
    _big(net, node)
    req = forge(Sync(True, True, 0, 2**64 - 1, ()), sender=1, boot=91)
    node.receive(req, net.addr(1), net.now)
    assert sent_to(node, net.addr(1)) > 3 * len(req)  # members and 40 topics: not capped


def test_insecure_clusters_still_join_and_spread_topics_under_the_cap():
    net = SimNet(GossipConfig.LOCAL, seed=3, key=None)
    for i in range(8):
        net.add(i, seeds=(0,))
    for i in range(30):
        net.nodes[0].add_topic(TopicRecord(f"t{i}", 1, 0, 1, 1, (0,)), net.now)
    everyone = set(range(8))

    def done() -> bool:
        return all({m.node_id for m in n.members.members.values() if m.live} == everyone
                   and len(n.topics) == 30 for n in net.nodes.values())

    assert net.run_until(done, timeout_s=30) is not None


# --- anything at all ------------------------------------------------------------------------

u32 = st.integers(0, 2**32 - 1)
u16 = st.integers(0, 2**16 - 1)
text8 = st.text(max_size=12)
any_member = st.builds(MemberUpdate, u32, u32, st.sampled_from(list(Status)),
                       st.sampled_from(["10.1.1.1", "::1", "localhost", "224.1.1.1", ""]) | text8,
                       u16, text8, u16)
any_topic = st.builds(
    TopicRecord, st.sampled_from(["t", "..", "a.b", "x" * 249]) | st.text(min_size=1, max_size=8),
    u32, u32, st.integers(1, 2**32 - 1), st.integers(1, 2**16 - 1),
    st.lists(u32, min_size=1, max_size=6).map(tuple))
any_entry = st.builds(OffsetEntry, text8, st.sampled_from(["t", "a/b"]) | text8, u32,
                      st.integers(-(2**63), 2**63 - 1), st.integers(-(2**31), 2**31 - 1),
                      st.integers(-(2**63), 2**63 - 1), st.none() | text8,
                      st.integers(0, 2**64 - 1), u32)
any_message = st.one_of(
    st.builds(Ping, u32, u32), st.builds(Ack, u32), st.just(Gossip()),
    st.builds(PingReq, u32, st.integers(0, 3), st.sampled_from(["10.0.0.2", "x"]), u16),
    st.builds(lambda r, j, lo, d: Sync(r, j, lo, 2**64 - 1, tuple(d)), st.booleans(),
              st.booleans(), st.integers(0, 2**64 - 1),
              st.lists(st.builds(DigestEntry, st.integers(0, 2**64 - 1), u32, u32),
                       max_size=4)),
    st.builds(lambda b, es: Offsets(b, tuple(es)), u32, st.lists(any_entry, max_size=3)),
    st.builds(OffsetsAck, u32), st.builds(OffsetsPull, u32, text8), st.builds(OffsetsPulled, u32),
    # A whole transaction record in one piece (any id, version and size), or any piece at all.
    st.builds(lambda b, e: TxnPart(b, 0, 1, encode_txn_entry(e)), u32,
              st.builds(TxnEntry, text8, st.integers(0, 2**64 - 1), st.binary(max_size=200))),
    st.builds(lambda b, n, i, d: TxnPart(b, i % n, n, d), u32, st.integers(1, 2**16 - 1), u16,
              st.binary(max_size=200)),
    st.builds(TxnAck, u32, st.integers(0, 2**64 - 1)), st.builds(TxnPull, u32),
    st.builds(TxnPulled, u32))


def _still_sane(net: SimNet, node: SwimNode) -> None:
    for m in node.members.members.values():
        assert m.node_id == node.node_id or member_problem(m.state) is None
    for rec in node.topics.records.values():
        assert topic_problem(rec, node.limits) is None
    for txn in node.transactions.entries.values():
        assert txn_problem(txn, node.limits) is None
    net.run_for(0.3)  # ticks, probes, syncs and replication still encode and send


@given(st.binary(max_size=1500), st.booleans())
@settings(max_examples=300, deadline=None)
def test_random_datagrams_never_raise_out_of_receive(data, keyed):
    net, node = cluster(key=SIM_KEY if keyed else None)
    node.receive(data, ATTACKER, net.now)
    # The same bytes behind a valid header and tag reach the decoder itself.
    head = forge(Gossip(), key=None)[:20]
    body = bytearray(head + data[:1300])
    body[3] = FLAG_HMAC
    node.receive(Authenticator(SIM_KEY).sign(bytes(body)) if keyed else bytes(head + data),
                 ATTACKER, net.now)


@given(any_message, st.lists(st.one_of(any_member, any_topic), max_size=5),
       st.integers(0, 3), st.sampled_from([ATTACKER, SimNet.addr(1)]))
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_random_signed_packets_never_raise_and_leave_only_valid_state(msg, ups, sender, src):
    net, node = cluster()
    try:
        data = forge(msg, ups, sender=sender, boot=100 + sender)
    except (AssertionError, ValueError, OverflowError):
        return  # does not fit a packet (or a field): a sender could not send it either
    node.receive(data, src, net.now)
    _still_sane(net, node)
