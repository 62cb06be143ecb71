"""ReplayWindows: which packet numbers a member has already taken from each sender (pure).

Every gossip header carries the sender's id, its boot (the incarnation it started with, which
identifies one run of the process) and a packet number that run increments. Like IPsec's
anti-replay window, each sender gets a bitmap of the last ``REPLAY_WINDOW`` numbers below the
highest seen: a duplicate, or a number older than the window, is a replay. A new boot (higher or
lower: a member whose data directory was wiped restarts at a lower incarnation and must still
be heard, to refute its own death) starts a new window. The table keeps at most ``capacity``
senders and forgets the least recently heard one first.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator, MutableMapping
from dataclasses import dataclass

from brokers.dsbs_broker.packets.wire import Header

# How far back the per-sender replay window reaches (packet numbers), like IPsec's.
REPLAY_WINDOW = 64


@dataclass(slots=True)
class _Window:
    boot: int
    top: int  # highest packet number seen
    mask: int  # bit i set: packet number top - i seen


class ReplayWindows:
    """One window per sender id, least recently heard first."""

    def __init__(self, capacity: int, counters: MutableMapping[str, int]) -> None:
        self._capacity = capacity
        # Where peer_restarts_seen and replay_windows_evicted are counted (the node's counters).
        self._counters = counters
        self._windows: OrderedDict[int, _Window] = OrderedDict()

    def __len__(self) -> int:
        return len(self._windows)

    def __iter__(self) -> Iterator[int]:
        return iter(self._windows)

    def __contains__(self, sender: object) -> bool:
        return sender in self._windows

    def fresh(self, h: Header) -> bool:
        """Record ``h``'s packet number; False if that sender's run has sent it before or it
        is older than the window."""
        w = self._windows.get(h.sender)
        if w is None or h.boot != w.boot:
            if w is not None:
                self._counters["peer_restarts_seen"] += 1
            elif len(self._windows) >= self._capacity:
                self._windows.popitem(last=False)  # forget the least recently heard sender
                self._counters["replay_windows_evicted"] += 1
            self._windows[h.sender] = _Window(h.boot, h.seq, 1)
            self._windows.move_to_end(h.sender)
            return True
        self._windows.move_to_end(h.sender)
        if h.seq > w.top:
            shift = h.seq - w.top
            w.mask = ((w.mask << shift) | 1) & ((1 << REPLAY_WINDOW) - 1) if shift < 64 else 1
            w.top = h.seq
            return True
        back = w.top - h.seq
        if back >= REPLAY_WINDOW or w.mask >> back & 1:
            return False
        w.mask |= 1 << back
        return True
