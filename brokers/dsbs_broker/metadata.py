"""Topic records: the topic -> partition -> broker table every DSBS broker keeps (sans-IO).

Records enter the table only once committed by the name's arbiter (``creation.py``): the
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
larger config list), under the version that sum gives (one more if that would tie with a
different record, so the merge outranks what it replaces). Every input decides the merge
symmetrically, so brokers converge whatever order records reach them in; a stale record can
never shrink a topic or bring back older configs.

A topic is deleted by a deletion record (a tombstone: the record with ``deleted`` set, one
version up, written by the broker a client asked, ``tombstone``). Among records of one
creation a tombstone always wins (``merge``): a stale or late record of the deleted topic can
never bring it back, whatever it grew to meanwhile (the tombstone then takes a version above
it, so digests rank it above the record it replaces). A new topic of the name is a new
creation, decided by the arbiter like any other, one creation epoch above the tombstone's
(``creation.py``); the epoch is ranked first, so the new topic outranks the tombstone and
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

Dissemination is gossip (piggybacked broadcast) plus anti-entropy: digests of
(name hash, version, creator) over a contiguous range of name hashes, exchanged with a random
peer. A digest covers *every* record in its range, so the receiver can tell both what the sender
lacks and what the sender has newer; ranges rotate, so any number of topics fits in bounded
packets.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Iterable
from typing import Any

from brokers.dsbs_broker.placement import grow_ring
from brokers.dsbs_broker.wire import DigestEntry, TopicRecord, encode_update, name_hash

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
    """What a broker holding ``cur`` keeps when ``rec`` (same name) arrives."""
    if rec.token != cur.token or not rec.token:
        # Competing creations (token 0: no creating request to tell them apart), or a new
        # topic of a deleted name: the higher rank replaces the other.
        return max(cur, rec, key=_order)
    if cur.deleted or rec.deleted:
        # The deletion of a creation is final for every record of it: the tombstone wins,
        # ranked above the record it meets (a record that grew after the deletion was written
        # would otherwise outrank it in digests).
        tomb = max((r for r in (cur, rec) if r.deleted), key=_order)
        other = rec if tomb is cur else cur
        if other.deleted or rank(other) < rank(tomb):
            return tomb
        return dataclasses.replace(tomb, version=other.version + 1)
    parts = max(cur, rec, key=lambda r: (r.num_partitions, r.ring))
    cfg = max(cur, rec, key=lambda r: (r.version - r.num_partitions, r.configs))
    top = max(cur, rec, key=rank)
    merged = dataclasses.replace(
        parts, version=parts.num_partitions + cfg.version - cfg.num_partitions,
        creator=min(cur.creator, rec.creator), configs=cfg.configs)
    if merged in (top, cur):
        return merged
    if rank(merged) <= rank(top):  # same rank as a different record: digests could not tell
        merged = dataclasses.replace(merged, version=top.version + 1)
    return merged


class TopicStore:
    def __init__(self) -> None:
        self.records: dict[str, TopicRecord] = {}
        self.encoded: dict[str, bytes] = {}
        self._by_hash: dict[int, str] = {}
        self._hashes: list[int] = []  # sorted, for range digests
        self.version = 0  # bumped on every accepted change
        self.unpersisted: list[TopicRecord] = []  # taken, not yet handed to the topics file

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
        self.version += 1
        self.unpersisted.append(rec)
        return True

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
            entries.append(DigestEntry(h, r.version, r.creator, r.explicit, r.epoch))
        if i + max_entries >= len(self._hashes):
            return start, MAX_HASH, entries, 0
        hi = chosen[-1] if chosen else start
        return start, hi, entries, hi + 1

    def missing_from(self, lo: int, hi: int, digest: tuple[DigestEntry, ...]) -> list[str]:
        """Names of our records in [lo, hi] that the digest lacks or has older."""
        theirs = {d.name_hash: d for d in digest}
        out = []
        i = bisect.bisect_left(self._hashes, lo)
        j = bisect.bisect_right(self._hashes, hi)
        for h in self._hashes[i:j]:
            name = self._by_hash[h]
            d = theirs.get(h)
            if d is None or rank(d) < rank(self.records[name]):
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
