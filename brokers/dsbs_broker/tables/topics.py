"""Topic records: the topic -> partition -> broker table every DSBS broker keeps (sans-IO).

Records enter the table only once committed by the name's arbiter (``gossip/creation.py``): the
arbiter has asked every live member and none held a record of that name or had promised it to
another arbiter. So a name normally has exactly one record, cluster-wide, from its creation on.

Two records of one name ("competing records") can still exist after a network partition or
after two arbiters each declared the other dead (the residual race, ``docs/dsbs-metadata.md``).
Every broker then keeps the record of highest rank, (version, explicit, -creator): an explicit
CreateTopics outranks an auto-creation, and between two of a kind the lower arbiter id wins.
The merge is deterministic, so the cluster converges on one record once the records meet.

Records of one creation (same ``token``) also change later, by the broker a client asked:
CreatePartitions (``grown``: version raised by exactly the number of partitions added) and
AlterConfigs (``with_configs``: version raised by one). So a record's version is its partition
count plus the number of config changes behind it plus a constant of its creation, and two
records of one creation are merged, not ranked (``merge``): the partition count and ring of
the larger topic (ties: the larger ring) and the configs of the more changed one (ties: the
larger config list), under the version that sum gives. The merge is a join (commutative,
associative, idempotent), so brokers converge whatever order and grouping records reach them
in; a stale record can never shrink a topic or bring back older configs.

A topic is deleted by a deletion record (a tombstone: the record with ``deleted`` set, one
version up, written by the broker a client asked, ``tombstone``). Among records of one
creation a tombstone always wins (``merge``): a stale or late record of the deleted topic can
never bring it back, whatever it grew to meanwhile (it may then outrank the tombstone; the
content tag in digests makes anti-entropy exchange the two anyway). A new topic of the name is a new
creation, decided by the arbiter like any other, one creation epoch above the tombstone's
(``gossip/creation.py``); the epoch is ranked first, so the new topic outranks the tombstone and
every record of the deleted topic everywhere, including one a broker that had heard of neither
the deletion nor the new topic changed meanwhile. Tombstones are kept, never
forgotten: forgetting one safely needs to know that no member, including dead or partitioned
ones that may come back, still holds a record of the deleted topic, which gossip cannot know;
a tombstone costs one small record per deleted name until a new topic of the name replaces
it, and it counts against ``max_topics`` like a topic. ``get`` and ``in`` see live topics only;
``held`` sees tombstones too.

Records are durable: every record taken into the table is appended to ``unpersisted``, which the
coordinator writes to the broker's topics file (``record_to_json`` / ``record_from_json``) and
loads back at start, so a restarted broker still holds the records it held.

A topic with more than one replica also has a record per partition that changed leader or ISR
(``wire.PartitionRecord``, rules in ``leaders.py``), kept here with its topic (``partitions``)
and only while the topic's creation lasts: a deletion or a competing creation that replaces the
topic drops them. Partitions without a record have the implicit one (``partition``).

Dissemination is gossip (piggybacked broadcast) plus anti-entropy: digests of
(name hash, rank, content tag) over a contiguous range of name hashes, exchanged with a random
peer. A digest covers *every* record in its range, so the receiver can tell both what the sender
lacks and what the sender has newer; ranges rotate, so any number of topics fits in bounded
packets. The content tag (CRC-32 of the topic record and its partitions' records) tells apart
two holdings of equal rank: when tags differ each side pushes its records, and the merges
settle on one.
"""

from __future__ import annotations

import bisect
import dataclasses
import zlib
from collections.abc import Iterable
from typing import Any

from brokers.dsbs_broker.packets.wire import (
    DigestEntry,
    PartitionRecord,
    Promise,
    TopicRecord,
    encode_update,
    name_hash,
)
from brokers.dsbs_broker.tables import leaders
from brokers.dsbs_broker.tables.replica_placement import grow_ring, replicas

MAX_HASH = (1 << 64) - 1


def rank(r: TopicRecord | DigestEntry) -> tuple[int, int, bool, int]:
    """Which of two records of one name wins: the higher rank. The creation epoch comes
    first: a topic created after the name's previous topic was deleted outranks every record
    of that one, however much it changed meanwhile on a broker that had not heard."""
    return (r.epoch, r.version, r.explicit, -r.creator)


def _order(r: TopicRecord) -> tuple[Any, ...]:
    """A total order on records of one name: rank first, then every other field, so a
    choice between two records never depends on which arrived first."""
    return (rank(r), r.deleted, r.num_partitions, r.ring, r.configs, r.token,
            r.replication_factor)


def merge(cur: TopicRecord, rec: TopicRecord) -> TopicRecord:
    """What a broker holding ``cur`` keeps when ``rec`` (same name) arrives.

    Among records of one creation this is a join (commutative, associative, idempotent), so
    brokers that took the same records in any order and grouping hold the same record, after
    one exchange at most: a tombstone absorbs every live record (the highest tombstone by
    ``_order`` wins among several); between live records each component takes its maximum
    (the partition count and ring of the larger topic, the configs of the longer chain of
    changes, the lowest writer id) and the version follows from them. A merge may rank equal
    to a different record; digests carry a content tag, so anti-entropy still tells them
    apart (``TopicStore.missing_from``). Competing creations (different tokens) are ranked."""
    if rec.token != cur.token or not rec.token:
        # Competing creations (token 0: no creating request to tell them apart), or a new
        # topic of a deleted name: the higher rank replaces the other.
        return max(cur, rec, key=_order)
    if cur.deleted or rec.deleted:
        # The deletion of a creation is final for every record of it.
        return max((r for r in (cur, rec) if r.deleted), key=_order)
    parts = max(cur, rec, key=lambda r: (r.num_partitions, r.ring))
    cfg = max(cur, rec, key=lambda r: (r.version - r.num_partitions, r.configs))
    return dataclasses.replace(
        parts, version=parts.num_partitions + cfg.version - cfg.num_partitions,
        creator=min(cur.creator, rec.creator), configs=cfg.configs)


class TopicStore:
    def __init__(self) -> None:
        self.records: dict[str, TopicRecord] = {}
        self.encoded: dict[str, bytes] = {}
        self._by_hash: dict[int, str] = {}
        self._hashes: list[int] = []  # sorted, for range digests
        self.version = 0  # bumped on every accepted change, partition records' included
        self.unpersisted: list[TopicRecord] = []  # taken, not yet handed to the topics file
        # Replicated partitions' records by topic, then partition, with their encodings.
        self.partitions: dict[str, dict[int, tuple[PartitionRecord, bytes]]] = {}
        self.unpersisted_partitions: list[PartitionRecord] = []  # for the partitions file
        self.tags: dict[str, int] = {}  # content tag per name, for digests
        # Per name, bumped whenever its partition records (or their view) change.
        self.stamps: dict[str, int] = {}
        self.replicated: set[str] = set()  # live topics with more than one replica

    def __contains__(self, name: str) -> bool:
        return self.get(name) is not None

    def __len__(self) -> int:
        """Records held, tombstones included (what the ``max_topics`` cap bounds)."""
        return len(self.records)

    def get(self, name: str) -> TopicRecord | None:
        """The live topic of that name, None if none (or only its tombstone)."""
        rec = self.records.get(name)
        return None if rec is None or rec.deleted else rec

    def held(self, name: str) -> TopicRecord | None:
        """Whatever record of the name is held, a tombstone included."""
        return self.records.get(name)

    def live(self) -> Iterable[TopicRecord]:
        return (r for r in self.records.values() if not r.deleted)

    def apply(self, rec: TopicRecord) -> bool:
        """Merge a record; True if it was new or newer than ours."""
        cur = self.records.get(rec.name)
        if cur is not None:
            rec = merge(cur, rec)
            if rec == cur:
                return False
        if cur is None:
            h = name_hash(rec.name)
            # A 64-bit collision between two names is ignored: the later name is not indexed
            # for anti-entropy (gossip still spreads it). Vanishingly unlikely; never wrong.
            if h not in self._by_hash:
                self._by_hash[h] = rec.name
                bisect.insort(self._hashes, h)
        self.records[rec.name] = rec
        self.encoded[rec.name] = encode_update(rec)
        if cur is not None and (rec.deleted or rec.token != cur.token):
            self.partitions.pop(rec.name, None)  # their creation is gone
        if rec.replication_factor > 1 and not rec.deleted:
            self.replicated.add(rec.name)
        else:
            self.replicated.discard(rec.name)
        self._retag(rec.name)
        self.version += 1
        self.unpersisted.append(rec)
        return True

    # --- replicated partitions --------------------------------------------------------------
    def partition(self, name: str, partition: int) -> PartitionRecord | None:
        """The record of a live topic's partition: held, else the implicit one (None for a
        topic or partition not held)."""
        rec = self.get(name)
        if rec is None or not 0 <= partition < rec.num_partitions:
            return None
        held = self.partitions.get(name, {}).get(partition)
        if held is not None:
            return held[0]
        return leaders.initial(name, rec.token, partition,
                               replicas(rec.ring, rec.replication_factor, partition))

    def apply_partition(self, part: PartitionRecord) -> bool | None:
        """Merge a partition's record; True if it was new or newer than ours, False if not,
        None if it fits no topic held (another creation, no such partition or replicas)."""
        rec = self.get(part.topic)
        if (rec is None or rec.token != part.token or rec.replication_factor < 2
                or not 0 <= part.partition < rec.num_partitions
                or not leaders.consistent(part, replicas(rec.ring, rec.replication_factor,
                                                         part.partition))):
            return None
        cur = self.partition(part.topic, part.partition)
        assert cur is not None  # the topic and partition are held
        kept = leaders.merge(cur, part)
        if kept == cur:
            return False
        self.partitions.setdefault(part.topic, {})[part.partition] = (kept, encode_update(kept))
        self.unpersisted_partitions.append(kept)
        self.touch(part.topic)
        return True

    def partition_updates(self, name: str) -> list[bytes]:
        """The encoded partition records held for ``name``, in partition order."""
        held = self.partitions.get(name)
        return [] if not held else [held[p][1] for p in sorted(held)]

    def touch(self, name: str) -> None:
        """``name``'s partitions (or what a view shows of them) changed."""
        self.stamps[name] = self.stamps.get(name, 0) + 1
        self._retag(name)
        self.version += 1

    def _retag(self, name: str) -> None:
        tag = zlib.crc32(self.encoded[name])
        for enc in self.partition_updates(name):
            tag = zlib.crc32(enc, tag)
        self.tags[name] = tag

    def digest(self, start: int, max_entries: int) -> tuple[int, int, list[DigestEntry], int]:
        """Digest of records with hash >= start, at most max_entries.

        Returns (lo, hi, entries, next_start): the entries are *all* records in [lo, hi];
        next_start is where the following digest should begin (0 after wrapping).
        """
        i = bisect.bisect_left(self._hashes, start)
        chosen = self._hashes[i : i + max_entries]
        entries = []
        for h in chosen:
            r = self.records[self._by_hash[h]]
            entries.append(DigestEntry(h, r.version, r.creator, r.explicit, r.epoch,
                                       self.tags[r.name]))
        if i + max_entries >= len(self._hashes):
            return start, MAX_HASH, entries, 0
        hi = chosen[-1] if chosen else start
        return start, hi, entries, hi + 1

    def missing_from(self, lo: int, hi: int, digest: tuple[DigestEntry, ...]) -> list[str]:
        """Names of our records in [lo, hi] that the digest lacks, has older, or holds with
        other content (another tag: both sides push, the merges settle it)."""
        theirs = {d.name_hash: d for d in digest}
        out = []
        i = bisect.bisect_left(self._hashes, lo)
        j = bisect.bisect_right(self._hashes, hi)
        for h in self._hashes[i:j]:
            name = self._by_hash[h]
            d = theirs.get(h)
            if d is None or d.tag != self.tags[name] or rank(d) < rank(self.records[name]):
                out.append(name)
        return out


def grown(rec: TopicRecord, total: int, writer: int, live_ids: Iterable[int]) -> TopicRecord:
    """``rec`` grown to ``total`` (> its count) partitions, written by ``writer``."""
    ring = grow_ring(rec.name, rec.ring, rec.num_partitions, total, rec.replication_factor,
                     tuple(live_ids))
    return dataclasses.replace(rec, version=rec.version + total - rec.num_partitions,
                               creator=writer, num_partitions=total, ring=ring)


def with_configs(rec: TopicRecord, configs: dict[str, str], writer: int) -> TopicRecord:
    """``rec`` with its configs replaced by ``configs``, written by ``writer``."""
    return dataclasses.replace(rec, version=rec.version + 1, creator=writer,
                               configs=tuple(sorted(configs.items())))


def tombstone(rec: TopicRecord, writer: int) -> TopicRecord:
    """The deletion record of ``rec``'s topic, written by ``writer``."""
    return dataclasses.replace(rec, version=rec.version + 1, creator=writer, deleted=True)


def record_to_json(rec: TopicRecord) -> dict[str, Any]:
    """One line of the topics file."""
    doc = {"name": rec.name, "version": rec.version, "creator": rec.creator,
           "partitions": rec.num_partitions, "replication_factor": rec.replication_factor,
           "ring": list(rec.ring), "configs": [list(c) for c in rec.configs],
           "explicit": rec.explicit, "token": rec.token}
    if rec.deleted:
        doc["deleted"] = True
    if rec.epoch:
        doc["epoch"] = rec.epoch
    return doc


def partition_to_json(rec: PartitionRecord) -> dict[str, Any]:
    """One line of the partitions file."""
    return {"topic": rec.topic, "token": rec.token, "partition": rec.partition,
            "leader": rec.leader, "leader_epoch": rec.leader_epoch, "version": rec.version,
            "isr": list(rec.isr)}


def partition_from_json(d: Any) -> PartitionRecord:
    """A partitions-file line back to a record; ValueError if it is not one."""
    try:
        return PartitionRecord(str(d["topic"]), int(d["token"]), int(d["partition"]),
                               int(d["leader"]), int(d["leader_epoch"]), int(d["version"]),
                               tuple(int(n) for n in d["isr"]))
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError(f"not a partition record: {d!r}") from e


def promise_to_json(topic: str, partition: int, token: int, promise: Promise) -> dict[str, Any]:
    """One line of the promises file."""
    return {"topic": topic, "partition": partition, "token": token, "epoch": promise.epoch,
            "candidate": promise.candidate}


def promise_from_json(d: Any) -> tuple[tuple[str, int], int, Promise]:
    """A promises-file line back to (topic, partition), token and promise; ValueError if it
    is not one."""
    try:
        key = (str(d["topic"]), int(d["partition"]))
        promise = Promise(int(d["epoch"]), int(d["candidate"]))
        token = int(d["token"])
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError(f"not a promise: {d!r}") from e
    if promise.epoch < 1 or promise.candidate < 0:
        raise ValueError(f"not a promise: {d!r}")
    return key, token, promise


def record_from_json(d: Any) -> TopicRecord:
    """A topics-file line back to a record; ValueError if it is not one."""
    try:
        rec = TopicRecord(
            str(d["name"]), int(d["version"]), int(d["creator"]), int(d["partitions"]),
            int(d["replication_factor"]), tuple(int(n) for n in d["ring"]),
            tuple((str(k), str(v)) for k, v in d["configs"]), bool(d["explicit"]),
            int(d["token"]), bool(d.get("deleted", False)), int(d.get("epoch", 0)))
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError(f"not a topic record: {d!r}") from e
    if not rec.name or rec.num_partitions < 1 or not rec.ring:
        raise ValueError(f"not a topic record: {d!r}")
    return rec
