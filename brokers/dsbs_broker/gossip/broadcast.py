"""BroadcastQueue: the updates a member piggybacks on the packets it sends (sans-IO, pure).

SWIM spreads member states (and here topic records) by gossip, not by a broadcast of its own:
every packet a member sends carries as many queued updates as fit. Newest and least-sent go
first, so a fresh update reaches a few peers at once and then, through them, everyone; each
update leaves the queue after ``limit`` transmissions (``GossipConfig.retransmit_limit``, which
grows with log n). Queuing an update again under the same key (a member's newer state, a
topic's newer record) replaces the old one and starts its count over.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable

# Below any member update's encoded size: a packet with less room left is full.
MIN_UPDATE_BYTES = 24
# A few large records may not fit a packet; stop scanning once this many did not.
MAX_MISSES = 4


class BroadcastQueue(dict[Hashable, int]):
    """Encoded updates by key, bucketed by how often each was sent. As a dict it maps each
    queued key to that count (a plain dict, so ``len`` and truth cost no Python call: the node
    asks before every packet); only ``add`` and ``take`` change it."""

    def __init__(self) -> None:
        super().__init__()
        # buckets[i] holds updates sent i times (key -> encoded update). OrderedDicts: a plain
        # dict emptied from the front leaves holes iteration must skip.
        self._buckets: list[OrderedDict[Hashable, bytes]] = [OrderedDict()]

    def add(self, key: Hashable, data: bytes) -> None:
        """Queue ``data`` under ``key``, replacing (and resetting the count of) any older one."""
        old = self.pop(key, None)
        if old is not None:
            self._buckets[old].pop(key, None)
        self._buckets[0][key] = data
        self[key] = 0

    def take(self, room: int, limit: int) -> list[bytes]:
        """Updates for one packet with ``room`` bytes free, least-sent first; counts the
        transmission and drops those sent ``limit`` times."""
        picked: list[tuple[Hashable, int, bytes]] = []
        misses = 0
        min_update, max_misses = MIN_UPDATE_BYTES, MAX_MISSES
        for i, bucket in enumerate(self._buckets):
            for key, data in bucket.items():
                if len(data) <= room:
                    picked.append((key, i, data))
                    room -= len(data)
                else:
                    misses += 1
                if room < min_update or misses >= max_misses:
                    break
            if room < min_update or misses >= max_misses:
                break
        for key, i, data in picked:
            del self._buckets[i][key]
            if i + 1 >= limit:
                del self[key]
                continue
            while len(self._buckets) <= i + 1:
                self._buckets.append(OrderedDict())
            self._buckets[i + 1][key] = data
            self[key] = i + 1
        return [d for _, _, d in picked]
