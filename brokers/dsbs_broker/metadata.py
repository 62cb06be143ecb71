"""Topic records: the topic -> partition -> broker table every DSBS broker keeps (sans-IO).

A record is versioned; a broker keeps, per topic name, the record with the highest
(version, -creator). Creation writes version 1, so two brokers creating the same name at once
both succeed locally and the cluster settles on the lower creator id's record (documented race:
the losing creator's clients see the winner's assignment after one metadata refresh).

Dissemination is gossip (piggybacked broadcast) plus anti-entropy: digests of
(name hash, version, creator) over a contiguous range of name hashes, exchanged with a random
peer. A digest covers *every* record in its range, so the receiver can tell both what the sender
lacks and what the sender has newer; ranges rotate, so any number of topics fits in bounded
packets.
"""

from __future__ import annotations

import bisect

from brokers.dsbs_broker.wire import DigestEntry, TopicRecord, encode_update, name_hash

MAX_HASH = (1 << 64) - 1


def _rank(r: TopicRecord | DigestEntry) -> tuple[int, int]:
    return (r.version, -r.creator)


class TopicStore:
    def __init__(self) -> None:
        self.records: dict[str, TopicRecord] = {}
        self.encoded: dict[str, bytes] = {}
        self._by_hash: dict[int, str] = {}
        self._hashes: list[int] = []  # sorted, for range digests
        self.version = 0  # bumped on every accepted change

    def __contains__(self, name: str) -> bool:
        return name in self.records

    def __len__(self) -> int:
        return len(self.records)

    def get(self, name: str) -> TopicRecord | None:
        return self.records.get(name)

    def apply(self, rec: TopicRecord) -> bool:
        """Merge a record; True if it was new or newer than ours."""
        cur = self.records.get(rec.name)
        if cur is not None and _rank(rec) <= _rank(cur):
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
            entries.append(DigestEntry(h, r.version, r.creator))
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
            if d is None or _rank(d) < _rank(self.records[name]):
                out.append(name)
        return out
