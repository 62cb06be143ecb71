"""What a Raft node keeps on disk: its term and vote, its log, its latest snapshot.

Raft is only safe if a node never forgets a vote it gave or an entry it acknowledged, so the
driver (node.py) persists each Ready here, durably, before the Ready's messages leave:

* ``vote.json``: term and vote, replaced atomically and fsynced (brokers/core/atomic_file.py)
  whenever either changes. The commit index is not kept: a restarted node learns it again
  from the leader, and the applied state is rebuilt from the snapshot and the log.
* ``log.<generation>``: the entries after the snapshot, appended as frames ``index u64 | term
  u64 | length u32 | crc32 u32 | data`` and fdatasynced once per Ready. A leader of a later
  term that overwrites entries makes the file be rewritten up to them (rare: only an
  uncommitted tail is ever overwritten). A torn or corrupt frame at the end, left by a crash
  in the middle of an append, was never acknowledged (the append had not returned): it is
  dropped on load.
* ``snapshot``: ``index u64 | term u64 | generation u64 | data``, replaced atomically. The
  generation names the log file that goes with it, so a snapshot and the log after it change
  together in that one rename: the new log (what the snapshot leaves of the old one, or
  nothing for a snapshot received from a leader) is written to the next generation's file
  first, then the snapshot names it, then the old file goes. A crash anywhere in between
  leaves either the old pair or the new one, never a new snapshot with old entries after it
  (entries a leader's snapshot had replaced would come back as a tail of the wrong terms) nor
  an old snapshot without the entries that followed it (acknowledged entries lost).

* ``cluster.json``: the cluster id the directory was first used with; another id is refused.

Bad files are one clear error (``StorageError``), never a silent reset: a node that lost its
vote must not vote again in the same term.
"""

from __future__ import annotations

import json
import os
import struct
import zlib
from collections.abc import Sequence
from pathlib import Path

from brokers.core import fsyncs
from brokers.core.atomic_file import replace_file
from brokers.core.errors import UserError
from brokers.raft_broker.raft.log import HardState, Snapshot
from brokers.raft_broker.raft.messages import Entry

_FRAME = struct.Struct(">QQII")
CLUSTER_FILE = "cluster.json"
_SNAP = struct.Struct(">QQQ")


class StorageError(UserError):
    """A Raft data directory that cannot be read back as written."""


class RaftStorage:
    def __init__(self, directory: Path, cluster_id: str | None = None) -> None:
        self.dir = directory
        self.dir.mkdir(parents=True, exist_ok=True)
        if cluster_id is not None:
            self._claim(cluster_id)
        self._vote_path = directory / "vote.json"
        self._generation = 0  # the log file's: named by the snapshot (0 before any)
        self._snap_path = directory / "snapshot"
        self._persisted_vote: tuple[int, int | None] = (0, None)
        self.entries: list[Entry] = []
        self.snapshot: Snapshot | None = None
        self.hard_state = HardState()
        self._load()
        self._log = open(self._log_path, "ab")  # noqa: SIM115 - held open for appends

    @property
    def _log_path(self) -> Path:
        return self.dir / f"log.{self._generation}"

    # --- loading ----------------------------------------------------------------------------
    def _claim(self, cluster_id: str) -> None:
        """The directory belongs to one cluster (KRaft's meta.properties): marked on first use,
        refused to any other, so a node pointed at another cluster's log never votes with it."""
        path = self.dir / CLUSTER_FILE
        if path.exists():
            try:
                held = json.loads(path.read_bytes())["cluster_id"]
            except (ValueError, KeyError, TypeError) as exc:
                raise StorageError(f"{path}: not a cluster id file ({exc})") from None
            if held != cluster_id:
                raise StorageError(f"{self.dir} holds the Raft log of cluster {held!r}, not of "
                                   f"{cluster_id!r}: give this node its own directory, or the "
                                   "cluster id it was started with")
            return
        replace_file(path, json.dumps({"cluster_id": cluster_id}))

    def _load(self) -> None:
        if self._vote_path.exists():
            try:
                doc = json.loads(self._vote_path.read_bytes())
                term, vote = int(doc["term"]), doc["voted_for"]
                if vote is not None:
                    vote = int(vote)
            except (ValueError, KeyError, TypeError) as exc:
                raise StorageError(f"{self._vote_path}: not a Raft vote file ({exc})") from None
            self.hard_state = HardState(term, vote, 0)
            self._persisted_vote = (term, vote)
        if self._snap_path.exists():
            data = self._snap_path.read_bytes()
            if len(data) < _SNAP.size:
                raise StorageError(f"{self._snap_path}: a snapshot of {len(data)} bytes")
            index, term, self._generation = _SNAP.unpack_from(data)
            self.snapshot = Snapshot(index, term, data[_SNAP.size:])
        for stale in self.dir.glob("log.*"):
            if stale.name != self._log_path.name:
                stale.unlink()  # a switch a crash interrupted, on either side of the rename
        base = self.snapshot.index if self.snapshot else 0
        entries, good = self._read_log(base)
        self.entries = entries
        if self._log_path.exists() and good < self._log_path.stat().st_size:
            os.truncate(self._log_path, good)  # the torn tail of an append a crash cut short

    def _read_log(self, base: int) -> tuple[list[Entry], int]:
        """The entries after ``base`` in the log file, and the length of its sound prefix."""
        if not self._log_path.exists():
            return [], 0
        data = self._log_path.read_bytes()
        out: list[Entry] = []
        pos = 0
        while pos + _FRAME.size <= len(data):
            index, term, length, crc = _FRAME.unpack_from(data, pos)
            end = pos + _FRAME.size + length
            if end > len(data) or zlib.crc32(data[pos + _FRAME.size:end]) != crc:
                break
            if index > base:
                if index != (out[-1].index if out else base) + 1:
                    raise StorageError(f"{self._log_path}: entry {index} out of sequence")
                out.append(Entry(term, index, data[pos + _FRAME.size:end]))
            pos = end
        return out, pos

    # --- writing (the Ready order: snapshot, entries, hard state) ---------------------------
    def save_snapshot(self, snapshot: Snapshot, *, replaces_log: bool) -> None:
        """Keep ``snapshot`` and drop the entries it covers; all entries when it
        ``replaces_log`` (received from a leader: what followed it here may conflict)."""
        keep = [] if replaces_log else [e for e in self.entries if e.index > snapshot.index]
        old = self._log_path
        self._log.close()
        self._generation += 1
        replace_file(self._log_path, _frames(keep))
        replace_file(self._snap_path, _SNAP.pack(snapshot.index, snapshot.term,
                                                 self._generation) + snapshot.data)
        old.unlink(missing_ok=True)
        self.snapshot = snapshot
        self.entries = keep
        self._log = open(self._log_path, "ab")  # noqa: SIM115 - held open for appends

    def append(self, entries: Sequence[Entry]) -> None:
        """Persist ``entries``: those at or after the first one's index are replaced."""
        if not entries:
            return
        first = entries[0].index
        if self.entries and first <= self.entries[-1].index:
            self._rewrite([e for e in self.entries if e.index < first])
        self._log.write(_frames(entries))
        self._log.flush()
        fsyncs.fdatasync(self._log.fileno())
        self.entries.extend(entries)

    def save_hard_state(self, hs: HardState) -> None:
        """Persist term and vote (fsynced) when they changed; the commit index is not kept."""
        if (hs.term, hs.voted_for) != self._persisted_vote:
            replace_file(self._vote_path, json.dumps({"term": hs.term,
                                                      "voted_for": hs.voted_for}))
            self._persisted_vote = (hs.term, hs.voted_for)
        self.hard_state = HardState(hs.term, hs.voted_for, 0)

    def _rewrite(self, keep: list[Entry]) -> None:
        self._log.close()
        replace_file(self._log_path, _frames(keep))
        self.entries = keep
        self._log = open(self._log_path, "ab")  # noqa: SIM115 - held open for appends

    def close(self) -> None:
        self._log.close()


def _frames(entries: Sequence[Entry]) -> bytes:
    return b"".join(_FRAME.pack(e.index, e.term, len(e.data), zlib.crc32(e.data)) + e.data
                    for e in entries)
