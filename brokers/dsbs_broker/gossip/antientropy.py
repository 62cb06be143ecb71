"""AntiEntropy: SWIM's periodic full-state exchange, and joining through seeds (sans-IO).

Gossip spreads each update a bounded number of times; a member that missed all of them (it was
down, cut off, or joined later) would never learn it. So every ``sync_interval_s`` a member
sends one random live peer a SYNC:

* a rotating chunk of its member table (itself first), one packet's worth;
* a digest of its topic records over a rotating range of name hashes (``TopicStore.digest``).

The receiver merges the members (they travel as ordinary updates), pushes the topic records the
sender lacks or holds older within the digest's range, and answers with its own SYNC over the
same range so the sender can push what the receiver lacks. Sends are bounded: at most
``join_reply_packets`` packets per answer, under the reply cap of an unverified source.

Joining: a member with seeds sends a joiner's SYNC to every seed until it knows a live peer and
has had a SYNC answer (``synced``); a joiner's SYNC is answered with a random sample of the
whole member table. At each sync interval a member also sends a joiner's SYNC to one random seed
that is not a live member, so after a partition the sides, which each declared the other dead
and stopped probing it, find each other again.
"""

from __future__ import annotations

import random
from collections import defaultdict
from typing import Protocol

from brokers.dsbs_broker.config import GossipConfig
from brokers.dsbs_broker.packets.wire import Gossip, Sync, encode_message
from brokers.dsbs_broker.tables.members import Member, MemberTable
from brokers.dsbs_broker.tables.topics import TopicStore

Addr = tuple[str, int]

# Digest entries per SYNC: 25 bytes each (packets/wire.py), leaving room for a member chunk in 1400
# bytes (as 40 entries of 17 bytes did before the creation epoch and the content tag).
DIGEST_ENTRIES = 27


class SyncHost(Protocol):
    """What anti-entropy needs from the gossip node (``SwimNode``)."""

    node_id: int
    cfg: GossipConfig
    members: MemberTable
    topics: TopicStore
    rng: random.Random
    counters: defaultdict[str, int]
    seeds: tuple[Addr, ...]

    @property
    def secure(self) -> bool:
        """True when datagrams are authenticated (a cluster key)."""
        ...

    def packet_room(self, message_len: int) -> int: ...

    def send_packet(self, addr: Addr, message: bytes, extra: list[bytes] | None = None, *,
                    piggyback: bool = True, pad: bool = False) -> bool: ...

    def reserve_reply(self, nbytes: int) -> int:
        """Set aside up to ``nbytes`` of the reply cap; returns how many were set aside."""
        ...

    def release_reply(self, nbytes: int) -> None: ...


class AntiEntropy:
    """Sync rounds, the join through seeds and SYNC answers, for one member."""

    def __init__(self, host: SyncHost) -> None:
        self.host = host
        # A SYNC answer (member table and the topic records we lacked) has arrived: the join
        # through a seed, or a later anti-entropy round, is complete.
        self.synced = False
        self._member_cursor = 0
        self._digest_cursor = 0

    def round(self) -> None:
        """One anti-entropy round (the node's sync timer): SYNC with a random live peer, and
        a joiner's SYNC to a seed that is not a live member."""
        host = self.host
        peers = host.members.live_peers()
        if peers:
            self._send_sync(host.rng.choice(peers).gossip_addr, reply=True, join=False)
            self._reconnect(peers)

    def join(self) -> float | None:
        """One step of the join through seeds (the node's join timer); returns the delay until
        the next one, or None when joined (the timer then stays where it is)."""
        host = self.host
        peers = host.members.live_peers()
        if not peers:
            # Joining, or every peer we knew is gone: (re)join through the seeds.
            for s in host.seeds:
                self._send_sync(s, reply=True, join=True)
            return host.cfg.sync_interval_s
        if not self.synced:
            # Peers found us before any seed answered (we started first): ask one for the
            # member table now rather than at the next anti-entropy round; until then we
            # arbitrate no topic creation (``SwimNode.joined``).
            self._send_sync(host.rng.choice(peers).gossip_addr, reply=True, join=True)
            return host.cfg.period_s
        return None

    # --- sending -------------------------------------------------------------------------------
    def _member_chunk(self, room: int, *, everything: bool = False) -> list[list[bytes]]:
        """Member entries for SYNC packets: ourselves first, then a rotating window (one packet)
        or, for a joiner, as many packets as ``join_reply_packets`` allows."""
        host = self.host
        table = host.members.members
        me = table[host.node_id].encoded
        ids = sorted(table)
        if everything:
            # A random sample, so joiners of a large cluster each learn a different part and
            # fill in the rest from each other.
            order = host.rng.sample(ids, len(ids))
        else:
            start = self._member_cursor % max(len(ids), 1)
            order = ids[start:] + ids[:start]
        packets: list[list[bytes]] = []
        cur, used = [me], len(me)
        max_packets = host.cfg.join_reply_packets if everything else 1
        taken = 0
        for nid in order:
            if nid == host.node_id:
                taken += 1
                continue
            enc = table[nid].encoded
            if used + len(enc) > room:
                packets.append(cur)
                if len(packets) >= max_packets:
                    break
                cur, used = [], 0
            cur.append(enc)
            used += len(enc)
            taken += 1
        else:
            packets.append(cur)
        if not everything:
            self._member_cursor += taken
        return packets

    def _send_sync(self, addr: Addr, *, reply: bool, join: bool,
                   rng_lo: int | None = None, rng_hi: int | None = None) -> None:
        host = self.host
        if rng_lo is None:
            lo, hi, entries, nxt = host.topics.digest(self._digest_cursor, DIGEST_ENTRIES)
            self._digest_cursor = nxt
        else:
            lo, hi, entries, _ = host.topics.digest(rng_lo, DIGEST_ENTRIES)
            if rng_hi is not None and rng_hi < hi:
                hi = rng_hi
                entries = [e for e in entries if e.name_hash <= hi]
        msg = encode_message(Sync(reply, join, lo, hi, tuple(entries)))
        room = host.packet_room(len(msg))
        chunk = self._member_chunk(room)[0] if room > 0 else []
        # Insecure: a full-size request earns a reply cap (a multiple of its size) that still
        # holds a join's answer; with a key, members' answers are not capped.
        host.send_packet(addr, msg, chunk, piggyback=False, pad=reply and not host.secure)

    def _reconnect(self, peers: list[Member]) -> None:
        """Send a joiner's SYNC to a random seed that is not a live member. Its full member
        table tells us if it declared us dead (we refute, and our next SYNC carries the higher
        incarnation), our SYNC shows it we are alive, and the topic digests exchange records.
        One datagram per sync interval while some seed is down or cut off."""
        host = self.host
        if not host.seeds:
            return
        seed = host.rng.choice(host.seeds)
        if any(m.gossip_addr == seed for m in peers):
            return
        host.counters["reconnect_syncs"] += 1
        self._send_sync(seed, reply=True, join=True)

    # --- receiving -----------------------------------------------------------------------------
    def on_sync(self, msg: Sync, addr: Addr) -> None:
        host = self.host
        if not msg.reply:
            host.counters["sync_replies_in"] += 1
            self.synced = True
        gossip = encode_message(Gossip())
        budget = host.cfg.join_reply_packets
        # Under a reply cap, keep a packet's worth for our SYNC answer, which comes last.
        reserve = host.reserve_reply(host.cfg.max_packet_bytes) if msg.reply else 0
        room = host.packet_room(len(gossip))
        if msg.join and room > 0:
            for chunk in self._member_chunk(room, everything=True):
                if not host.send_packet(addr, gossip, chunk, piggyback=False):
                    break
                budget -= 1
        # Push the records the sender lacks, has older or holds otherwise, within its digest's
        # range: each topic record followed by its partitions' records.
        topics = host.topics
        missing = [enc for n in topics.missing_from(msg.lo, msg.hi, msg.digest)
                   for enc in (topics.encoded[n], *topics.partition_updates(n))]
        while missing and budget > 0 and (room := host.packet_room(len(gossip))) > 0:
            batch, used = [], 0
            while missing and used + len(missing[0]) <= room:
                used += len(missing[0])
                batch.append(missing.pop(0))
            if not batch:
                missing.pop(0)  # cannot fit any packet; creation refuses such records anyway
                continue
            host.send_packet(addr, gossip, batch, piggyback=False)
            budget -= 1
        host.release_reply(reserve)
        if msg.reply:
            # Our digest over the same range lets the sender push what we lack.
            self._send_sync(addr, reply=False, join=False, rng_lo=msg.lo, rng_hi=msg.hi)
