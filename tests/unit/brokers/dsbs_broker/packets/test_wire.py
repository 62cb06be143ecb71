"""The gossip codec: round trips, bounds, and junk that must only ever raise WireError."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brokers.dsbs_broker.packets import wire
from brokers.dsbs_broker.packets.wire import (
    Ack,
    Ballot,
    Create,
    CreateResult,
    DigestEntry,
    Gossip,
    Header,
    LeaderAndIsr,
    MemberUpdate,
    OffsetEntry,
    Offsets,
    OffsetsAck,
    OffsetsPull,
    OffsetsPulled,
    Packet,
    PartitionRecord,
    Ping,
    PingReq,
    Promise,
    Propose,
    StandFor,
    Status,
    Sync,
    TopicRecord,
    TxnAck,
    TxnEntry,
    TxnPart,
    TxnPull,
    TxnPulled,
    Verdict,
    Vote,
    WireError,
    decode,
    decode_txn_entry,
    encode,
    encode_txn_entry,
)

u32 = st.integers(0, 2**32 - 1)
u16 = st.integers(0, 2**16 - 1)
host = st.text(max_size=40).filter(lambda s: len(s.encode()) <= 255)
name = st.text(min_size=1, max_size=30).filter(lambda s: len(s.encode()) <= 255)

u64 = st.integers(0, 2**64 - 1)
configs = st.lists(st.tuples(st.text(max_size=10), st.text(max_size=20)), max_size=3).map(tuple)

members = st.builds(MemberUpdate, u32, u32, st.sampled_from(list(Status)), host, u16, host, u16)
topics = st.builds(
    TopicRecord, name, u32, u32, st.integers(1, 2**32 - 1), st.integers(1, 2**16 - 1),
    st.lists(u32, min_size=1, max_size=20).map(tuple), configs, st.booleans(), u64,
)
partitions = st.builds(
    PartitionRecord, name, u64, u32, st.integers(-1, 2**31 - 1), u32, u32,
    st.lists(u32, max_size=20).map(tuple))
offset_entries = st.builds(
    OffsetEntry, st.text(max_size=20), st.text(max_size=20), u32,
    st.integers(-(2**63), 2**63 - 1), st.integers(-(2**31), 2**31 - 1),
    st.integers(-(2**63), 2**63 - 1), st.none() | st.text(max_size=20),
    st.integers(0, 2**64 - 1), u32,
)
promises = st.builds(Promise, st.integers(1, 2**32 - 1), st.integers(0, 2**31 - 1))
messages = st.one_of(
    st.builds(Ping, u32, u32),
    st.builds(Ack, u32),
    st.builds(PingReq, u32, u32, host, u16),
    st.just(Gossip()),
    st.builds(lambda r, j, lo, d: Sync(r, j, lo, 2**64 - 1, tuple(d)), st.booleans(),
              st.booleans(), st.integers(0, 2**64 - 1),
              st.lists(st.builds(DigestEntry, u64, u32, u32, st.booleans(), u32, u32),
                       max_size=10)),
    st.builds(lambda b, es: Offsets(b, tuple(es)), u32, st.lists(offset_entries, max_size=5)),
    st.builds(OffsetsAck, u32),
    st.builds(OffsetsPull, u32, st.text(max_size=30)),
    st.builds(OffsetsPulled, u32),
    # Any name, partition count and factor: the arbiter judges them, not the codec.
    st.builds(Create, u32, u64, st.booleans(), st.text(max_size=30).filter(
        lambda s: len(s.encode()) <= 255), u32, u16, configs),
    st.builds(CreateResult, u32, st.booleans(), st.integers(-(2**15), 2**15 - 1),
              st.none() | topics),
    st.builds(Propose, u32, topics),
    st.builds(lambda p, v, r: Vote(p, v, r if v == Verdict.HAVE else None), u32,
              st.sampled_from(list(Verdict)), topics),
    st.builds(LeaderAndIsr, st.booleans(), partitions, st.none() | promises),
    st.builds(StandFor, partitions),
    st.builds(Ballot, st.booleans(), u32, partitions, st.none() | promises),
    st.builds(lambda b, n, i, d: TxnPart(b, i % n, n, d), u32, st.integers(1, 2**16 - 1),
              u16, st.binary(max_size=100)),
    st.builds(TxnAck, u32, u64),
    st.builds(TxnPull, u32),
    st.builds(TxnPulled, u32),
)
packets = st.builds(Packet, st.builds(Header, u32, u32, u32, u32), messages,
                    st.lists(st.one_of(members, topics, partitions), max_size=6).map(tuple))


@given(packets)
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
def test_round_trip(pkt):
    data = encode(pkt, limit=65_000)
    assert decode(data, limit=65_000) == pkt


@given(st.binary(max_size=2000))
@settings(max_examples=500)
def test_random_bytes_only_raise_wire_error(data):
    with contextlib.suppress(WireError):
        decode(data)


@given(packets, st.data())
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
def test_mutated_and_truncated_packets_only_raise_wire_error(pkt, data):
    raw = bytearray(encode(pkt, limit=65_000))
    cut = data.draw(st.integers(0, len(raw)))
    for i in data.draw(st.lists(st.integers(0, max(len(raw) - 1, 0)), max_size=4)):
        if raw:
            raw[i] ^= data.draw(st.integers(1, 255))
    for candidate in (bytes(raw), bytes(raw[:cut]), bytes(raw) + b"\x00"):
        with contextlib.suppress(WireError):
            decode(candidate, limit=65_000)


@given(members)
def test_fast_member_decoder_matches_reference(u):
    enc = wire.encode_update(u)
    r1 = wire._Reader(enc)
    r1.pos = 1
    r2 = wire._Reader(enc)
    r2.pos = 1
    assert wire._decode_member_fast(r1) == wire.decode_member_reference(r2) == u
    assert r1.pos == r2.pos == len(enc)


def test_truncated_tail_is_reported_as_truncated():
    pkt = Packet(Header(1, 2, 3, 4), Ping(5, 6), (MemberUpdate(1, 2, Status.ALIVE, "h", 1,
                                                               "k", 2),))
    data = encode(pkt)
    for n in range(len(data)):
        with pytest.raises(WireError):
            decode(data[:n])
    with pytest.raises(WireError, match="trailing"):
        decode(data + b"x")


def test_oversized_and_bad_header_fields():
    pkt = Packet(Header(1, 2, 3, 4), Gossip(), ())
    data = bytearray(encode(pkt))
    with pytest.raises(WireError) as e:
        decode(bytes(data) + b"\x00" * 1400)
    assert e.value.reason == "oversized"
    bad = bytearray(data)
    bad[2] = 9
    with pytest.raises(WireError) as e:
        decode(bytes(bad))
    assert e.value.reason == "bad_version"
    bad = bytearray(data)
    bad[3] = wire.FLAG_HMAC  # a tagged packet, where the receiver expects none
    with pytest.raises(WireError) as e:
        decode(bytes(bad))
    assert e.value.reason == "bad_flags"


def test_assemble_respects_the_packet_limit_and_keeps_order():
    ups = [wire.encode_update(MemberUpdate(i, 1, Status.ALIVE, "10.0.0.1", 7946, "10.0.0.1",
                                           9092)) for i in range(200)]
    data, n = wire.assemble(Header(1, 2, 3, 4), wire.encode_message(Gossip()), ups)
    assert len(data) <= 1400 and 0 < n < 200
    got = decode(data).updates
    assert [u.node_id for u in got] == list(range(n))


def test_never_pickle():
    import inspect

    assert "pickle" not in inspect.getsource(wire)


def test_a_message_that_must_carry_a_topic_record_refuses_a_member_update():
    rec = TopicRecord("t", 1, 2, 3, 1, (2,), (), True, 7)
    good = encode(Packet(Header(1, 2, 3, 4), Propose(9, rec), ()))
    assert decode(good).message == Propose(9, rec)
    member = wire.encode_update(MemberUpdate(1, 2, Status.ALIVE, "h", 1, "k", 2))
    bad = good.replace(wire.encode_update(rec), member)
    with pytest.raises(WireError, match="expected a topic record"):
        decode(bad)
    with pytest.raises(ValueError):
        wire.encode_message(Vote(1, Verdict.OK, rec))  # only HAVE carries a record


def test_leader_and_isr_carries_a_partition_record_and_nothing_else():
    part = PartitionRecord("t", 7, 0, 2, 5, 9, (2, 0))
    good = encode(Packet(Header(1, 2, 3, 4), LeaderAndIsr(True, part), ()))
    assert decode(good).message == LeaderAndIsr(True, part)
    topic = wire.encode_update(TopicRecord("t", 1, 2, 3, 1, (2,), (), True, 7))
    with pytest.raises(WireError, match="expected a partition record"):
        decode(good.replace(wire.encode_update(part), topic))
    with pytest.raises(WireError, match="partition record"):  # leader below -1
        decode(good.replace(wire.encode_update(part), wire.encode_update(
            PartitionRecord("t", 7, 0, -2, 5, 9, (2, 0)))))


def test_record_room_leaves_space_for_every_message_that_carries_a_record():
    room = wire.record_room(1400)
    configs = (("k", "v" * (room - 60)),)
    rec = TopicRecord("t" * 10, 1, 2, 3, 1, (1, 2, 3), configs, True, 2**64 - 1)
    size = len(wire.encode_update(rec))
    assert room - 8 <= size <= room  # the test's record is near the limit
    for msg in (CreateResult(2**32 - 1, False, 36, rec), Propose(1, rec),
                Vote(1, Verdict.HAVE, rec), Gossip()):
        ups = (rec,) if isinstance(msg, Gossip) else ()
        assert len(encode(Packet(Header(1, 2, 3, 4), msg, ups))) <= 1400


txn_entries = st.builds(TxnEntry, st.text(max_size=40), u64, st.binary(max_size=3000))


@given(txn_entries)
@settings(max_examples=200)
def test_a_transaction_record_round_trips_through_its_pieces(e):
    data = encode_txn_entry(e)
    assert decode_txn_entry(data) == e
    room = 97  # any piece size: the receiver joins pieces in index order
    pieces = [data[i:i + room] for i in range(0, len(data), room)]
    msgs = [TxnPart(5, i, len(pieces), p) for i, p in enumerate(pieces)]
    got = [decode(encode(Packet(Header(1, 2, 3, 4), m, ()))).message for m in msgs]
    assert got == msgs
    assert decode_txn_entry(b"".join(m.data for m in got)) == e


@given(txn_entries, st.data())
@settings(max_examples=200)
def test_a_mangled_transaction_record_only_raises_wire_error(e, data):
    raw = bytearray(encode_txn_entry(e))
    cut = data.draw(st.integers(0, len(raw)))
    for i in data.draw(st.lists(st.integers(0, max(len(raw) - 1, 0)), max_size=4)):
        if raw:
            raw[i] ^= data.draw(st.integers(1, 255))
    for candidate in (bytes(raw), bytes(raw[:cut]), bytes(raw) + b"\x00"):
        with contextlib.suppress(WireError):
            decode_txn_entry(candidate)


def test_a_piece_beyond_its_count_or_a_truncated_record_is_refused():
    good = encode(Packet(Header(1, 2, 3, 4), TxnPart(1, 1, 2, b"xy"), ()))
    assert decode(good).message == TxnPart(1, 1, 2, b"xy")
    with pytest.raises(ValueError):
        wire.encode_message(TxnPart(1, 2, 2, b"xy"))
    bad = bytearray(good)
    # The piece index sits after the header, the type and the batch: make it equal the count.
    bad[wire.HEADER_SIZE + 1 + 4:wire.HEADER_SIZE + 1 + 6] = (2).to_bytes(2, "big")
    with pytest.raises(WireError, match="piece 2 of 2"):
        decode(bytes(bad))
    data = encode_txn_entry(TxnEntry("t", 1 << 32, b"record"))
    with pytest.raises(WireError, match="trailing"):
        decode_txn_entry(data + b"x")
    for n in range(len(data)):
        with pytest.raises(WireError):
            decode_txn_entry(data[:n])


def test_a_full_piece_fits_the_packet():
    room = 1400 - wire.HEADER_SIZE - 2 - wire.TXN_PART_OVERHEAD
    msg = TxnPart(2**32 - 1, 0, 2**16 - 1, b"x" * room)
    assert len(encode(Packet(Header(1, 2, 3, 4), msg, ()))) == 1400
