"""The metadata records' codec: every record survives encode/decode, and any other bytes are
refused with RecordDecodeError alone."""

from __future__ import annotations

import contextlib
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from brokers.raft_broker.metadata import records as r

ids = st.integers(0, 2**31 - 1)
epochs = st.integers(-1, 2**40)
names = st.text(min_size=1, max_size=20)
opt_names = st.none() | names
inits = st.builds(r.PartitionInit, st.tuples(ids, ids), st.tuples(ids), st.integers(-1, 9))
configs = st.lists(st.tuples(names, names), max_size=3).map(tuple)
offsets = st.builds(r.CommittedOffset, names, ids, epochs, opt_names, epochs, epochs)
owners = st.builds(r.Owner, names, ids, names)

RECORDS = st.one_of(
    st.builds(r.RegisterBroker, ids, names, ids, opt_names),
    st.builds(r.FenceBroker, ids, ids, st.booleans()),
    st.builds(r.UnregisterBroker, ids, ids),
    st.builds(r.CreateTopic, names, st.lists(inits, max_size=4).map(tuple), configs, names),
    st.builds(r.AddPartitions, ids, ids, st.lists(inits, max_size=4).map(tuple)),
    st.builds(r.ChangePartition, ids, ids, ids, st.integers(-1, 9),
              st.lists(ids, max_size=3).map(tuple), st.booleans()),
    st.builds(r.SetTopicConfigs, ids, ids, configs),
    st.builds(r.DeleteTopic, ids),
    st.builds(r.RegisterMember, names, names, names, names),
    st.builds(r.UnregisterMember, names, names),
    st.builds(r.RecordOwners, names, st.lists(owners, max_size=3).map(tuple)),
    st.builds(r.CommitOffsets, names, epochs, st.lists(offsets, max_size=3).map(tuple)),
    st.builds(r.DeleteOffsets, names,
              st.none() | st.lists(st.tuples(names, ids), max_size=3).map(tuple)),
    st.builds(r.AllocateProducerIds, ids, ids),
    # Opaque bytes: any byte value, not only the JSON the core writes.
    st.builds(r.TxnState, names, st.binary(max_size=40), epochs, ids, ids),
)


def test_every_record_type_has_a_kind_and_a_decoder() -> None:
    assert set(r.KINDS) == set(r._FIELDS)
    assert len(set(r.KINDS.values())) == len(r.KINDS)


@given(RECORDS)
def test_a_record_survives_its_codec(record: r.Record) -> None:
    assert r.decode(r.encode(record)) == record


@given(RECORDS, st.text("0123456789abcdef", min_size=1, max_size=r.MAX_TOKEN))
def test_a_tagged_record_survives_its_codec_with_its_token(record: r.Record,
                                                           token: str) -> None:
    assert r.decode_entry(r.encode(record, token)) == (token, record)
    assert r.decode_entry(r.encode(record)) == ("", record)


@pytest.mark.parametrize("raw", [
    [0, "", [8, 1]], [0, "x" * (r.MAX_TOKEN + 1), [8, 1]], [0, 7, [8, 1]],
    [0, "t", [0, "t", [8, 1]]], [0, "t"], [0, "t", [8, 1], 1],
])
def test_bad_tags_are_refused(raw: list[object]) -> None:
    with pytest.raises(r.RecordDecodeError):
        r.decode_entry(json.dumps(raw).encode())


def test_a_string_utf8_cannot_encode_is_refused_before_it_reaches_a_snapshot() -> None:
    # JSON decodes "\ud800" to a lone surrogate; applied, it would break every snapshot.
    with pytest.raises(r.RecordDecodeError, match="not Unicode text"):
        r.decode(b'[9,"g","m\\ud800","c","h"]')


@given(RECORDS, st.data())
def test_a_damaged_record_decodes_or_is_refused_in_one_error(record: r.Record,
                                                              data: st.DataObject) -> None:
    raw = bytearray(r.encode(record))
    cut = data.draw(st.integers(0, len(raw)))
    flip = data.draw(st.integers(0, max(0, len(raw) - 1)))
    for damaged in (bytes(raw[:cut]), bytes(raw[:flip] + bytes([raw[flip] ^ 0x5A])
                                            + raw[flip + 1:]) if raw else b""):
        with contextlib.suppress(r.RecordDecodeError):
            r.decode(damaged)


@given(st.binary(max_size=64))
def test_random_bytes_are_refused_in_one_error(data: bytes) -> None:
    with contextlib.suppress(r.RecordDecodeError):
        r.decode(data)


def test_a_transaction_record_is_kept_byte_for_byte_and_readable_in_the_log() -> None:
    core_record = b'{"producer_id":7,"state":"ONGOING"}'
    entry = r.encode(r.TxnState("tx", core_record, -1, 2, 40))
    assert b'"{\\"producer_id\\":7,\\"state\\":\\"ONGOING\\"}"' in entry
    every_byte = bytes(range(256))
    record = r.TxnState("tx", every_byte, 3, 0, 0)
    assert r.decode(r.encode(record)) == record


@pytest.mark.parametrize("raw", [
    [15, "tx", "\u0100", 0, 1, 1],  # a code point that is no byte
    [15, "tx", "{}", -2, 1, 1],  # below NO_VERSION
    [15, "tx", "{}", 0, -1, 1],  # no unguarded transaction writes: no older log has any
    [15, "tx", "{}", 0, 1],
    [15, "tx", ["{}"], 0, 1, 1],
])
def test_malformed_transaction_records_are_refused(raw: list[object]) -> None:
    with pytest.raises(r.RecordDecodeError, match="TxnState"):
        r.decode(json.dumps(raw).encode())


@pytest.mark.parametrize("raw", [
    [], [99], [True, 1, 2], [1, 1, "h", 9092], [1, -1, "h", 9092, None],
    [2, 1, 1, "yes"], [4, "t", [[[1], [1]]], []], [6, 1, 0, 0, 1, [1], 1],
    [12, "g", -1, [["t", 0, 1.5, None, -1, -1]]], [1, 1, "h", 9092, None, "extra"],
])
def test_wrong_shapes_name_what_is_wrong(raw: list[object]) -> None:
    with pytest.raises(r.RecordDecodeError):
        r.decode(json.dumps(raw).encode())
    with pytest.raises(r.RecordDecodeError):
        r.decode(b"[" * 100_000)  # deeper than the parser goes
