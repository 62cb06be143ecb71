"""The metadata image: records applied in log order, the same way on every broker."""

from __future__ import annotations

import dataclasses
import json
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from brokers.core.coordinator import NO_LEADER, OffsetAndMetadata, TopicPartition
from brokers.core.transactions.coordinator import NO_VERSION, placement_key
from brokers.raft_broker.metadata import image as image_module
from brokers.raft_broker.metadata import records as r
from brokers.raft_broker.metadata.image import MetadataImage


def _image(*records: r.Record) -> tuple[MetadataImage, list]:
    image = MetadataImage()
    outcomes = [image.apply(i, rec) for i, rec in enumerate(records, start=1)]
    return image, outcomes


def _topic(name: str, n: int = 2) -> r.CreateTopic:
    return r.CreateTopic(name, tuple(r.PartitionInit((0, 1), (0, 1), 0) for _ in range(n)),
                         (("cleanup.policy", "delete"),))


BROKERS = (r.RegisterBroker(0, "h0", 9092, None), r.RegisterBroker(1, "h1", 9092, "r1"))


def test_a_name_is_created_once_whoever_proposed_it() -> None:
    image, out = _image(_topic("a"), _topic("a", 5))
    assert out[0].applied and out[0].topic_id == 1
    assert not out[1].applied and "already exists" in out[1].reason
    assert len(image.topics["a"].partitions) == 2
    # Deleted, the name can be created again, under a new id.
    _, out = _image(_topic("a"), r.DeleteTopic(1), _topic("a"))
    assert out[1].deleted == "a" and out[2].applied and out[2].topic_id == 3


def test_brokers_are_served_once_unfenced_and_fenced_by_their_epoch() -> None:
    image, out = _image(*BROKERS, r.FenceBroker(0, 1, False), r.FenceBroker(1, 1, False))
    assert out[2].applied and not out[3].applied  # broker 1 registered at index 2, not 1
    assert [b.node_id for b in image.view(0).brokers] == [0]
    image.apply(5, r.RegisterBroker(0, "h0", 9093, None))  # a restart: a new epoch, fenced
    assert image.view(0).brokers == ()
    assert not image.apply(6, r.FenceBroker(0, 1, False)).applied  # its old life's epoch
    assert image.apply(7, r.FenceBroker(0, 5, False)).applied
    assert image.view(0).brokers[0].port == 9093


def test_a_partition_changes_only_from_the_epoch_it_was_decided_on() -> None:
    # Brokers 0 and 1 registered at indexes 1 and 2 and unfenced; topic "a" has id 5.
    image, _ = _image(*BROKERS, r.FenceBroker(0, 1, False), r.FenceBroker(1, 2, False),
                      _topic("a"))
    first = r.ChangePartition(5, 0, 0, 1, (1,), True)
    assert image.apply(6, first).applied
    assert not image.apply(7, r.ChangePartition(5, 0, 0, 0, (0,), True)).applied
    p = image.view(1).partition("a", 0)
    assert p is not None and (p.leader, p.leader_epoch, p.isr) == (1, 1, (1,))
    assert image.apply(8, r.ChangePartition(5, 0, 1, 1, (1, 0), False)).applied  # ISR grows
    p = image.view(1).partition("a", 0)
    assert p is not None and (p.leader_epoch, p.isr) == (1, (0, 1))  # in replica order
    # A leader outside the ISR, or an ISR outside the replicas, never applies.
    assert not image.apply(9, r.ChangePartition(5, 0, 2, 0, (1,), True)).applied
    assert not image.apply(10, r.ChangePartition(5, 0, 2, 1, (1, 7), True)).applied
    # A fenced broker may leave an ISR, never join one (KRaft's INELIGIBLE_REPLICA).
    assert image.apply(11, r.ChangePartition(5, 0, 2, 1, (1,), False)).applied
    assert image.apply(12, r.FenceBroker(0, 1, True)).applied
    out = image.apply(13, r.ChangePartition(5, 0, 3, 1, (0, 1), False))
    assert not out.applied and "may not join" in out.reason
    assert image.apply(14, r.ChangePartition(5, 0, 3, NO_LEADER, (), True)).applied


def test_a_retried_proposal_is_answered_with_its_first_outcome_and_applied_once() -> None:
    # Tagged records (a proposer's token): a second copy of an AddPartitions, whose answer
    # was lost, reports what the first did rather than "has 3 partitions, not 2".
    image, _ = _image(_topic("a"))
    more = (r.PartitionInit((1,), (1,), 1),)
    first = image.apply_entry(2, r.encode(r.AddPartitions(1, 2, more), "tok"))[1]
    again = image.apply_entry(3, r.encode(r.AddPartitions(1, 2, more), "tok"))[1]
    assert first.applied and again == first and len(image.topics["a"].partitions) == 3
    # Another proposer's copy (another token) is decided on its own.
    assert not image.apply_entry(4, r.encode(r.AddPartitions(1, 2, more), "other"))[1].applied
    # A deletion's event happens once, with its first copy.
    out = [image.apply_entry(i, r.encode(r.DeleteTopic(1), "del"))[1] for i in (5, 6)]
    assert out[0].deleted == "a" and out[1].applied and out[1].deleted is None
    # The tokens survive a snapshot; the oldest are forgotten past RECENT_TOKENS.
    restored = MetadataImage.restore(image.snapshot())
    assert restored.recent == image.recent and restored.applied_index == 6
    for i in range(image_module.RECENT_TOKENS + 1):
        image.apply_entry(7 + i, r.encode(r.RegisterMember("g", f"m{i}", "c", "h"), f"t{i}"))
    assert "tok" not in image.recent and len(image.recent) == image_module.RECENT_TOKENS


def test_a_leaders_empty_entry_and_undecodable_bytes_advance_the_image_alike() -> None:
    image = MetadataImage()
    assert image.apply_entry(1, b"") == (None, image_module.Outcome(True))
    record, out = image.apply_entry(2, b"[99]")
    assert record is None and not out.applied and image.applied_index == 2


def test_a_name_no_broker_would_decide_never_enters_the_image() -> None:
    _, out = _image(_topic("bad name"), _topic("x" * 250))
    assert not any(o.applied for o in out) and "illegal topic name" in out[0].reason


def test_partitions_grow_once_from_the_count_they_were_decided_on() -> None:
    image, _ = _image(_topic("a"))
    more = (r.PartitionInit((1,), (1,), 1),)
    assert image.apply(2, r.AddPartitions(1, 2, more)).applied
    assert not image.apply(3, r.AddPartitions(1, 2, more)).applied
    assert len(image.topics["a"].partitions) == 3


def test_commits_of_an_older_generation_are_fenced() -> None:
    offset = r.CommittedOffset("a", 0, 42, "", 3, 1000)
    image, out = _image(_topic("a"), r.RecordOwners("g", (r.Owner("a", 0, "m1"),)),
                        r.CommitOffsets("g", 1, (offset,)),
                        r.RecordOwners("g", (r.Owner("a", 0, "m2"),)),
                        r.CommitOffsets("g", 1, (dataclasses.replace(offset, offset=99),)))
    assert out[2].applied and not out[4].applied and "generation 2" in out[4].reason
    assert image.groups["g"].offsets[TopicPartition("a", 0)] == OffsetAndMetadata(42, "", 3,
                                                                                  1000)
    # Deleting the topic deletes its offsets.
    image.apply(6, r.DeleteTopic(1))
    assert image.groups["g"].offsets == {}


def _three_live() -> MetadataImage:
    image, _ = _image(*BROKERS, r.RegisterBroker(2, "h2", 9092, None), r.FenceBroker(0, 1, False),
                      r.FenceBroker(1, 2, False), r.FenceBroker(2, 3, False), _topic("a"))
    return image


def test_an_offset_write_kept_by_a_coordinator_that_lost_the_group_is_refused() -> None:
    # The nemesis's seed 358241237: the group's coordinator is cut off while its commit is in
    # flight; it is fenced, the group moves, the next coordinator commits further; the cut one
    # is unfenced (the group may come back to it) and its old commit arrives at the leader.
    image = _three_live()
    old = image.group_coordinator("g")
    assert old is not None
    decided_at = image.applied_index
    tp = TopicPartition("a", 0)

    def commit(offset: int, proposer: int, at: int) -> r.CommitOffsets:
        return r.CommitOffsets("g", -1, (r.CommittedOffset("a", 0, offset, None, -1, -1),),
                               proposer, at)

    assert image.apply(8, commit(100, old, decided_at)).applied
    assert image.apply(9, r.FenceBroker(old, old + 1, True)).applied
    new = image.group_coordinator("g")
    assert new is not None and new != old
    refused = image.apply(10, commit(150, old, decided_at))
    assert not refused.applied and "no longer coordinates" in refused.reason
    assert image.apply(11, commit(200, new, image.applied_index)).applied
    assert image.apply(12, r.FenceBroker(old, old + 1, False)).applied
    # Broker ``old`` coordinates "g" again, but decided before the live brokers changed.
    assert image.group_coordinator("g") == old
    late = image.apply(13, commit(120, old, decided_at))
    assert not late.applied and "live brokers changed at index 12" in late.reason
    assert image.groups["g"].offsets[tp].offset == 200
    # Decided on the image as it is now, its commits are taken again; a deletion alike.
    assert image.apply(14, commit(250, old, image.applied_index)).applied
    assert not image.apply(15, r.DeleteOffsets("g", None, new, 13)).applied
    assert image.apply(16, r.DeleteOffsets("g", None, old, 15)).applied
    assert image.groups["g"].offsets == {}


def test_an_unguarded_offset_write_of_an_older_log_is_applied() -> None:
    image = _three_live()
    image.apply(8, r.FenceBroker(0, 1, True))
    # An entry written before the guard (three fields) decodes to proposer -1: unguarded.
    old_entry = b'[12,"g",-1,[["a",0,7,null,-1,-1]]]'
    record = r.decode(old_entry)
    assert isinstance(record, r.CommitOffsets) and record.proposer == -1
    assert image.apply(9, record).applied
    guarded = r.CommitOffsets("g", -1, (), 2, 8)
    assert r.decode(r.encode(guarded)) == guarded


def test_a_version_2_snapshot_refuses_offset_writes_decided_before_it() -> None:
    image = _three_live()
    doc = json.loads(image.snapshot())
    del doc["live_changed_at"]
    doc["version"] = 2
    restored = MetadataImage.restore(json.dumps(doc).encode())
    assert restored.live_changed_at == restored.applied_index == image.applied_index
    coordinator = restored.group_coordinator("g")
    assert coordinator is not None
    assert not restored.apply(8, r.CommitOffsets("g", -1, (), coordinator, 6)).applied
    assert restored.apply(9, r.CommitOffsets("g", -1, (), coordinator, 7)).applied


def _txn_owner(image: MetadataImage, tid: str) -> int:
    owner = image.group_coordinator(placement_key(tid))
    assert owner is not None
    return owner


def test_a_transaction_record_is_written_only_from_the_version_it_was_read_at() -> None:
    image = _three_live()
    owner = _txn_owner(image, "tx")
    assert image.apply(8, r.TxnState("tx", b"one", NO_VERSION, owner, 7)).applied
    assert image.transactions["tx"] == image_module.TxnEntry(b"one", 0)
    # NO_VERSION means absent: a second first write (another InitProducerId raced) is refused.
    again = image.apply(9, r.TxnState("tx", b"other", NO_VERSION, owner, 8))
    assert not again.applied and "at version 0" in again.reason
    assert image.apply(10, r.TxnState("tx", b"two", 0, owner, 9)).applied
    # A writer still holding version 0 (it read before "two") is refused, and nothing moves.
    stale = image.apply(11, r.TxnState("tx", b"stale", 0, owner, 10))
    assert not stale.applied and "version 1, the write was decided at 0" in stale.reason
    assert image.transactions["tx"] == image_module.TxnEntry(b"two", 1)
    # The version is a counter per id, whatever the record's index.
    assert image.apply(20, r.TxnState("tx", b"three", 1, owner, 11)).applied
    assert image.transactions["tx"].version == 2
    assert image.apply(21, r.TxnState("ty", b"y", NO_VERSION, _txn_owner(image, "ty"),
                                      20)).applied
    assert image.transactions["ty"].version == 0


def test_a_transaction_write_by_a_broker_that_does_not_place_the_id_is_refused() -> None:
    image = _three_live()
    owner = _txn_owner(image, "tx")
    other = (owner + 1) % 3
    refused = image.apply(8, r.TxnState("tx", b"x", NO_VERSION, other, 7))
    assert not refused.applied
    assert f"broker {other} no longer coordinates transactional id 'tx'" in refused.reason
    assert "tx" not in image.transactions
    # Placed on its own key: the group "tx" may live elsewhere, the id follows its key.
    assert image.group_coordinator(placement_key("tx")) == owner


def test_a_transaction_write_kept_across_a_placement_change_is_refused() -> None:
    # As the offsets' fencing: the owner is fenced, the id moves, its successor writes; the
    # owner comes back and places the id again, but its write was decided before the change.
    image = _three_live()
    old = _txn_owner(image, "tx")
    decided_at = image.applied_index
    assert image.apply(8, r.TxnState("tx", b"a", NO_VERSION, old, decided_at)).applied
    assert image.apply(9, r.FenceBroker(old, old + 1, True)).applied
    new = _txn_owner(image, "tx")
    assert new != old
    moved = image.apply(10, r.TxnState("tx", b"b", 0, old, 8))
    assert not moved.applied and "no longer coordinates" in moved.reason
    assert image.apply(11, r.TxnState("tx", b"c", 0, new, 10)).applied
    assert image.apply(12, r.FenceBroker(old, old + 1, False)).applied
    assert _txn_owner(image, "tx") == old
    late = image.apply(13, r.TxnState("tx", b"d", 1, old, 11))
    assert not late.applied and "live brokers changed at index 12" in late.reason
    assert image.transactions["tx"] == image_module.TxnEntry(b"c", 1)
    # Decided on the image as it is now (after reading version 1 behind a barrier): taken.
    assert image.apply(14, r.TxnState("tx", b"e", 1, old, 13)).applied
    assert image.transactions["tx"] == image_module.TxnEntry(b"e", 2)


def test_a_retried_transaction_write_is_applied_once() -> None:
    # The proposer's answer for a retry is the first copy's: applied, version + 1 stored.
    image = _three_live()
    owner = _txn_owner(image, "tx")
    entry = r.encode(r.TxnState("tx", b"a", NO_VERSION, owner, 7), "tok")
    first = image.apply_entry(8, entry)[1]
    assert first.applied and image.apply_entry(9, entry)[1] == first
    assert image.transactions["tx"].version == 0


def test_a_snapshot_keeps_the_transactions_and_older_versions_restore_none() -> None:
    image = _three_live()
    owner = _txn_owner(image, "tx")
    every_byte = bytes(range(256))
    image.apply(8, r.TxnState("tx", every_byte, NO_VERSION, owner, 7))
    image.apply(9, r.TxnState("tx", b'{"state":"ONGOING"}', 0, owner, 8))
    image.apply(10, r.TxnState("t2", b"", NO_VERSION, _txn_owner(image, "t2"), 9))
    restored = MetadataImage.restore(image.snapshot())
    assert restored.transactions == image.transactions
    assert restored.transactions["tx"] == image_module.TxnEntry(b'{"state":"ONGOING"}', 1)
    assert restored.snapshot() == image.snapshot()
    # The restored image goes on deciding from the same versions.
    assert not restored.apply(11, r.TxnState("tx", b"x", 0, owner, 10)).applied
    assert restored.apply(12, r.TxnState("tx", b"x", 1, owner, 11)).applied
    # A version 3 snapshot (before transactions) restores with none.
    doc = json.loads(_three_live().snapshot())
    del doc["transactions"]
    doc["version"] = 3
    old = MetadataImage.restore(json.dumps(doc).encode())
    assert old.transactions == {} and old.live_changed_at == _three_live().live_changed_at
    # A record that is not a string of bytes is refused, never coerced.
    doc = json.loads(image.snapshot())
    doc["transactions"][0][1] = 7
    for bad in (doc, {**doc, "transactions": [["tx", "\u0100", 0]]}):
        try:
            MetadataImage.restore(json.dumps(bad).encode())
        except ValueError as exc:
            assert "snapshot" in str(exc)
        else:
            raise AssertionError(bad)


def test_producer_id_blocks_never_overlap() -> None:
    _, out = _image(r.AllocateProducerIds(0, 1000), r.AllocateProducerIds(1, 1000))
    assert (out[0].first_producer_id, out[1].first_producer_id) == (0, 1000)


def test_an_index_is_applied_once() -> None:
    image, _ = _image(_topic("a"))
    assert not image.apply(1, _topic("b")).applied and "b" not in image.topics


# A random log: brokers, topics (some names twice), changes from right and stale epochs,
# groups, commits, deletions, transaction writes.
def _random_log(rng: random.Random, n: int) -> list[r.Record]:
    # Half the logs start with three live brokers: writes fenced by placement (transactions)
    # need some, and random fencing records seldom name a registration's epoch.
    out: list[r.Record] = [] if rng.random() < 0.5 else [
        *(r.RegisterBroker(b, "h", 9092, None) for b in range(3)),
        *(r.FenceBroker(b, b + 1, False) for b in range(3))]
    for _ in range(n):
        k = rng.randrange(10)
        tid = rng.randrange(1, max(2, len(out)))
        if k == 0:
            out.append(r.RegisterBroker(rng.randrange(4), "h", 9092, None))
        elif k == 1:
            out.append(r.FenceBroker(rng.randrange(4), rng.randrange(1, len(out) + 2),
                                     rng.random() < 0.5))
        elif k == 2:
            out.append(_topic(f"t{rng.randrange(5)}", rng.randrange(1, 4)))
        elif k == 3:
            leader = rng.choice((0, 1, NO_LEADER))
            isr = (0, 1) if leader == NO_LEADER else (leader,)
            out.append(r.ChangePartition(tid, rng.randrange(3), rng.randrange(3), leader, isr,
                                         rng.random() < 0.5))
        elif k == 4:
            out.append(r.RecordOwners("g", (r.Owner("t0", 0, f"m{rng.randrange(3)}"),)))
        elif k == 5:
            out.append(r.CommitOffsets("g", rng.randrange(-1, 3), (r.CommittedOffset(
                f"t{rng.randrange(5)}", 0, rng.randrange(100), None, -1, -1),),
                rng.randrange(-1, 4), rng.randrange(-1, len(out) + 1)))
        elif k == 6:
            out.append(r.DeleteTopic(tid))
        elif k == 7:
            out.append(r.RegisterMember("g", f"m{rng.randrange(3)}", "c", "h"))
        elif k == 8:
            # Decided mostly on the image just before it, so some are applied.
            out.append(r.TxnState(f"tx{rng.randrange(2)}", bytes([rng.randrange(256)]),
                                  rng.randrange(-1, 2), rng.randrange(4),
                                  max(0, len(out) - rng.randrange(2))))
        else:
            out.append(r.AllocateProducerIds(rng.randrange(4), 100))
    return out


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_the_same_log_makes_the_same_image_and_a_snapshot_restores_it(seed: int) -> None:
    log = _random_log(random.Random(seed), 60)
    a, out_a = _image(*log)
    # Every broker decodes the committed bytes, not the proposer's objects.
    b, out_b = _image(*(r.decode(r.encode(rec)) for rec in log))
    assert out_a == out_b, f"seed {seed}"
    assert a.snapshot() == b.snapshot(), f"seed {seed}"
    restored = MetadataImage.restore(a.snapshot())
    assert restored.snapshot() == a.snapshot() and restored.view(0) == a.view(0)
    # A snapshot taken halfway, then the rest of the log, is the same image.
    half = MetadataImage()
    for i, rec in enumerate(log[:30], start=1):
        half.apply(i, rec)
    resumed = MetadataImage.restore(half.snapshot())
    for i, rec in enumerate(log[30:], start=31):
        resumed.apply(i, rec)
    assert resumed.snapshot() == a.snapshot(), f"seed {seed}"


def test_a_snapshot_of_another_version_or_garbage_is_refused() -> None:
    for data in (b"", b"[]", b'{"version": 99}', b'{"version": 1}'):
        try:
            MetadataImage.restore(data)
        except ValueError as exc:
            assert "snapshot" in str(exc)
        else:
            raise AssertionError(data)
