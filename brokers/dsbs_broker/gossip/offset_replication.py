"""OffsetReplication: pushing a group's committed offsets to its next coordinators (sans-IO).

A group's offsets are committed on its coordinator, the top rendezvous rank of the group id over
the live members. Should it fail, the next rank takes the group over, so the next
``offset_replicas`` ranks hold copies: every ``offset_replication_interval_s`` the member sends
each of them, in OFFSETS batches, the entries it has not yet had acknowledged (the bookkeeping
is ``OffsetTable``'s: dirty entries per peer, batches in flight, expiry), and they answer
OFFSETS_ACK. Replication is lazy: a commit is acknowledged to the client once it is in the
coordinator's own table (and file).

When the member table changes, successors may be new (or a coordinator came back): every
group's entries are offered again to its current top ranks; merges are idempotent. Offsets are
taken only from a live member at its own gossip address.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Protocol

from brokers.dsbs_broker.packets.wire import (
    Offsets,
    OffsetsAck,
    chunk_offset_entries,
    encode_message,
    encode_offsets_raw,
)
from brokers.dsbs_broker.tables.members import MemberTable
from brokers.dsbs_broker.tables.offsets import OffsetTable
from brokers.dsbs_broker.tables.validation import offset_problem

Addr = tuple[str, int]


class ReplicationHost(Protocol):
    """What offset replication needs from the gossip node (``SwimNode``)."""

    node_id: int
    members: MemberTable
    offsets: OffsetTable
    counters: defaultdict[str, int]

    def live_order(self, key: str) -> list[int]: ...

    def packet_room(self, message_len: int) -> int: ...

    def send_packet(self, addr: Addr, message: bytes, extra: list[bytes] | None = None, *,
                    piggyback: bool = True, pad: bool = False) -> bool: ...


class OffsetReplication:
    """The replication timer, and both ends of OFFSETS / OFFSETS_ACK, for one member."""

    def __init__(self, host: ReplicationHost, *, replicas: int, interval_s: float) -> None:
        self.host = host
        # Copies beyond the coordinator's own: the group's next `replicas` rendezvous ranks.
        self.replicas = replicas
        # How often the node calls replicate(); a batch unacknowledged for two is sent again.
        self.interval_s = interval_s
        self._members_version = -1

    def replica_peers(self, group: str) -> list[int]:
        """Peers holding copies of ``group``'s offsets: the other top ranks of its order."""
        order = self.host.live_order(group)[: self.replicas + 1]
        return [n for n in order if n != self.host.node_id]

    def replicate(self, now: float) -> None:
        """Send every live replica peer the entries it has not acknowledged yet."""
        host = self.host
        t = host.offsets
        if not t.entries:
            return
        if self._members_version != host.members.version:
            # Membership changed: successors may be new (or a coordinator came back); offer
            # every group's entries to its current top ranks. Merges are idempotent.
            self._members_version = host.members.version
            for g in t.groups():
                t.mark_dirty(t.group_keys(g), self.replica_peers(g))
        t.expire_inflight(now, 2 * self.interval_s)
        for peer in list(t.dirty):
            m = host.members.get(peer)
            if m is None or not m.live:
                t.dirty.pop(peer, None)  # re-offered when it comes back (membership change)
                continue
            entries = t.take_dirty(peer)
            room = host.packet_room(1 + 4 + 2)
            for chunk in chunk_offset_entries(entries, room=room):
                keys = [(e.group, e.topic, e.partition) for e, _ in chunk]
                batch = t.new_batch(peer, now, keys)
                msg = encode_offsets_raw(batch, [b for _, b in chunk])
                host.send_packet(m.gossip_addr, msg, piggyback=False)
                host.counters["offset_batches_out"] += 1

    def on_offsets(self, msg: Offsets, sender: int, addr: Addr) -> None:
        """A batch from a coordinator: merged and acknowledged, if every entry is valid."""
        host = self.host
        m = host.members.get(sender)
        if m is None or not m.live or m.gossip_addr != addr:
            host.counters["dropped_offsets_from_non_member"] += 1
            return
        for e in msg.entries:
            problem = offset_problem(e)
            if problem is not None:
                # Unacknowledged: a sender bug, not loss.
                host.counters[f"dropped_invalid_{problem}"] += 1
                return
        host.offsets.merge(msg.entries)
        host.send_packet(addr, encode_message(OffsetsAck(msg.batch)), piggyback=False)

    def on_ack(self, msg: OffsetsAck, sender: int) -> None:
        self.host.offsets.acked(sender, msg.batch)
