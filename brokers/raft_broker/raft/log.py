"""The Raft log in memory, above a snapshot base, and the state a node must persist.

``RaftLog`` holds the entries after the last snapshot: the snapshot's index and term are the
base (index 0, term 0 for an empty log), so ``term_at(base)`` still answers the log-matching
check for an Append that starts right after it. Entries are contiguous: entry ``i`` sits at
position ``i - base - 1``.

Durable state, besides the entries and the snapshot: ``HardState`` (term, vote, commit index).
A vote given is persisted before it is sent, so a restarted node cannot vote twice in a term.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from brokers.raft_broker.raft.messages import Entry


@dataclass(frozen=True, slots=True)
class HardState:
    term: int = 0
    # The candidate this node voted for in ``term``, None if none.
    voted_for: int | None = None
    # The highest index known committed; saves re-learning it after a restart (not required for
    # safety: it only ever grows and a leader re-establishes it).
    commit: int = 0


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The application's state up to ``index`` (whose entry had ``term``), opaque to Raft."""

    index: int
    term: int
    data: bytes = field(default=b"", repr=False)


class RaftLog:
    __slots__ = ("_base_index", "_base_term", "_entries")

    def __init__(self, base_index: int = 0, base_term: int = 0,
                 entries: Sequence[Entry] = ()) -> None:
        if base_index < 0 or base_term < 0:
            raise ValueError("a log's base index and term must be >= 0")
        self._base_index = base_index
        self._base_term = base_term
        self._entries: list[Entry] = []
        if entries:
            self._check_contiguous(base_index, entries)
            self._entries.extend(entries)

    @staticmethod
    def _check_contiguous(after: int, entries: Sequence[Entry]) -> None:
        for k, e in enumerate(entries):
            if e.index != after + 1 + k:
                raise ValueError(f"entry at index {e.index} where {after + 1 + k} follows")

    @property
    def snapshot_index(self) -> int:
        return self._base_index

    @property
    def snapshot_term(self) -> int:
        return self._base_term

    @property
    def first_index(self) -> int:
        """Index of the first entry held (past the end when none are)."""
        return self._base_index + 1

    @property
    def last_index(self) -> int:
        return self._base_index + len(self._entries)

    @property
    def last_term(self) -> int:
        return self._entries[-1].term if self._entries else self._base_term

    def __len__(self) -> int:
        return len(self._entries)

    def term_at(self, index: int) -> int | None:
        """The term of the entry at ``index``; the base's term at the base; None when the
        entry was compacted away or is past the end."""
        pos = index - self._base_index - 1
        if pos >= 0:
            return self._entries[pos].term if pos < len(self._entries) else None
        return self._base_term if pos == -1 else None

    def entry(self, index: int) -> Entry:
        pos = index - self._base_index - 1
        if not 0 <= pos < len(self._entries):
            raise IndexError(f"entry {index} is not held (held: {self.first_index}.."
                             f"{self.last_index})")
        return self._entries[pos]

    def slice(self, lo: int, hi: int, max_count: int | None = None) -> list[Entry]:
        """Entries with ``lo <= index < hi``, at most ``max_count`` of them; ``lo`` must not
        be below ``first_index`` (those were compacted)."""
        if lo < self.first_index:
            raise IndexError(f"entry {lo} was compacted (first held: {self.first_index})")
        hi = min(hi, self.last_index + 1)
        if max_count is not None:
            hi = min(hi, lo + max_count)
        if hi <= lo:
            return []
        base = self._base_index + 1
        return self._entries[lo - base:hi - base]

    def is_up_to_date(self, last_index: int, last_term: int) -> bool:
        """Is a log ending at (last_index, last_term) at least as up to date as this one (the
        election restriction: later last term wins, then the longer log)?"""
        mine = self.last_term
        return last_term > mine or (last_term == mine and last_index >= self.last_index)

    def append(self, entries: Sequence[Entry], committed: int) -> int | None:
        """Merge contiguous ``entries`` (from a leader, after the log-matching check passed):
        entries already held with the same term are kept, the first that conflicts (same index,
        other term) is deleted with all that follow, and the rest are appended. Returns the
        index of the first entry written, None when nothing changed.

        Entries at or below ``committed`` never conflict in a correct cluster; one that does
        means a safety bug, and raises AssertionError rather than lose committed data."""
        for k, e in enumerate(entries):
            if e.index <= self._base_index:
                continue  # compacted: committed, hence identical
            pos = e.index - self._base_index - 1
            if pos < len(self._entries):
                if self._entries[pos].term == e.term:
                    continue
                if e.index <= committed:
                    raise AssertionError(f"entry {e.index} conflicts with a committed entry "
                                         f"(committed through {committed})")
                del self._entries[pos:]
            elif pos > len(self._entries):
                raise ValueError(f"entry {e.index} leaves a gap after {self.last_index}")
            rest = entries[k:]
            self._check_contiguous(e.index - 1, rest)
            self._entries.extend(rest)
            return e.index
        return None

    def compact(self, index: int) -> None:
        """Drop the entries up to ``index``, which becomes the base (its term kept)."""
        term = self.term_at(index)
        if index < self._base_index or term is None:
            raise IndexError(f"cannot compact to {index} (held: {self._base_index}.."
                             f"{self.last_index})")
        del self._entries[:index - self._base_index]
        self._base_index = index
        self._base_term = term

    def restore(self, index: int, term: int) -> None:
        """Replace the whole log by a snapshot's base (InstallSnapshot)."""
        self._entries.clear()
        self._base_index = index
        self._base_term = term

    def conflict_hint(self, prev_index: int, prev_term: int, floor: int) -> int:
        """For a rejected Append at (prev_index, prev_term): the last index that may match the
        leader's log. Entries of a term above ``prev_term`` cannot (a leader's terms never
        decrease along its log), so they are skipped; never below ``floor`` (the commit
        index, known to match)."""
        hint = min(prev_index, self.last_index)
        while hint > floor:
            term = self.term_at(hint)
            if term is None or term <= prev_term:
                break
            hint -= 1
        return hint
