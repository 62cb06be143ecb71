"""The DSBS gossip state machine: SWIM membership, topic dissemination and creation, offsets.

Sans-IO and tick-driven: no sockets, no sleeps, no clocks. The caller passes the time in
(``now``, seconds on any monotonic scale), feeds datagrams to ``receive``, calls ``tick``
no later than ``next_deadline()``, and sends whatever ``take_outbox()`` returns. The same code
runs on the asyncio UDP adapter (``udp.py``) and on the in-memory simulated network of the tests.

Protocol, per member and per period (``GossipConfig.period_s``):

* Probe one peer, chosen round robin over a shuffled list (every live peer is probed within two
  rounds, which bounds detection time). No ACK within ``ack_timeout_s``: ask ``indirect_probes``
  random peers to probe it (PING_REQ; they relay the ACK). No ACK by the period's end: mark it
  SUSPECT, gossip that, and tell the suspect directly so it can refute at once.
* A suspect not refuted within ``suspicion_timeout(n)`` is declared DEAD (gossiped).
* A member that hears itself suspected or declared dead at its incarnation (or higher) refutes
  with ALIVE at a higher incarnation; the coordinator persists the incarnation.
* Updates (member states, topic records) ride on every packet we send, newest-least-sent first,
  each at most ``retransmit_limit(n)`` times (grows with log n), within ``max_packet_bytes``.
  With ``gossip_fanout`` > 0 queued updates are also pushed to random peers.
* Anti-entropy every ``sync_interval_s`` with one random peer: a rotating chunk of the member
  table plus a topic digest over a hash range, answered symmetrically; joiners send the same
  SYNC to their seeds and get a bounded full-table reply. At the same interval a member sends a
  joiner's SYNC to one random seed that is not a live member, so after a partition the sides,
  which each declared the other dead and stopped probing it, find each other again.
* Offsets committed on a group's coordinator are pushed lazily to the group's next rendezvous
  ranks in OFFSETS batches, retried until acknowledged.
* Topic creation (``creation.py``, owned here as ``creations``): CREATE to the name's arbiter,
  PROPOSE/VOTE among the live members, the committed record pushed to all and gossiped.

Every datagram that does not parse, belongs to another cluster, replays an already-seen packet
number, or comes from ourselves is counted under ``dropped_<reason>`` and otherwise ignored.

Hostile input. With a cluster key every datagram is authenticated before it is
decoded (``auth.py``); unauthenticated ones are dropped (``dropped_unauthenticated``). Whatever
gets through is still checked (``validation.py``) and capped (``GossipLimits``): invalid
updates are dropped one by one, the member, topic, replay and relay tables have caps, offsets
are taken only from live members at their own address, PING_REQ probes only members we know at
that address, and everything sent in answer to a datagram from a source that is not a verified
member (any source in insecure mode) is capped at ``reply_amplification`` times its size.
Insecure brokers pad their SYNC requests to a full packet so that the capped answer still
carries a join's member table and digest.
"""

from __future__ import annotations

import random
from collections import OrderedDict, defaultdict
from dataclasses import dataclass

from brokers.dsbs_broker import placement
from brokers.dsbs_broker.auth import Authenticator
from brokers.dsbs_broker.config import GossipConfig, GossipLimits
from brokers.dsbs_broker.creation import Creations
from brokers.dsbs_broker.membership import Member, MemberTable, supersedes
from brokers.dsbs_broker.metadata import TopicStore
from brokers.dsbs_broker.offsets import OffsetTable
from brokers.dsbs_broker.validation import (
    INT32_MAX,
    MAX_INCARNATION,
    member_problem,
    offset_problem,
    topic_problem,
)
from brokers.dsbs_broker.wire import (
    FLAG_HMAC,
    HEADER_SIZE,
    Ack,
    Create,
    CreateResult,
    Gossip,
    Header,
    MemberUpdate,
    Message,
    Offsets,
    OffsetsAck,
    Packet,
    Ping,
    PingReq,
    Propose,
    Status,
    Sync,
    TopicRecord,
    Vote,
    WireError,
    assemble,
    chunk_offset_entries,
    cluster_tag,
    decode,
    decode_header,
    encode_message,
    encode_offsets_raw,
    encode_padding,
)
from brokers.dsbs_broker.wire import record_room as _record_room

Addr = tuple[str, int]

# How far back the per-sender replay window reaches (packet numbers), like IPsec's.
REPLAY_WINDOW = 64
# Digest entries per SYNC: 16 bytes each, leaving room for a member chunk in 1400 bytes.
DIGEST_ENTRIES = 40
# topic_problem() reasons that are about this broker's capacity, not the record itself.
_CAPACITY = ("topics_full", "partitions_full")


@dataclass(slots=True)
class _Probe:
    seq: int
    target: int
    incarnation: int
    started: float
    indirect_sent: bool = False
    acked: bool = False


@dataclass(slots=True)
class _Replay:
    boot: int
    top: int  # highest packet number seen
    mask: int  # bit i set: packet number top - i seen


class SwimNode:
    def __init__(
        self,
        config: GossipConfig,
        *,
        node_id: int,
        gossip_addr: Addr,
        kafka_addr: Addr,
        incarnation: int,
        now: float,
        cluster: str = "twinbench",
        seeds: tuple[Addr, ...] = (),
        rng: random.Random | None = None,
        offset_replicas: int = 2,
        offset_replication_interval_s: float = 0.5,
        key: bytes | None = None,
        limits: GossipLimits | None = None,
    ) -> None:
        self.cfg = config
        # None: insecure (unauthenticated) gossip; the coordinator insists on an explicit choice.
        self._auth = Authenticator(key) if key is not None else None
        self._overhead = self._auth.overhead if self._auth is not None else 0
        self._flags = FLAG_HMAC if self._auth is not None else 0
        self.limits = limits or GossipLimits()
        # Bytes we may still send in answer to the datagram being handled; None: no cap.
        self._budget: int | None = None
        self.node_id = node_id
        self.addr = gossip_addr
        self.kafka_addr = kafka_addr
        self.incarnation = incarnation
        self.boot = incarnation  # identifies this run of the process in packet headers
        self.rng = rng or random.Random()
        self._tag = cluster_tag(cluster)
        self._pseq = 0
        self._seq = 0
        self.members = MemberTable(self._my_update(Status.ALIVE), now)
        self.topics = TopicStore()
        self.offsets = OffsetTable(node_id)
        self.counters: defaultdict[str, int] = defaultdict(int)
        self.creations = Creations(self)
        self.offset_replicas = offset_replicas
        self._repl_interval = offset_replication_interval_s
        self.outbox: list[tuple[Addr, bytes]] = []
        self.seeds = tuple(s for s in seeds if s != gossip_addr)
        self.leaving = False
        self.heard_from_peer = False  # any valid packet from another member yet
        # A SYNC answer (member table and the topic records we lacked) has arrived: the join
        # through a seed, or a later anti-entropy round, is complete.
        self.synced = False

        # Broadcast queue: buckets[i] holds updates sent i times (key -> encoded update).
        # OrderedDicts: a plain dict emptied from the front leaves holes iteration must skip.
        self._buckets: list[OrderedDict[tuple, bytes]] = [OrderedDict()]
        self._bucket_of: dict[tuple, int] = {}

        self._probe: _Probe | None = None
        self._probe_order: list[int] = []
        # Spread members' periods so a cluster started at once does not probe in lockstep.
        self._next_period = now + self.rng.uniform(0, config.period_s)
        self._next_gossip = now + config.gossip_interval_s
        self._next_sync = now + self.rng.uniform(0, config.sync_interval_s)
        self._next_join = now
        self._next_repl = now + offset_replication_interval_s
        self._suspects: dict[int, tuple[float, int]] = {}  # node -> (deadline, incarnation)
        self._relays: dict[int, tuple[Addr, int, float]] = {}  # our seq -> (origin, seq, expiry)
        self._replay: OrderedDict[int, _Replay] = OrderedDict()  # least recently heard first
        self._partitions = 0  # sum over topic records, kept with the store's version below
        self._partitions_at = 0
        self._member_cursor = 0
        self._digest_cursor = 0
        self._repl_members_version = -1
        # Rendezvous orders per key (a blake2b per live member each): asked on every offset
        # commit, they change only with the member table, so kept until its version moves.
        self._orders: dict[str, list[int]] = {}
        self._orders_version = -1

    # --- public API -------------------------------------------------------------------------
    def take_outbox(self) -> list[tuple[Addr, bytes]]:
        out, self.outbox = self.outbox, []
        return out

    def next_deadline(self) -> float:
        d = min(self._next_period, self._next_gossip, self._next_sync, self._next_repl)
        p = self._probe
        if p is not None and not p.acked:
            d = min(d, p.started + (self.cfg.period_s if p.indirect_sent
                                    else self.cfg.ack_timeout_s))
        if self._suspects:
            d = min(d, min(dl for dl, _ in self._suspects.values()))
        if self.seeds and (not self.synced or not self.members.live_peers()):
            d = min(d, self._next_join)
        if self.creations.busy():
            d = min(d, self.creations.next_deadline())
        return d

    def add_topic(self, rec: TopicRecord, now: float) -> bool:
        """A topic record stored as committed and gossiped (tests, tools; brokers create topics
        through ``creations``). The caller checks ``topic_problem`` first (a record failing it
        is refused here too)."""
        if self.topic_problem(rec) is not None:
            return False
        return self._store_topic(rec)

    def topic_problem(self, rec: TopicRecord) -> str | None:
        """Why ``rec`` may not be stored here (validation rules and the limits), or None."""
        problem = topic_problem(rec, self.limits)
        if problem is not None:
            return problem
        cur = self.topics.get(rec.name)
        if cur is None and len(self.topics) >= self.limits.max_topics:
            return "topics_full"
        grown = rec.num_partitions - (cur.num_partitions if cur is not None else 0)
        if grown > 0 and self._partitions_total() + grown > self.limits.max_total_partitions:
            return "partitions_full"
        return None

    # --- what creation.py needs (CreationHost) ------------------------------------------------
    @property
    def joined(self) -> bool:
        """Has no seeds to join through (a cluster of one), or has had a SYNC answer and knows
        a live peer."""
        return not self.seeds or (self.synced and bool(self.members.live_peers()))

    def topic_arbiter(self, name: str) -> int | None:
        """The live member that decides the creation of ``name``, by this member's view."""
        order = self.live_order(name)
        return order[0] if order else None

    def record_room(self) -> int:
        """The largest encoded topic record a message can carry in one datagram here."""
        return _record_room(self.cfg.max_packet_bytes - self._overhead)

    def send_message(self, addr: Addr, message: bytes, *, reply: bool = False,
                     pad: bool = False) -> None:
        """Send for creation.py. A ``reply`` to the datagram being handled stays under its
        reply cap; other sends (to members, not to its source) are not answers to it and are
        not capped. ``pad``: a request whose answer may carry a record; insecure brokers pad it
        to a full packet so that the capped answer fits (as SYNC requests)."""
        if reply:
            self._send(addr, message)
            return
        budget, self._budget = self._budget, None
        try:
            self._send(addr, message, pad=pad and self._auth is None)
        finally:
            self._budget = budget

    def store_topic(self, rec: TopicRecord) -> bool:
        """A committed record from another member (an arbiter's answer, a HAVE vote) or our own
        commit: checked like gossip, then stored; True if taken."""
        if self.topics.get(rec.name) == rec:
            return False
        problem = self.topic_problem(rec)
        if problem is not None:
            self._drop(problem if problem in _CAPACITY else f"invalid_{problem}")
            return False
        return self._store_topic(rec)

    def push_topic(self, rec: TopicRecord) -> None:
        enc = self.topics.encoded[rec.name]
        gossip = encode_message(Gossip())
        budget, self._budget = self._budget, None  # to members, not an answer: not capped
        try:
            for m in self.members.live_peers():
                self._send(m.gossip_addr, gossip, [enc], piggyback=False)
        finally:
            self._budget = budget

    def set_kafka_addr(self, addr: Addr, now: float) -> None:
        self.kafka_addr = addr
        self._announce(now)

    def leave(self, now: float) -> None:
        """Announce a graceful departure to a few peers (they spread it); stop refuting."""
        self.leaving = True
        me = self.members.set(self._my_update(Status.LEFT), now)
        peers = self.members.live_peers()
        for m in self.rng.sample(peers, min(len(peers), max(3, self.cfg.gossip_fanout))):
            self._send(m.gossip_addr, encode_message(Gossip()), [me.encoded], piggyback=False)

    def live_order(self, key: str) -> list[int]:
        """Live members by rendezvous rank for ``key`` (group coordinator first); the returned
        list is shared and must not be modified."""
        if self._orders_version != self.members.version:
            self._orders.clear()
            self._orders_version = self.members.version
        order = self._orders.get(key)
        if order is None:
            order = placement.rendezvous_order(key, self.members.live_ids())
            if len(self._orders) < 100_000:  # bounded: group ids come from clients
                self._orders[key] = order
        return order

    def tick(self, now: float) -> None:
        cfg = self.cfg
        if self.leaving:
            return
        p = self._probe
        if p is not None and not p.acked:
            if not p.indirect_sent and now >= p.started + cfg.ack_timeout_s:
                self._send_indirect(p)
            # The probe fails at its period's end, which is also the next period's start (the
            # two can differ by a tick's rounding; a new probe must never silently replace it).
            if now >= p.started + cfg.period_s or now >= self._next_period:
                self._suspect(p.target, p.incarnation, now)
                self._probe = p = None
        if now >= self._next_period:
            self._probe = None
            self._start_probe(now)
            self._next_period = max(self._next_period + cfg.period_s, now)
        if self._suspects:
            for node, (deadline, inc) in list(self._suspects.items()):
                if now >= deadline:
                    del self._suspects[node]
                    m = self.members.get(node)
                    if m is not None and m.status == Status.SUSPECT and m.incarnation == inc:
                        self._declare(m, Status.DEAD, now)
        if self._relays:
            for s, (_, _, expiry) in list(self._relays.items()):
                if now >= expiry:
                    del self._relays[s]
        if now >= self._next_gossip:
            self._next_gossip = now + cfg.gossip_interval_s
            self._gossip_fanout()
        if now >= self._next_sync:
            self._next_sync = now + cfg.sync_interval_s
            peers = self.members.live_peers()
            if peers:
                self._send_sync(self.rng.choice(peers).gossip_addr, reply=True, join=False)
                self._reconnect(peers)
        if self.seeds and now >= self._next_join:
            peers = self.members.live_peers()
            if not peers:
                # Joining, or every peer we knew is gone: (re)join through the seeds.
                self._next_join = now + cfg.sync_interval_s
                for s in self.seeds:
                    self._send_sync(s, reply=True, join=True)
            elif not self.synced:
                # Peers found us before any seed answered (we started first): ask one for the
                # member table now rather than at the next anti-entropy round; until then we
                # arbitrate no topic creation (``joined``).
                self._next_join = now + cfg.period_s
                self._send_sync(self.rng.choice(peers).gossip_addr, reply=True, join=True)
        if now >= self._next_repl:
            self._next_repl = now + self._repl_interval
            self._replicate_offsets(now)
        self.creations.tick(now)

    def receive(self, data: bytes, addr: Addr, now: float) -> None:
        self.counters["packets_in"] += 1
        self.counters["bytes_in"] += len(data)
        if self.leaving:
            return
        pkt = self._open(data)
        if pkt is None:
            return
        h = pkt.header
        if h.cluster_tag != self._tag:
            self._drop("foreign_cluster")
            return
        if h.sender == self.node_id:
            self._drop("self")
            return
        if h.sender > INT32_MAX:
            self._drop("invalid_node_id")
            return
        if not self._fresh(h):
            self._drop("replayed")
            return
        self.heard_from_peer = True
        for u in pkt.updates:
            if isinstance(u, MemberUpdate):
                self._apply_member(u, now)
            else:
                self._apply_topic(u)
        # Answers to a source that is not a verified member are capped (no amplification).
        verified = self._verified(h.sender, addr)
        self._budget = None if verified else self.limits.reply_amplification * len(data)
        try:
            self._dispatch(pkt.message, h, addr, now)
        finally:
            self._budget = None

    def _dispatch(self, msg: Message, h: Header, addr: Addr, now: float) -> None:
        if isinstance(msg, Ping):
            if msg.target != self.node_id:
                self._drop("misdirected")  # a restarted process now holds that address
                return
            self._send(addr, encode_message(Ack(msg.seq)))
        elif isinstance(msg, Ack):
            relay = self._relays.pop(msg.seq, None)
            if relay is not None:
                self._send(relay[0], encode_message(Ack(relay[1])))
            elif self._probe is not None and msg.seq == self._probe.seq:
                self._probe.acked = True
            else:
                self.counters["late_acks"] += 1
        elif isinstance(msg, PingReq):
            # Probe only a member we know at that address: otherwise anyone could make us send
            # datagrams to any address (reflection). Relays expire after a period; capped.
            t = self.members.get(msg.target)
            if t is None or not t.live or t.gossip_addr != (msg.host, msg.port):
                self._drop("ping_req_unknown_target")
                return
            if len(self._relays) >= self.limits.max_relays:
                self._drop("relays_full")
                return
            seq = self._next_seq()
            self._relays[seq] = (addr, msg.seq, now + self.cfg.period_s)
            self._send((msg.host, msg.port), encode_message(Ping(seq, msg.target)))
        elif isinstance(msg, Sync):
            if not msg.reply:
                self.counters["sync_replies_in"] += 1
                self.synced = True
            self._on_sync(msg, addr)
        elif isinstance(msg, Offsets):
            m = self.members.get(h.sender)
            if m is None or not m.live or m.gossip_addr != addr:
                self._drop("offsets_from_non_member")
                return
            for e in msg.entries:
                problem = offset_problem(e)
                if problem is not None:
                    self._drop(f"invalid_{problem}")  # unacknowledged: a sender bug, not loss
                    return
            self.offsets.merge(msg.entries)
            self._send(addr, encode_message(OffsetsAck(msg.batch)), piggyback=False)
        elif isinstance(msg, OffsetsAck):
            self.offsets.acked(h.sender, msg.batch)
        elif isinstance(msg, Create):
            self.creations.on_create(msg, h.sender, addr, now)
        elif isinstance(msg, CreateResult):
            self.creations.on_result(msg)
        elif isinstance(msg, Propose):
            self.creations.on_propose(msg, h.sender, addr, now)
        elif isinstance(msg, Vote):
            self.creations.on_vote(msg, h.sender, now)

    # --- membership -------------------------------------------------------------------------
    def _my_update(self, status: Status) -> MemberUpdate:
        return MemberUpdate(self.node_id, self.incarnation, status, self.addr[0], self.addr[1],
                            self.kafka_addr[0], self.kafka_addr[1])

    def _announce(self, now: float) -> None:
        me = self.members.set(self._my_update(Status.ALIVE), now)
        self._enqueue(("m", self.node_id), me.encoded)

    def _apply_member(self, u: MemberUpdate, now: float) -> None:
        if u.node_id == self.node_id:
            if self.leaving:
                return
            if u.incarnation >= MAX_INCARNATION:
                self._drop("invalid_incarnation")  # our refutation would not fit the wire
                return
            if (u.status != Status.ALIVE and u.incarnation >= self.incarnation) or (
                u.status == Status.ALIVE and u.incarnation > self.incarnation
            ):
                # Suspected or declared dead (or someone remembers a later run of us): refute
                # with an incarnation nobody has seen.
                self.incarnation = u.incarnation + 1
                self.counters["refutations"] += 1
                self._announce(now)
            return
        cur = self.members.get(u.node_id)
        if cur is not None and not supersedes(u, cur.state):
            return  # old news, the common case: no checks needed
        problem = member_problem(u)
        if problem is not None:
            self._drop(f"invalid_{problem}")
            return
        if cur is None and len(self.members) >= self.limits.max_members:
            self._drop("members_full")
            return
        m = self.members.set(u, now)
        self._enqueue(("m", u.node_id), m.encoded)
        if u.status == Status.SUSPECT:
            n = self.members.live_count()
            self._suspects[u.node_id] = (now + self.cfg.suspicion_timeout(n), u.incarnation)
        else:
            self._suspects.pop(u.node_id, None)
        if u.status in (Status.DEAD, Status.LEFT):
            self.counters["members_declared_down_by_gossip"] += 1

    def _suspect(self, node: int, inc: int, now: float) -> None:
        m = self.members.get(node)
        if m is None or m.status != Status.ALIVE or m.incarnation != inc:
            return
        self._declare(m, Status.SUSPECT, now)
        n = self.members.live_count()
        self._suspects[node] = (now + self.cfg.suspicion_timeout(n), inc)
        # Tell the suspect itself right away: it refutes long before gossip would reach it.
        self._send(m.gossip_addr, encode_message(Gossip()),
                   [self.members.members[node].encoded], piggyback=False)

    def _declare(self, m: Member, status: Status, now: float) -> None:
        s = m.state
        new = MemberUpdate(s.node_id, s.incarnation, status, s.gossip_host, s.gossip_port,
                           s.kafka_host, s.kafka_port)
        m2 = self.members.set(new, now)
        self.counters[f"declared_{status.name.lower()}"] += 1
        self._enqueue(("m", s.node_id), m2.encoded)

    # --- probing ----------------------------------------------------------------------------
    def _start_probe(self, now: float) -> None:
        target = None
        while target is None:
            if not self._probe_order:
                ids = [m.node_id for m in self.members.live_peers()]
                if not ids:
                    return
                self.rng.shuffle(ids)
                self._probe_order = ids
            m = self.members.get(self._probe_order.pop())
            if m is not None and m.live and m.node_id != self.node_id:
                target = m
        p = _Probe(self._next_seq(), target.node_id, target.incarnation, now)
        self._probe = p
        self._send(target.gossip_addr, encode_message(Ping(p.seq, target.node_id)))

    def _send_indirect(self, p: _Probe) -> None:
        p.indirect_sent = True
        target = self.members.get(p.target)
        if target is None:
            return
        helpers = [m for m in self.members.live_peers() if m.node_id != p.target]
        k = min(self.cfg.indirect_probes, len(helpers))
        req = encode_message(PingReq(p.seq, p.target, *target.gossip_addr))
        for m in self.rng.sample(helpers, k):
            self._send(m.gossip_addr, req)

    def _next_seq(self) -> int:
        self._seq = (self._seq + 1) & 0xFFFFFFFF
        return self._seq

    # --- dissemination ----------------------------------------------------------------------
    def _enqueue(self, key: tuple, data: bytes) -> None:
        old = self._bucket_of.pop(key, None)
        if old is not None:
            self._buckets[old].pop(key, None)
        self._buckets[0][key] = data
        self._bucket_of[key] = 0

    def queued(self) -> int:
        return len(self._bucket_of)

    def _pick(self, room: int) -> list[bytes]:
        """Take updates for one packet, least-sent first, and count the transmission."""
        if not self._bucket_of:
            return []
        limit = self.cfg.retransmit_limit(self.members.live_count())
        picked: list[tuple[tuple, int, bytes]] = []
        misses = 0  # a few large records may not fit; stop scanning once several did not
        for i, bucket in enumerate(self._buckets):
            for key, data in bucket.items():
                if len(data) <= room:
                    picked.append((key, i, data))
                    room -= len(data)
                else:
                    misses += 1
                if room < 24 or misses >= 4:  # 24: below any member update's size
                    break
            if room < 24 or misses >= 4:
                break
        for key, i, data in picked:
            del self._buckets[i][key]
            if i + 1 >= limit:
                del self._bucket_of[key]
                continue
            while len(self._buckets) <= i + 1:
                self._buckets.append(OrderedDict())
            self._buckets[i + 1][key] = data
            self._bucket_of[key] = i + 1
        return [d for _, _, d in picked]

    def _gossip_fanout(self) -> None:
        if not self._bucket_of or self.cfg.gossip_fanout == 0:
            return
        peers = self.members.live_peers()
        k = min(self.cfg.gossip_fanout, len(peers))
        for m in self.rng.sample(peers, k):
            if not self._bucket_of:
                break
            self._send(m.gossip_addr, encode_message(Gossip()))

    def _room(self, message_len: int) -> int:
        """Bytes left for updates in a packet carrying a message of ``message_len`` bytes,
        within the packet size and any reply cap (negative: the message alone does not fit)."""
        size = self.cfg.max_packet_bytes
        if self._budget is not None:
            size = min(size, self._budget)
        return size - self._overhead - HEADER_SIZE - message_len - 2

    def _send(
        self, addr: Addr, message: bytes, extra: list[bytes] | None = None, *,
        piggyback: bool = True, pad: bool = False,
    ) -> bool:
        """Queue one datagram; False (counted) if a reply cap leaves no room for it."""
        extra = extra or []
        room = self._room(len(message)) - sum(len(e) for e in extra)
        if room < 0:
            self.counters["replies_capped"] += 1
            return False
        ups = extra + (self._pick(room) if piggyback else [])
        if pad:
            fill = room - sum(len(u) for u in ups[len(extra):])
            if fill >= 3:
                ups.append(encode_padding(fill))
        self._pseq = (self._pseq + 1) & 0xFFFFFFFF
        header = Header(self._tag, self.node_id, self.boot, self._pseq)
        data, _ = assemble(header, message, ups, limit=self.cfg.max_packet_bytes - self._overhead,
                           flags=self._flags)
        if self._auth is not None:
            data = self._auth.sign(data)
        if self._budget is not None:
            self._budget -= len(data)
        self.outbox.append((addr, data))
        self.counters["packets_out"] += 1
        self.counters["bytes_out"] += len(data)
        return True

    # --- anti-entropy -----------------------------------------------------------------------
    def _member_chunk(self, room: int, *, everything: bool = False) -> list[list[bytes]]:
        """Member entries for SYNC packets: ourselves first, then a rotating window (one packet)
        or, for a joiner, as many packets as ``join_reply_packets`` allows."""
        me = self.members.members[self.node_id].encoded
        ids = sorted(self.members.members)
        if everything:
            # A random sample, so joiners of a large cluster each learn a different part and
            # fill in the rest from each other.
            order = self.rng.sample(ids, len(ids))
        else:
            start = self._member_cursor % max(len(ids), 1)
            order = ids[start:] + ids[:start]
        packets: list[list[bytes]] = []
        cur, used = [me], len(me)
        max_packets = self.cfg.join_reply_packets if everything else 1
        taken = 0
        for nid in order:
            if nid == self.node_id:
                taken += 1
                continue
            enc = self.members.members[nid].encoded
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
        if rng_lo is None:
            lo, hi, entries, nxt = self.topics.digest(self._digest_cursor, DIGEST_ENTRIES)
            self._digest_cursor = nxt
        else:
            lo, hi, entries, _ = self.topics.digest(rng_lo, DIGEST_ENTRIES)
            if rng_hi is not None and rng_hi < hi:
                hi = rng_hi
                entries = [e for e in entries if e.name_hash <= hi]
        msg = encode_message(Sync(reply, join, lo, hi, tuple(entries)))
        room = self._room(len(msg))
        chunk = self._member_chunk(room)[0] if room > 0 else []
        # Insecure: a full-size request earns a reply cap (a multiple of its size) that still
        # holds a join's answer; with a key, members' answers are not capped.
        self._send(addr, msg, chunk, piggyback=False, pad=reply and self._auth is None)

    def _reconnect(self, peers: list[Member]) -> None:
        """Send a joiner's SYNC to a random seed that is not a live member. Its full member
        table tells us if it declared us dead (we refute, and our next SYNC carries the higher
        incarnation), our SYNC shows it we are alive, and the topic digests exchange records.
        One datagram per sync interval while some seed is down or cut off."""
        if not self.seeds:
            return
        seed = self.rng.choice(self.seeds)
        if any(m.gossip_addr == seed for m in peers):
            return
        self.counters["reconnect_syncs"] += 1
        self._send_sync(seed, reply=True, join=True)

    def _on_sync(self, msg: Sync, addr: Addr) -> None:
        gossip = encode_message(Gossip())
        budget = self.cfg.join_reply_packets
        # Under a reply cap, keep a packet's worth for our SYNC answer, which comes last.
        reserve = 0
        if self._budget is not None and msg.reply:
            reserve = min(self._budget, self.cfg.max_packet_bytes)
            self._budget -= reserve
        room = self._room(len(gossip))
        if msg.join and room > 0:
            for chunk in self._member_chunk(room, everything=True):
                if not self._send(addr, gossip, chunk, piggyback=False):
                    break
                budget -= 1
        # Push the records the sender lacks or has older, within its digest's range.
        missing = [self.topics.encoded[n] for n in self.topics.missing_from(msg.lo, msg.hi,
                                                                             msg.digest)]
        while missing and budget > 0 and (room := self._room(len(gossip))) > 0:
            batch, used = [], 0
            while missing and used + len(missing[0]) <= room:
                used += len(missing[0])
                batch.append(missing.pop(0))
            if not batch:
                missing.pop(0)  # cannot fit any packet; creation refuses such records anyway
                continue
            self._send(addr, gossip, batch, piggyback=False)
            budget -= 1
        if self._budget is not None:
            self._budget += reserve
        if msg.reply:
            # Our digest over the same range lets the sender push what we lack.
            self._send_sync(addr, reply=False, join=False, rng_lo=msg.lo, rng_hi=msg.hi)

    # --- offsets replication ----------------------------------------------------------------
    def replica_peers(self, group: str) -> list[int]:
        """Peers holding copies of ``group``'s offsets: the other top ranks of its order."""
        order = self.live_order(group)[: self.offset_replicas + 1]
        return [n for n in order if n != self.node_id]

    def _replicate_offsets(self, now: float) -> None:
        t = self.offsets
        if not t.entries:
            return
        if self._repl_members_version != self.members.version:
            # Membership changed: successors may be new (or a coordinator came back); offer
            # every group's entries to its current top ranks. Merges are idempotent.
            self._repl_members_version = self.members.version
            for g in t.groups():
                t.mark_dirty(t.group_keys(g), self.replica_peers(g))
        t.expire_inflight(now, 2 * self._repl_interval)
        for peer in list(t.dirty):
            m = self.members.get(peer)
            if m is None or not m.live:
                t.dirty.pop(peer, None)  # re-offered when it comes back (membership change)
                continue
            entries = t.take_dirty(peer)
            room = self._room(1 + 4 + 2)
            for chunk in chunk_offset_entries(entries, room=room):
                keys = [(e.group, e.topic, e.partition) for e, _ in chunk]
                batch = t.new_batch(peer, now, keys)
                msg = encode_offsets_raw(batch, [b for _, b in chunk])
                self._send(m.gossip_addr, msg, piggyback=False)
                self.counters["offset_batches_out"] += 1

    # --- hygiene ----------------------------------------------------------------------------
    def _drop(self, reason: str) -> None:
        self.counters[f"dropped_{reason}"] += 1

    def _fresh(self, h: Header) -> bool:
        """Anti-replay window per sender run (boot): reject duplicates and very old packets."""
        r = self._replay.get(h.sender)
        if r is None or h.boot != r.boot:
            # A new run of that member (its boot is its starting incarnation). Any change resets
            # the window, not only an increase: a member whose data dir was wiped restarts at a
            # lower incarnation and must still be heard, to refute its own death.
            if r is not None:
                self.counters["peer_restarts_seen"] += 1
            elif len(self._replay) >= self.limits.replay_senders:
                self._replay.popitem(last=False)  # forget the least recently heard sender
                self.counters["replay_windows_evicted"] += 1
            self._replay[h.sender] = _Replay(h.boot, h.seq, 1)
            self._replay.move_to_end(h.sender)
            return True
        self._replay.move_to_end(h.sender)
        if h.seq > r.top:
            shift = h.seq - r.top
            r.mask = ((r.mask << shift) | 1) & ((1 << REPLAY_WINDOW) - 1) if shift < 64 else 1
            r.top = h.seq
            return True
        back = r.top - h.seq
        if back >= REPLAY_WINDOW or r.mask >> back & 1:
            return False
        r.mask |= 1 << back
        return True

    # --- hostile input ----------------------------------------------------------------------
    def _open(self, data: bytes) -> Packet | None:
        """Size, header, then the tag (with a key), then decode; None (counted) for junk."""
        limit = self.cfg.max_packet_bytes
        try:
            if self._auth is None:
                return decode(data, limit=limit)
            if len(data) > limit:
                raise WireError("oversized")  # never hashed, whatever its size
            body = self._auth.verify(data)
            if body is None:
                # Junk is counted by kind (a valid packet does not pay for this check twice);
                # a well-formed header without a valid tag is unauthenticated.
                try:
                    decode_header(data, limit=limit, flags=FLAG_HMAC)
                except WireError as e:
                    if e.reason != "bad_flags":
                        raise
                self._drop("unauthenticated")
                return None
            return decode(body, limit=limit - self._overhead, flags=FLAG_HMAC)
        except WireError as e:
            self._drop(e.reason)
            return None

    def _verified(self, sender: int, addr: Addr) -> bool:
        """Is ``addr`` the gossip address of ``sender``, a live member, as an authenticated
        packet told us? Only then may answers exceed the reply cap."""
        if self._auth is None:
            return False
        m = self.members.get(sender)
        return m is not None and m.live and m.gossip_addr == addr

    def _apply_topic(self, rec: TopicRecord) -> None:
        if self.topics.get(rec.name) == rec:
            return  # heard again, the common case
        problem = self.topic_problem(rec)
        if problem is not None:
            self._drop(problem if problem in _CAPACITY else f"invalid_{problem}")
            return
        self._store_topic(rec)

    def _store_topic(self, rec: TopicRecord) -> bool:
        total = self._partitions_total()
        cur = self.topics.get(rec.name)
        if not self.topics.apply(rec):
            return False
        self._partitions = (total - (cur.num_partitions if cur is not None else 0)
                            + rec.num_partitions)
        self._partitions_at = self.topics.version
        self._enqueue(("t", rec.name), self.topics.encoded[rec.name])
        self.creations.on_record(rec)
        return True

    def _partitions_total(self) -> int:
        # Recounted only if the store changed behind our back (its version moved).
        if self._partitions_at != self.topics.version:
            self._partitions = sum(r.num_partitions for r in self.topics.records.values())
            self._partitions_at = self.topics.version
        return self._partitions
