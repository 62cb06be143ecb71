"""The membership table every DSBS broker keeps, and SWIM's rules for merging what it hears.

A member is identified by its node id and carries both of its addresses (gossip host:port and
Kafka host:port), so Metadata can list brokers from this table alone. What a member says is
ordered by its incarnation number, which only that member increases (to refute a suspicion, or
after a restart); the merge rules below are the usual SWIM ones, plus "a higher incarnation
ALIVE overrides DEAD" so a restarted broker can rejoin.

Dead members are kept (not forgotten) so stale gossip cannot resurrect them at an old
incarnation, and so the partitions they own are still known to be theirs (reported NO_LEADER).
"""

from __future__ import annotations

from dataclasses import dataclass

from brokers.dsbs_broker.packets.wire import MemberUpdate, Status, encode_update

LIVE = (Status.ALIVE, Status.SUSPECT)
_RANK = {Status.ALIVE: 0, Status.SUSPECT: 1, Status.DEAD: 2, Status.LEFT: 2}


@dataclass(slots=True)
class Member:
    state: MemberUpdate
    encoded: bytes  # the state as a piggyback entry, encoded once per change
    since: float  # when this member last changed status here (simulated or loop time)

    @property
    def node_id(self) -> int:
        return self.state.node_id

    @property
    def incarnation(self) -> int:
        return self.state.incarnation

    @property
    def status(self) -> Status:
        return self.state.status

    @property
    def live(self) -> bool:
        return self.state.status in LIVE

    @property
    def gossip_addr(self) -> tuple[str, int]:
        return (self.state.gossip_host, self.state.gossip_port)


def supersedes(new: MemberUpdate, cur: MemberUpdate) -> bool:
    """Does ``new`` replace ``cur`` (same member)? SWIM's precedence on (incarnation, status)."""
    if new.incarnation != cur.incarnation:
        # Only the member itself raises its incarnation, so a higher one is newer news whatever
        # it says; a lower one is stale whatever it says.
        return new.incarnation > cur.incarnation
    # Same incarnation: suspicion beats alive, death beats both; nothing beats death except a
    # higher incarnation (LEFT and DEAD are equivalent here).
    return _RANK[new.status] > _RANK[cur.status]


class MemberTable:
    def __init__(self, me: MemberUpdate, now: float) -> None:
        self.my_id = me.node_id
        self.members: dict[int, Member] = {}
        # Bumped on every accepted change; views and caches compare it to know when to rebuild.
        self.version = 0
        # Bumped only when the set of live members changes (a join, a death, a return): what
        # can move a group's coordinator, so offset replication pulls again when it moves.
        self.live_version = 0
        self._live_sorted: list[int] | None = None
        # Live peers (ourselves excluded) as a list with an index, so random choice, sampling
        # and counting stay O(1)/O(k) on a 1,000-member table (swap-remove on departure).
        self._peers: list[Member] = []
        self._peer_pos: dict[int, int] = {}
        self.set(me, now)

    def __contains__(self, node_id: int) -> bool:
        return node_id in self.members

    def get(self, node_id: int) -> Member | None:
        return self.members.get(node_id)

    def set(self, u: MemberUpdate, now: float, encoded: bytes | None = None) -> Member:
        """Store ``u`` unconditionally (our own state, or an update already judged newer)."""
        old = self.members.get(u.node_id)
        since = now if old is None or old.status != u.status else old.since
        m = Member(u, encoded if encoded is not None else encode_update(u), since)
        self.members[u.node_id] = m
        self.version += 1
        if old is None or old.live != m.live:
            self._live_sorted = None
            self.live_version += 1
        if u.node_id != self.my_id:
            pos = self._peer_pos.get(u.node_id)
            if m.live and pos is None:
                self._peer_pos[u.node_id] = len(self._peers)
                self._peers.append(m)
            elif m.live and pos is not None:
                self._peers[pos] = m
            elif pos is not None:
                last = self._peers.pop()
                if last.node_id != u.node_id:
                    self._peers[pos] = last
                    self._peer_pos[last.node_id] = pos
                del self._peer_pos[u.node_id]
        return m

    def apply(self, u: MemberUpdate, now: float) -> Member | None:
        """Merge gossip about another member; returns the new entry if it changed anything."""
        cur = self.members.get(u.node_id)
        if cur is not None and not supersedes(u, cur.state):
            return None
        return self.set(u, now)

    def live_ids(self) -> list[int]:
        """Sorted ids of members considered live (ALIVE or SUSPECT), ourselves included."""
        if self._live_sorted is None:
            self._live_sorted = sorted(m.node_id for m in self.members.values() if m.live)
        return self._live_sorted

    def live_peers(self) -> list[Member]:
        """Live members other than ourselves; the returned list must not be modified."""
        return self._peers

    def __len__(self) -> int:
        return len(self.members)

    def live_count(self) -> int:
        me = self.members[self.my_id]
        return len(self._peers) + (1 if me.live else 0)
