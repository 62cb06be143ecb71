"""The budget of open segment files: an LRU of segments holding a descriptor, with a cap.

A segment's descriptor is opened when it is created or first used, and closed when the segment
rolls (a closed segment is read rarely) or when it is the least recently used of more than
``cap`` open segments; the next read or append reopens it. So however many partitions and
segments a broker holds, and whatever a client makes it read, it holds at most ``cap`` segment
descriptors. A segment with unflushed appends is fdatasync'ed before its descriptor is closed:
a write-back error after close would never be reported to a descriptor opened later.

One instance serves every log of a broker (``LogManager``); a log opened alone gets its own.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Protocol


class _Releasable(Protocol):
    def release(self) -> None:
        """fdatasync if dirty, then close the descriptor (it is reopened on next use)."""


class OpenSegments:
    __slots__ = ("_open", "cap")

    def __init__(self, cap: int) -> None:
        if cap < 1:
            raise ValueError("cap must be at least 1")
        self.cap = cap
        self._open: OrderedDict[_Releasable, None] = OrderedDict()

    def __len__(self) -> int:
        return len(self._open)

    def touch(self, seg: _Releasable) -> None:
        """``seg`` holds an open descriptor and was just used: newest in the LRU order."""
        opened = self._open
        if seg in opened:
            opened.move_to_end(seg)
            return
        opened[seg] = None
        while len(opened) > self.cap:
            victim, _ = opened.popitem(last=False)
            victim.release()

    def forget(self, seg: _Releasable) -> None:
        """``seg`` closed its descriptor itself (roll, delete, log closed)."""
        self._open.pop(seg, None)
