"""The transaction-record table: conditional writes, versions, the merge rule, the file
(``tables/transactions.py``), and the checks a record from the network must pass."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brokers.dsbs_broker.config import GossipLimits
from brokers.dsbs_broker.packets.wire import TxnEntry
from brokers.dsbs_broker.tables.transactions import (
    NO_VERSION,
    TxnLog,
    TxnTable,
    next_version,
    writer_of,
    writes_of,
)
from brokers.dsbs_broker.tables.validation import txn_problem

TID = "payments-1"


def write(table: TxnTable, record: bytes, expected: int | None = None,
          tid: str = TID) -> TxnEntry:
    """A write as the store makes it: conditional on ``expected`` (default: what is held)."""
    e = table.candidate(tid, record, table.version(tid) if expected is None else expected)
    assert e is not None
    table.put(e)
    return e


def test_versions_count_writes_and_name_the_writer():
    assert next_version(NO_VERSION, 7) == (1 << 32) | 7
    v = next_version(next_version(NO_VERSION, 7), 3)
    assert (writes_of(v), writer_of(v)) == (2, 3)
    assert writes_of(NO_VERSION) == 0
    # Compared as integers: write count first, then the writer.
    assert next_version(NO_VERSION, 0) < next_version(NO_VERSION, 5) < (2 << 32)


def test_a_write_is_conditional_on_the_version_read():
    t = TxnTable(1)
    assert t.version(TID) == NO_VERSION and t.get(TID) is None
    assert t.candidate(TID, b"a", 5) is None  # absent: only NO_VERSION may create it
    first = write(t, b"a", NO_VERSION)
    assert (t.get(TID), t.version(TID)) == (first, first.version)
    assert t.candidate(TID, b"b", NO_VERSION) is None  # stale: it exists now
    second = write(t, b"b", first.version)
    assert second.version > first.version and writer_of(second.version) == 1
    assert t.candidate(TID, b"c", first.version) is None
    assert t.unpersisted == [first, second]
    assert t.ids() == [TID] and TID in t and len(t) == 1


def test_a_merged_record_refuses_a_write_based_on_the_older_one():
    """What makes the core's conditional write safe across brokers: a record another
    coordinator wrote, once merged, changes the stored version."""
    mine, theirs = TxnTable(1), TxnTable(2)
    read = write(mine, b"v1").version
    assert theirs.merge(mine.get(TID))
    newer = write(theirs, b"v2 by 2")
    assert mine.merge(newer)
    assert mine.candidate(TID, b"v2 by 1", read) is None
    # Writing over what is held now ranks above everything merged.
    assert write(mine, b"v3").version > newer.version


def test_merge_keeps_the_higher_version_whatever_the_order():
    a = TxnEntry(TID, next_version(NO_VERSION, 1), b"a")
    b = TxnEntry(TID, next_version(a.version, 2), b"b")
    for order in ([a, b], [b, a], [b, b, a, a]):
        t = TxnTable(9)
        for e in order:
            t.merge(e)
        assert t.get(TID) == b
    t = TxnTable(9)
    assert t.merge(a) and not t.merge(a)  # idempotent: taken once
    assert t.merge(b) and not t.merge(a)


def test_equal_write_counts_are_broken_by_the_writer_id():
    """Two coordinators that each wrote once over the same record (a partition): the higher
    writer id wins on every broker, and the two never compare equal."""
    base = next_version(NO_VERSION, 0)
    by1 = TxnEntry(TID, next_version(base, 1), b"abort")
    by2 = TxnEntry(TID, next_version(base, 2), b"commit")
    assert writes_of(by1.version) == writes_of(by2.version) and by1.version != by2.version
    for first, second in ((by1, by2), (by2, by1)):
        t = TxnTable(0)
        t.merge(first)
        t.merge(second)
        assert t.get(TID) == by2


def test_the_table_is_capped_for_new_ids_only():
    t = TxnTable(1, max_entries=2)
    write(t, b"x", tid="a")
    write(t, b"x", tid="b")
    assert not t.has_room("c") and t.has_room("a")
    assert not t.merge(TxnEntry("c", next_version(NO_VERSION, 2), b"x"))
    assert t.merge(TxnEntry("a", next_version(t.version("a"), 2), b"y"))
    assert t.ids() == ["a", "b"]


def test_load_takes_the_newest_and_persists_nothing_again():
    t = TxnTable(1)
    old = TxnEntry(TID, next_version(NO_VERSION, 1), b"old")
    new = TxnEntry(TID, next_version(old.version, 1), b"new")
    t.load([new, old])
    assert t.get(TID) == new and t.unpersisted == []


entries = st.builds(
    TxnEntry, st.sampled_from(["a", "b", "c"]),
    st.builds(lambda w, n: (w << 32) | n, st.integers(1, 6), st.integers(0, 3)),
    st.sampled_from([b"x", b"y"]))


@given(st.lists(entries, max_size=12), st.randoms())
@settings(max_examples=200)
def test_merging_is_a_join_same_records_same_table_in_any_order_and_grouping(records, rnd):
    """Brokers that received the same records, in any order and through any relay, converge.
    Versions identify records (one writer, one count, one record), so the inputs are made
    consistent first: the same version always carries the same bytes."""
    by_version: dict[tuple[str, int], TxnEntry] = {}
    records = [by_version.setdefault((e.transactional_id, e.version), e) for e in records]
    straight = TxnTable(9)
    for e in records:
        straight.merge(e)
    # Split across two relays, each merging its share in a shuffled order, then merged into a
    # third from both relays' tables.
    shuffled = list(records)
    rnd.shuffle(shuffled)
    cut = rnd.randint(0, len(shuffled))
    left, right, joined = TxnTable(7), TxnTable(8), TxnTable(9)
    for e in shuffled[:cut]:
        left.merge(e)
    for e in shuffled[cut:]:
        right.merge(e)
    for e in [*right.entries.values(), *left.entries.values()]:
        joined.merge(e)
    assert joined.entries == straight.entries
    for tid, e in straight.entries.items():
        assert e.version == max(r.version for r in records if r.transactional_id == tid)


@pytest.mark.parametrize(("entry", "reason"), [
    (TxnEntry("", 1 << 32, b"r"), "txn_id"),
    (TxnEntry("x" * 0x8000, 1 << 32, b"r"), "txn_id"),
    (TxnEntry("t", 0, b"r"), "txn_version"),  # no write count
    (TxnEntry("t", 7, b"r"), "txn_version"),
    (TxnEntry("t", (1 << 32) | (1 << 31), b"r"), "txn_version"),  # writer beyond int32
    (TxnEntry("t", ((1 << 31) - 1) << 32, b"r"), "txn_version"),  # no room to count on
    (TxnEntry("t", 1 << 32, b"r" * (64 * 1024 + 1)), "txn_size"),
])
def test_records_that_no_broker_could_write_are_refused(entry, reason):
    assert txn_problem(entry, GossipLimits()) == reason


def test_a_record_a_broker_could_write_passes():
    assert txn_problem(TxnEntry("t" * 0x7FFF, next_version(NO_VERSION, 2**31 - 1),
                                b"r" * 64 * 1024), GossipLimits()) is None


@pytest.mark.filesystem
def test_the_file_keeps_the_newest_record_per_id_and_survives_a_torn_line(tmp_path):
    path = tmp_path / "transactions.jsonl"
    log = TxnLog(path)
    assert log.open() == [] and log.is_open
    t = TxnTable(1)
    first = write(t, b'{"state": "Ongoing"}')
    raw = write(t, b"\xff\x00 not utf-8", tid="binary")
    last = write(t, b'{"state": "PrepareCommit"}')
    log.append(t.unpersisted, fsync=True)
    log.close()
    lines = path.read_text().splitlines()
    assert json.loads(lines[0]) == {"id": TID, "v": first.version, "r": '{"state": "Ongoing"}'}
    assert "b64" in json.loads(lines[1])  # opaque bytes that are not text
    with open(path, "a") as f:
        f.write('{"id": "torn", "v": 4')  # a crash mid-append
    again = TxnLog(path)
    got = {e.transactional_id: e for e in again.open()}
    assert got == {TID: last, "binary": raw}
    assert len(path.read_text().splitlines()) == 2  # compacted on open
    again.close()


@pytest.mark.filesystem
def test_the_file_is_due_for_compaction_once_it_holds_several_lines_per_id(tmp_path):
    log = TxnLog(tmp_path / "transactions.jsonl")
    log.open()
    t = TxnTable(1)
    for i in range(1100):
        write(t, str(i).encode())
    assert not log.compaction_due(len(t))
    log.append(t.unpersisted, fsync=False)
    assert log.compaction_due(len(t))
    log.rewrite(list(t.entries.values()))
    assert not log.compaction_due(len(t))
    log.close()
    assert [e.record for e in TxnLog(tmp_path / "transactions.jsonl").open()] == [b"1099"]
