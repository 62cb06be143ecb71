"""Committed offsets: the consumer -> offset table of the DSBS paper, local and durable.

``OffsetTable`` (pure, no I/O) holds the entries, merges replicated copies last-writer-wins on
(stamp, origin), and tracks which entries still have to reach which peer (dirty sets per peer,
in-flight batches until acknowledged, retried otherwise) and which entries each peer has
acknowledged (``held``: the newest stamp per key), so a commit can wait until a successor holds
it. The gossip state machine decides the peers (a group's next rendezvous ranks) and carries the
batches (``gossip/offset_replication.py``).

A stamp is a Lamport clock seeded with wall-clock time: never behind any stamp this table has
stored or merged. A coordinator that has pulled its groups' entries from its peers before it
serves (as ``OffsetReplication`` makes it) therefore stamps every new commit above every older
one it could conflict with, whatever the clocks say.

A deleted offset (DeleteGroups, OffsetDelete) is an entry with offset -1, a tombstone stamped and
replicated like any commit, so an older copy arriving later cannot bring the offset back; reads
skip it (to a client, -1 is "no committed offset" anyway).

``OffsetLog`` makes the table durable in the broker's data dir: an append-only JSON-lines file,
one line per accepted entry, fsynced before a commit is acknowledged (``DsbsConfig.offsets_fsync``;
replicated copies are appended without fsync, since the coordinator already holds them durably).
Replay keeps the newest entry per key and skips a torn last line; the file is rewritten and
renamed (compacted) on open and whenever it grows to several times the live entries.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from json.encoder import encode_basestring_ascii
from pathlib import Path
from typing import TextIO

from brokers.core import fsyncs
from brokers.core.atomic_file import replace_file
from brokers.core.coordinator import OffsetAndMetadata, TopicPartition
from brokers.dsbs_broker.packets.wire import OffsetEntry

log = logging.getLogger("twinbench.dsbs.offsets")

Key = tuple[str, str, int]  # (group, topic, partition)
Held = list[tuple[Key, int]]  # entries as (key, stamp): what "holding" them means
DELETED = -1  # the offset of a tombstone


def _key(e: OffsetEntry) -> Key:
    return (e.group, e.topic, e.partition)


def _newer(a: OffsetEntry, b: OffsetEntry) -> bool:
    return (a.stamp, a.origin) > (b.stamp, b.origin)


class OffsetTable:
    def __init__(self, node_id: int) -> None:
        self.node_id = node_id
        self.entries: dict[Key, OffsetEntry] = {}
        self._by_group: dict[str, set[Key]] = {}
        self._last_stamp = 0
        # Replication bookkeeping: keys still to send per peer, batches awaiting an ack.
        self.dirty: dict[int, set[Key]] = {}
        self.inflight: dict[int, tuple[int, float, Held]] = {}  # batch -> (peer, sent, entries)
        # Per peer, the newest stamp it acknowledged per key (reset when it asks for a pull:
        # it may have restarted and lost what it had not written).
        self.held: dict[int, dict[Key, int]] = {}
        self._next_batch = 1
        # Entries accepted but not yet written to the OffsetLog (drained by the I/O side).
        self.unpersisted: list[OffsetEntry] = []

    # --- local commits and reads ------------------------------------------------------------
    def stamp(self, wall_ms: int) -> int:
        """A last-writer-wins clock: wall-clock ms * 1024, but never behind anything seen."""
        s = max(wall_ms * 1024, self._last_stamp + 1)
        self._last_stamp = s
        return s

    def commit(
        self, group: str, offsets: Mapping[TopicPartition, OffsetAndMetadata], wall_ms: int
    ) -> list[OffsetEntry]:
        out = []
        for tp, om in offsets.items():
            e = OffsetEntry(group, tp.topic, tp.partition, om.offset, om.leader_epoch,
                            om.commit_timestamp_ms, om.metadata, self.stamp(wall_ms), self.node_id)
            self._store(e)
            out.append(e)
        return out

    def fetch(
        self, group: str, partitions: Iterable[TopicPartition] | None
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        keys = self._by_group.get(group, set())
        if partitions is None:
            wanted: Iterable[Key] = keys
        else:
            wanted = [(group, tp.topic, tp.partition) for tp in partitions]
        out = {}
        for k in wanted:
            e = self.entries.get(k)
            if e is not None and e.offset != DELETED:
                out[TopicPartition(e.topic, e.partition)] = OffsetAndMetadata(
                    e.offset, e.metadata, e.leader_epoch, e.commit_timestamp_ms)
        return out

    def groups(self) -> list[str]:
        return list(self._by_group)

    def group_keys(self, group: str) -> set[Key]:
        return self._by_group.get(group, set())

    # --- replication ------------------------------------------------------------------------
    def merge(self, entries: Iterable[OffsetEntry]) -> list[OffsetEntry]:
        """Apply replicated entries; returns those that were newer than ours."""
        accepted = []
        for e in entries:
            cur = self.entries.get(_key(e))
            if cur is None or _newer(e, cur):
                self._last_stamp = max(self._last_stamp, e.stamp)
                self._store(e)
                accepted.append(e)
        return accepted

    def load(self, entries: Iterable[OffsetEntry]) -> None:
        """Fill from the durable log at start (no re-persisting)."""
        for e in entries:
            cur = self.entries.get(_key(e))
            if cur is None or _newer(e, cur):
                self._last_stamp = max(self._last_stamp, e.stamp)
                self.entries[_key(e)] = e
                self._by_group.setdefault(e.group, set()).add(_key(e))

    def mark_dirty(self, keys: Iterable[Key], peers: Iterable[int]) -> None:
        keys = list(keys)
        for p in peers:
            if p != self.node_id:
                self.dirty.setdefault(p, set()).update(keys)

    def take_dirty(self, peer: int) -> list[OffsetEntry]:
        keys = self.dirty.pop(peer, set())
        return [self.entries[k] for k in keys if k in self.entries]

    def new_batch(self, peer: int, now: float, entries: Iterable[OffsetEntry]) -> int:
        b = self._next_batch
        self._next_batch = (self._next_batch + 1) & 0xFFFFFFFF or 1
        self.inflight[b] = (peer, now, [(_key(e), e.stamp) for e in entries])
        return b

    def acked(self, peer: int, batch: int) -> bool:
        """Record ``peer``'s acknowledgement of ``batch``; False if it was not one of ours."""
        got = self.inflight.get(batch)
        if got is None or got[0] != peer:
            return False
        del self.inflight[batch]
        held = self.held.setdefault(peer, {})
        for k, stamp in got[2]:
            if held.get(k, -1) < stamp:
                held[k] = stamp
        return True

    def holds(self, peer: int, items: Held) -> bool:
        """Has ``peer`` acknowledged each of these entries, or a newer one of its key?"""
        held = self.held.get(peer)
        return held is not None and all(held.get(k, -1) >= stamp for k, stamp in items)

    def expire_inflight(self, now: float, timeout: float) -> None:
        """Unacknowledged batches go back to the dirty sets (UDP may have lost them)."""
        for b, (peer, sent, items) in list(self.inflight.items()):
            if now - sent >= timeout:
                del self.inflight[b]
                self.dirty.setdefault(peer, set()).update(k for k, _ in items)

    def _store(self, e: OffsetEntry) -> None:
        k = _key(e)
        self.entries[k] = e
        self._by_group.setdefault(e.group, set()).add(k)
        self.unpersisted.append(e)


def entry_to_json(e: OffsetEntry) -> dict:
    return {"g": e.group, "t": e.topic, "p": e.partition, "o": e.offset, "e": e.leader_epoch,
            "ts": e.commit_timestamp_ms, "m": e.metadata, "s": e.stamp, "n": e.origin}


def encode_lines(entries: Iterable[OffsetEntry]) -> str:
    """The log lines of ``entries``: exactly ``json.dumps(entry_to_json(e)) + "\\n"`` each, built
    without the intermediate dict and encoder call (every commit encodes on the event loop)."""
    q = encode_basestring_ascii  # the C quoting json.dumps uses with ensure_ascii=True
    return "".join(
        f'{{"g": {q(e.group)}, "t": {q(e.topic)}, "p": {e.partition:d}, "o": {e.offset:d}, '
        f'"e": {e.leader_epoch:d}, "ts": {e.commit_timestamp_ms:d}, '
        f'"m": {"null" if e.metadata is None else q(e.metadata)}, "s": {e.stamp:d}, '
        f'"n": {e.origin:d}}}\n'
        for e in entries)


def entry_from_json(d: dict) -> OffsetEntry:
    return OffsetEntry(str(d["g"]), str(d["t"]), int(d["p"]), int(d["o"]), int(d["e"]),
                       int(d["ts"]), None if d["m"] is None else str(d["m"]), int(d["s"]),
                       int(d["n"]))


class OffsetLog:
    """Append-only JSON lines of OffsetEntry; blocking I/O (call it from a worker thread)."""

    COMPACT_FACTOR = 4  # rewrite once the file holds this many lines per live entry (+ slack)

    @classmethod
    def compaction_due(cls, lines: int, live: int) -> bool:
        """Whether a file of ``lines`` lines holding ``live`` distinct keys should be rewritten."""
        return lines > cls.COMPACT_FACTOR * live + 1000

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lines = 0
        self._live = 0
        self._f: TextIO | None = None

    @property
    def is_open(self) -> bool:
        return self._f is not None

    @property
    def lines(self) -> int:
        return self._lines

    def open(self) -> list[OffsetEntry]:
        latest: dict[Key, OffsetEntry] = {}
        if self.path.exists():
            with open(self.path, encoding="utf-8", errors="replace") as f:
                for n, line in enumerate(f, 1):
                    try:
                        e = entry_from_json(json.loads(line))
                    except (ValueError, KeyError, TypeError):
                        # A torn tail after a crash; anything else is corruption worth a line.
                        log.warning("%s: skipping unreadable line %d", self.path, n)
                        continue
                    cur = latest.get(_key(e))
                    if cur is None or _newer(e, cur):
                        latest[_key(e)] = e
        entries = list(latest.values())
        self._rewrite(entries)
        return entries

    def append(self, entries: list[OffsetEntry], *, fsync: bool, live: int) -> None:
        self.append_encoded(encode_lines(entries), len(entries), fsync=fsync)
        self._live = live

    def append_encoded(self, data: str, lines: int, *, fsync: bool) -> None:
        """Append ``lines`` lines already built by ``encode_lines`` (possibly several commits')."""
        if self._f is None:
            raise RuntimeError("OffsetLog is not open")
        if data:
            self._f.write(data)
            self._f.flush()
        if fsync:
            fsyncs.fsync(self._f.fileno())
        self._lines += lines

    def maybe_compact(self, entries: list[OffsetEntry]) -> None:
        if self.compaction_due(self._lines, len(entries)):
            self._rewrite(entries)

    def compact(self, entries: list[OffsetEntry]) -> None:
        """Rewrite the file to ``entries`` (the newest entry of every key) and fsync it."""
        self._rewrite(entries)

    def _rewrite(self, entries: list[OffsetEntry]) -> None:
        if self._f is not None:
            self._f.close()
        replace_file(self.path, encode_lines(entries))
        self._lines = self._live = len(entries)
        self._f = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - lives until close()

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None
