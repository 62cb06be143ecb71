"""Small durable state files in a broker's data directory: JSON documents and a JSON-lines journal.

Used by the single-node coordinator (topics, committed offsets, producer-id blocks). Two shapes:

* ``JsonDocument``: a whole document replaced atomically and durably (``atomic_file``), for
  state that changes rarely (topic definitions, the producer-id high-water mark).
* ``JsonJournal``: an append-only log of JSON lines for state that changes on the data path
  (offset commits). Replay keeps the last value per key; a torn last line after a crash is
  skipped; the file is compacted on open so it does not grow without bound across restarts.

Never pickle: these files outlive the code that wrote them and must be readable by people.
Both rewrite files, so their owner must hold the data directory's lock first (``DataDir``).
I/O errors propagate as OSError; the owner decides what a failure means.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from brokers.core import fsyncs
from brokers.core.atomic_file import replace_file
from brokers.core.errors import UserError

log = logging.getLogger("twinbench.state")


class JsonDocument:
    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self, default: Any) -> Any:
        try:
            return json.loads(self.path.read_text())
        except FileNotFoundError:
            return default
        except ValueError as exc:
            raise UserError(
                f"{self.path} is not valid JSON ({exc}); restore or remove it") from None

    def store(self, value: Any) -> None:
        replace_file(self.path, json.dumps(value, sort_keys=True))


class JsonJournal:
    """Append-only JSON lines; ``fsync`` per append is the caller's durability choice."""

    def __init__(self, path: Path, *, fsync: bool = False) -> None:
        self.path = path
        self._fsync = fsync
        entries = list(self._replay())
        # Compact: rewrite only the surviving entries so restarts do not accumulate history.
        replace_file(path, "".join(json.dumps(entry, sort_keys=True) + "\n" for entry in entries))
        self.entries = entries
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND)

    def _replay(self) -> Iterator[Any]:
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return
        for number, line in enumerate(data.split(b"\n"), 1):
            if not line.strip():
                continue
            try:
                yield json.loads(line)
            except ValueError:
                # Only a crash mid-write produces this, and only on the last line.
                log.warning("%s: skipping unreadable line %d (torn write)", self.path, number)

    def rewrite(self, entries: list[Any]) -> None:
        """Replace the whole journal with ``entries`` (an owner that reduces its replay to
        fewer entries than it read keeps only those)."""
        replace_file(self.path, "".join(json.dumps(e, sort_keys=True) + "\n" for e in entries))
        os.close(self._fd)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        self.entries = list(entries)

    def append(self, entries: list[Any]) -> None:
        os.write(self._fd, "".join(json.dumps(e, sort_keys=True) + "\n" for e in entries).encode())
        if self._fsync:
            fsyncs.fdatasync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
