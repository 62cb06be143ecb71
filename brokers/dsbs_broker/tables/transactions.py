"""Transaction records: the table of every transactional id's record each DSBS broker keeps, its
merge rule, and its file.

The core's transaction coordinator (``brokers/core/transactions/coordinator.py``) keeps one
opaque record per transactional id behind the ``TransactionStore`` seam, and makes every write
conditional on the version it read. On DSBS the id's coordinator (the top rendezvous rank of
``placement_key(id)`` over the live members, as for a group) writes the record into its own
table here, and ``gossip/txn_replication.py`` carries it to every other member, which merges it
into its table. Whichever broker coordinates the id next finds the newest record it received.

Versions. A record's version is ``(writes << 32) | writer``: ``writes`` is one more than the
write count of the record it replaced (1 for an id's first record), ``writer`` the broker that
wrote it. Compared as integers, versions order records by write count, then by writer id.

* A write here takes the stored version's count plus one, so it ranks above every record of the
  id this broker holds, hence above everything it has merged.
* Merging keeps the higher version: commutative, associative and idempotent, so brokers that
  received the same records, in any order, hold the same one.
* Two different records never share a version: one writer gives each count to one record only,
  because a write is refused unless the version it read is still the stored one. So the
  conditional write cannot take another broker's record for the one it read.

Two writers of one id exist only while brokers disagree on who coordinates it (no consensus:
docs/dsbs-metadata.md, "Transactions"). Their records then meet by merge, and the one with more
writes behind it wins, the higher writer id between equal counts: deterministic, the same on
every broker, but not the "right" one in any sense the client could check.

``TxnLog`` keeps the table in the broker's data dir: JSON lines, one per record taken, the
newest per id winning on replay, compacted on open and whenever it grows to several lines per
live id. Records are stored as text when they are UTF-8 (the core's are JSON), as base64 when
not: the table does not read them.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from brokers.core import fsyncs
from brokers.core.atomic_file import replace_file
from brokers.dsbs_broker.packets.wire import TxnEntry

log = logging.getLogger("twinbench.dsbs.transactions")

NO_VERSION = -1  # the core's "absent" (brokers.core.transactions.coordinator.NO_VERSION)
_WRITER_BITS = 32


def next_version(current: int, writer: int) -> int:
    """The version a write by ``writer`` over ``current`` (NO_VERSION: none) stores."""
    writes = (current >> _WRITER_BITS) + 1 if current >= 0 else 1
    return (writes << _WRITER_BITS) | writer


def writer_of(version: int) -> int:
    return version & ((1 << _WRITER_BITS) - 1)


def writes_of(version: int) -> int:
    return version >> _WRITER_BITS if version >= 0 else 0


class TxnTable:
    """Every transactional id's newest record known here (pure: no I/O, no clock)."""

    def __init__(self, node_id: int, *, max_entries: int = 100_000) -> None:
        self.node_id = node_id
        self.max_entries = max_entries
        self.entries: dict[str, TxnEntry] = {}
        # Records taken but not yet appended to the TxnLog (drained by the I/O side).
        self.unpersisted: list[TxnEntry] = []

    def __len__(self) -> int:
        return len(self.entries)

    def __contains__(self, transactional_id: str) -> bool:
        return transactional_id in self.entries

    def get(self, transactional_id: str) -> TxnEntry | None:
        return self.entries.get(transactional_id)

    def version(self, transactional_id: str) -> int:
        e = self.entries.get(transactional_id)
        return NO_VERSION if e is None else e.version

    def ids(self) -> list[str]:
        return sorted(self.entries)

    def has_room(self, transactional_id: str) -> bool:
        """Could a record of ``transactional_id`` be taken (a known id, or room for one)?"""
        return transactional_id in self.entries or len(self.entries) < self.max_entries

    # --- local writes -----------------------------------------------------------------------
    def candidate(self, transactional_id: str, record: bytes, expected: int) -> TxnEntry | None:
        """The entry a write of ``record`` over version ``expected`` would store, or None if
        the stored version is not ``expected`` (another record arrived since it was read)."""
        if self.version(transactional_id) != expected:
            return None
        return TxnEntry(transactional_id, next_version(expected, self.node_id), record)

    def put(self, e: TxnEntry) -> None:
        """Store a ``candidate`` (checked by the caller against the limits)."""
        assert self.version(e.transactional_id) < e.version, "a write must rank above"
        self._store(e)

    # --- replication ------------------------------------------------------------------------
    def merge(self, e: TxnEntry) -> bool:
        """Take a record from a peer if it ranks above ours; True if taken. A new id beyond
        ``max_entries`` is not taken (the caller checks ``has_room`` to tell it apart)."""
        cur = self.entries.get(e.transactional_id)
        if cur is not None and cur.version >= e.version:
            return False
        if cur is None and len(self.entries) >= self.max_entries:
            return False
        self._store(e)
        return True

    def load(self, entries: Iterable[TxnEntry]) -> None:
        """Fill from the file at start (nothing to persist again)."""
        for e in entries:
            cur = self.entries.get(e.transactional_id)
            if cur is None or cur.version < e.version:
                self.entries[e.transactional_id] = e

    def _store(self, e: TxnEntry) -> None:
        self.entries[e.transactional_id] = e
        self.unpersisted.append(e)


def entry_to_json(e: TxnEntry) -> dict[str, Any]:
    try:
        return {"id": e.transactional_id, "v": e.version, "r": e.record.decode()}
    except UnicodeDecodeError:
        return {"id": e.transactional_id, "v": e.version,
                "b64": base64.b64encode(e.record).decode()}


def entry_from_json(d: dict[str, Any]) -> TxnEntry:
    """Raises ValueError (or KeyError, TypeError) for a line that is not an entry."""
    raw = d["r"].encode() if "r" in d else base64.b64decode(d["b64"], validate=True)
    return TxnEntry(str(d["id"]), int(d["v"]), raw)


class TxnLog:
    """The table's JSON-lines file; blocking I/O, one caller at a time (the coordinator runs
    it on a worker thread under a lock)."""

    COMPACT_FACTOR = 4  # rewrite once the file holds this many lines per live id (+ slack)

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = -1
        self._lines = 0

    @property
    def is_open(self) -> bool:
        return self._fd >= 0

    def open(self) -> list[TxnEntry]:
        """Replay the file (the newest entry per id, a torn last line skipped), rewrite it
        with those alone, and open it for appending."""
        newest: dict[str, TxnEntry] = {}
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            data = b""
        for n, line in enumerate(data.split(b"\n"), 1):
            if not line.strip():
                continue
            try:
                e = entry_from_json(json.loads(line))
            except (ValueError, KeyError, TypeError, AttributeError, binascii.Error):
                log.warning("%s: skipping unreadable line %d", self.path, n)
                continue
            cur = newest.get(e.transactional_id)
            if cur is None or cur.version < e.version:
                newest[e.transactional_id] = e
        entries = list(newest.values())
        self.rewrite(entries)
        return entries

    def append(self, entries: list[TxnEntry], *, fsync: bool) -> None:
        if self._fd < 0:
            raise OSError(f"{self.path} is not open")
        if entries:
            os.write(self._fd, "".join(json.dumps(entry_to_json(e)) + "\n"
                                       for e in entries).encode())
            self._lines += len(entries)
        if fsync:
            fsyncs.fdatasync(self._fd)

    def compaction_due(self, live: int) -> bool:
        return self._lines > self.COMPACT_FACTOR * live + 1000

    def rewrite(self, entries: list[TxnEntry]) -> None:
        """Replace the file with ``entries`` (durably: ``replace_file``) and reopen it."""
        self.close()
        replace_file(self.path, "".join(json.dumps(entry_to_json(e)) + "\n" for e in entries))
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        self._lines = len(entries)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
