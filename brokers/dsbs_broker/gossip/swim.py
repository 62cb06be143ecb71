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
  each at most ``retransmit_limit(n)`` times (grows with log n), within ``max_packet_bytes``
  (the queue is ``broadcast.py``). With ``gossip_fanout`` > 0 queued updates are also pushed to
  random peers.

The node owns the protocols below, each in its own module and driven from ``tick`` and
``receive``, and is the packet layer they send through (``send_packet``: piggybacked updates,
reply caps, authentication):

* anti-entropy and the join through seeds (``antientropy.py``, ``anti_entropy``): SYNC rounds
  with one random peer every ``sync_interval_s``;
* offset replication (``offset_replication.py``, ``offset_replication``): committed offsets
  held by the group's next rendezvous ranks before they are acknowledged, and pulled from the
  peers whenever the live set changes, before offsets are served again;
* topic creation (``creation.py``, ``creations``): CREATE to the name's arbiter, PROPOSE/VOTE
  among the live members, the committed record pushed to all and gossiped;
* leadership of replicated partitions (``leadership.py``, ``leadership``): elections from the
  last known ISR, ISR changes, LEADER_AND_ISR pushes and their answers;
* transaction records (``txn_replication.py``, ``txn_replication``): each id's record sent by
  its coordinator to every member, held by a peer before the write is acknowledged, and pulled
  from the peers whenever the live set changes, before transactions are served again.

Every datagram that does not parse, belongs to another cluster, replays an already-seen packet
number (``packets/replay.py``), or comes from ourselves is counted under ``dropped_<reason>`` and
otherwise ignored.

Hostile input. With a cluster key every datagram is authenticated before it is decoded
(``packets/auth.py``); unauthenticated ones are dropped (``dropped_unauthenticated``). Whatever
gets through is still checked (``tables/validation.py``) and capped (``GossipLimits``): invalid
updates are dropped one by one, the member, topic, replay and relay tables have caps, offsets
are taken only from live members at their own address, PING_REQ probes only members we know at
that address, and everything sent in answer to a datagram from a source that is not a verified
member (any source in insecure mode) is capped at ``reply_amplification`` times its size.
Insecure brokers pad their SYNC requests to a full packet so that the capped answer still
carries a join's member table and digest.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

from brokers.dsbs_broker.config import GossipConfig, GossipLimits
from brokers.dsbs_broker.gossip.antientropy import AntiEntropy
from brokers.dsbs_broker.gossip.broadcast import BroadcastQueue
from brokers.dsbs_broker.gossip.creation import Creations
from brokers.dsbs_broker.gossip.leadership import Leadership
from brokers.dsbs_broker.gossip.offset_replication import OffsetReplication
from brokers.dsbs_broker.gossip.txn_replication import TxnReplication
from brokers.dsbs_broker.packets.auth import Authenticator
from brokers.dsbs_broker.packets.replay import ReplayWindows
from brokers.dsbs_broker.packets.wire import (
    FLAG_HMAC,
    HEADER_SIZE,
    Ack,
    Ballot,
    Create,
    CreateResult,
    Gossip,
    Header,
    LeaderAndIsr,
    MemberUpdate,
    Message,
    Offsets,
    OffsetsAck,
    OffsetsPull,
    OffsetsPulled,
    Packet,
    PartitionRecord,
    Ping,
    PingReq,
    Promise,
    Propose,
    StandFor,
    Status,
    Sync,
    TopicRecord,
    TxnAck,
    TxnPart,
    TxnPull,
    TxnPulled,
    Vote,
    WireError,
    assemble,
    cluster_tag,
    decode,
    decode_header,
    encode_message,
    encode_padding,
)
from brokers.dsbs_broker.packets.wire import record_room as _record_room
from brokers.dsbs_broker.tables import replica_placement
from brokers.dsbs_broker.tables.members import Member, MemberTable, supersedes
from brokers.dsbs_broker.tables.offsets import OffsetTable
from brokers.dsbs_broker.tables.topics import TopicStore
from brokers.dsbs_broker.tables.transactions import TxnTable
from brokers.dsbs_broker.tables.validation import (
    INT32_MAX,
    MAX_INCARNATION,
    member_problem,
    partition_problem,
    topic_problem,
)

Addr = tuple[str, int]

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
        offset_commit_acks: int = 1,
        offset_commit_timeout_s: float = 5.0,
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
        self.transactions = TxnTable(node_id, max_entries=self.limits.max_transactions)
        self.counters: defaultdict[str, int] = defaultdict(int)
        self.creations = Creations(self)
        self.leadership = Leadership(self)
        # Where this broker's election promises go before it announces them (the coordinator
        # sets a writer of its promises file; None in the simulation, whose restart carries
        # ``leadership.persisted`` over as the file would).
        self.promise_sink: Callable[[str, int, int, Promise], None] | None = None
        self.outbox: list[tuple[Addr, bytes]] = []
        self.seeds = tuple(s for s in seeds if s != gossip_addr)
        self.leaving = False
        self.heard_from_peer = False  # any valid packet from another member yet
        # Updates to piggyback on what we send (member states, topic records).
        self.broadcasts = BroadcastQueue()

        self._probe: _Probe | None = None
        self._probe_order: list[int] = []
        # Spread members' periods so a cluster started at once does not probe in lockstep.
        self._next_period = now + self.rng.uniform(0, config.period_s)
        self._next_gossip = now + config.gossip_interval_s
        self._next_sync = now + self.rng.uniform(0, config.sync_interval_s)
        self._next_join = now
        self._next_repl = now + offset_replication_interval_s
        self.anti_entropy = AntiEntropy(self)
        self.offset_replication = OffsetReplication(
            self, replicas=offset_replicas, interval_s=offset_replication_interval_s,
            commit_acks=offset_commit_acks, commit_timeout_s=offset_commit_timeout_s)
        # Transaction records follow the offsets' guarantee: held by as many peers before a
        # write is acknowledged as a commit needs successors, resent on the same interval.
        self.txn_replication = TxnReplication(
            self, interval_s=offset_replication_interval_s, write_acks=offset_commit_acks,
            write_timeout_s=offset_commit_timeout_s)
        self._suspects: dict[int, tuple[float, int]] = {}  # node -> (deadline, incarnation)
        self._relays: dict[int, tuple[Addr, int, float]] = {}  # our seq -> (origin, seq, expiry)
        self._replay = ReplayWindows(self.limits.replay_senders, self.counters)
        self._partitions = 0  # sum over topic records, kept with the store's version below
        self._partitions_at = 0
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
        if self.seeds and (not self.anti_entropy.synced or not self.members.live_peers()):
            d = min(d, self._next_join)
        if self.creations.busy():
            d = min(d, self.creations.next_deadline())
        d = min(d, self.offset_replication.next_deadline(), self.txn_replication.next_deadline())
        return min(d, self.leadership.next_deadline())

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
        held = self.topics.held(rec.name)
        if held is None and len(self.topics) >= self.limits.max_topics:
            return "topics_full"
        cur = self.topics.get(rec.name)
        grown = (0 if rec.deleted else rec.num_partitions) - (
            cur.num_partitions if cur is not None else 0)
        if grown > 0 and self._partitions_total() + grown > self.limits.max_total_partitions:
            return "partitions_full"
        return None

    # --- what creation.py needs (CreationHost) ------------------------------------------------
    @property
    def joined(self) -> bool:
        """Has no seeds to join through (a cluster of one), or has had a SYNC answer and knows
        a live peer."""
        return not self.seeds or (self.anti_entropy.synced and bool(self.members.live_peers()))

    @property
    def has_synced(self) -> bool:
        """Has no seeds, or has had a SYNC answer since it started (its tables are no longer
        only what its files said)."""
        return not self.seeds or self.anti_entropy.synced

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
            self.send_packet(addr, message)
            return
        budget, self._budget = self._budget, None
        try:
            self.send_packet(addr, message, pad=pad and self._auth is None)
        finally:
            self._budget = budget

    def store_topic(self, rec: TopicRecord) -> bool:
        """A committed record from another member (an arbiter's answer, a HAVE vote) or our own
        commit: checked like gossip, then stored; True if taken."""
        if self.topics.held(rec.name) == rec:
            return False
        problem = self.topic_problem(rec)
        if problem is not None:
            self._drop(problem if problem in _CAPACITY else f"invalid_{problem}")
            return False
        return self._store_topic(rec)

    def persist_promise(self, topic: str, partition: int, token: int, promise: Promise) -> None:
        """Hand a promise to ``promise_sink`` (the coordinator writes and fsyncs it) before
        the ballot that announces it is queued."""
        self.counters["promises_persisted"] += 1
        if self.promise_sink is not None:
            self.promise_sink(topic, partition, token, promise)

    def store_partition(self, rec: PartitionRecord) -> bool:
        """A replicated partition's record, ours or a member's: checked like gossip, stored,
        gossiped; True if taken."""
        return self._apply_partition(rec)

    def push_topic(self, rec: TopicRecord) -> None:
        enc = self.topics.encoded[rec.name]
        gossip = encode_message(Gossip())
        budget, self._budget = self._budget, None  # to members, not an answer: not capped
        try:
            for m in self.members.live_peers():
                self.send_packet(m.gossip_addr, gossip, [enc], piggyback=False)
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
            self.send_packet(m.gossip_addr, encode_message(Gossip()), [me.encoded], piggyback=False)

    def replica_peers(self, group: str) -> list[int]:
        """Peers holding copies of ``group``'s offsets: the other top ranks of its order."""
        return self.offset_replication.replica_peers(group)

    def live_order(self, key: str) -> list[int]:
        """Live members by rendezvous rank for ``key`` (group coordinator first); the returned
        list is shared and must not be modified."""
        if self._orders_version != self.members.version:
            self._orders.clear()
            self._orders_version = self.members.version
        order = self._orders.get(key)
        if order is None:
            order = replica_placement.rendezvous_order(key, self.members.live_ids())
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
            self.anti_entropy.round()
        if self.seeds and now >= self._next_join:
            wait = self.anti_entropy.join()
            if wait is not None:
                self._next_join = now + wait
        if now >= self._next_repl:
            self._next_repl = now + self.offset_replication.interval_s
            self.offset_replication.replicate(now)
        self.offset_replication.tick(now)
        self.txn_replication.tick(now)
        self.creations.tick(now)
        self.leadership.tick(now)

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
        if not self._replay.fresh(h):
            self._drop("replayed")
            return
        self.heard_from_peer = True
        for u in pkt.updates:
            if isinstance(u, MemberUpdate):
                self._apply_member(u, now)
            elif isinstance(u, TopicRecord):
                self._apply_topic(u)
            else:
                self._apply_partition(u)
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
            self.send_packet(addr, encode_message(Ack(msg.seq)))
        elif isinstance(msg, Ack):
            relay = self._relays.pop(msg.seq, None)
            if relay is not None:
                self.send_packet(relay[0], encode_message(Ack(relay[1])))
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
            self.send_packet((msg.host, msg.port), encode_message(Ping(seq, msg.target)))
        elif isinstance(msg, Sync):
            self.anti_entropy.on_sync(msg, addr)
        elif isinstance(msg, Offsets):
            self.offset_replication.on_offsets(msg, h.sender, addr)
        elif isinstance(msg, OffsetsAck):
            self.offset_replication.on_ack(msg, h.sender)
        elif isinstance(msg, OffsetsPull):
            self.offset_replication.on_pull(msg, h.sender, addr, now)
        elif isinstance(msg, OffsetsPulled):
            self.offset_replication.on_pulled(msg, h.sender)
        elif isinstance(msg, Create):
            self.creations.on_create(msg, h.sender, addr, now)
        elif isinstance(msg, CreateResult):
            self.creations.on_result(msg)
        elif isinstance(msg, Propose):
            self.creations.on_propose(msg, h.sender, addr, now)
        elif isinstance(msg, Vote):
            self.creations.on_vote(msg, h.sender, now)
        elif isinstance(msg, LeaderAndIsr):
            self.leadership.on_message(msg, h.sender, addr, now)
        elif isinstance(msg, StandFor):
            self.leadership.on_stand(msg, h.sender, addr, now)
        elif isinstance(msg, Ballot):
            self.leadership.on_ballot(msg, h.sender, now)
        elif isinstance(msg, TxnPart):
            self.txn_replication.on_part(msg, h.sender, h.boot, addr, now)
        elif isinstance(msg, TxnAck):
            self.txn_replication.on_ack(msg, h.sender, h.boot)
        elif isinstance(msg, TxnPull):
            self.txn_replication.on_pull(msg, h.sender, h.boot, addr)
        elif isinstance(msg, TxnPulled):
            self.txn_replication.on_pulled(msg, h.sender)

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
        self.send_packet(m.gossip_addr, encode_message(Gossip()),
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
        self.send_packet(target.gossip_addr, encode_message(Ping(p.seq, target.node_id)))

    def _send_indirect(self, p: _Probe) -> None:
        p.indirect_sent = True
        target = self.members.get(p.target)
        if target is None:
            return
        helpers = [m for m in self.members.live_peers() if m.node_id != p.target]
        k = min(self.cfg.indirect_probes, len(helpers))
        req = encode_message(PingReq(p.seq, p.target, *target.gossip_addr))
        for m in self.rng.sample(helpers, k):
            self.send_packet(m.gossip_addr, req)

    def _next_seq(self) -> int:
        self._seq = (self._seq + 1) & 0xFFFFFFFF
        return self._seq

    # --- dissemination ----------------------------------------------------------------------
    def queued(self) -> int:
        """Updates still waiting to be piggybacked."""
        return len(self.broadcasts)

    def _enqueue(self, key: tuple, data: bytes) -> None:
        self.broadcasts.add(key, data)

    def _pick(self, room: int) -> list[bytes]:
        """Take updates for one packet, least-sent first, and count the transmission."""
        if not self.broadcasts:
            return []
        return self.broadcasts.take(room, self.cfg.retransmit_limit(self.members.live_count()))

    def _gossip_fanout(self) -> None:
        if not self.broadcasts or self.cfg.gossip_fanout == 0:
            return
        peers = self.members.live_peers()
        k = min(self.cfg.gossip_fanout, len(peers))
        for m in self.rng.sample(peers, k):
            if not self.broadcasts:
                break
            self.send_packet(m.gossip_addr, encode_message(Gossip()))

    def packet_room(self, message_len: int) -> int:
        """Bytes left for updates in a packet carrying a message of ``message_len`` bytes,
        within the packet size and any reply cap (negative: the message alone does not fit)."""
        size = self.cfg.max_packet_bytes
        if self._budget is not None:
            size = min(size, self._budget)
        return size - self._overhead - HEADER_SIZE - message_len - 2

    def reserve_reply(self, nbytes: int) -> int:
        """Set aside up to ``nbytes`` of the reply cap for an answer sent last (0 without a
        cap); ``release_reply`` gives it back."""
        if self._budget is None:
            return 0
        reserved = min(self._budget, nbytes)
        self._budget -= reserved
        return reserved

    def release_reply(self, nbytes: int) -> None:
        if self._budget is not None:
            self._budget += nbytes

    @property
    def secure(self) -> bool:
        """Datagrams are authenticated (a cluster key); members' answers are then not capped."""
        return self._auth is not None

    def send_packet(
        self, addr: Addr, message: bytes, extra: list[bytes] | None = None, *,
        piggyback: bool = True, pad: bool = False,
    ) -> bool:
        """Queue one datagram; False (counted) if a reply cap leaves no room for it."""
        extra = extra or []
        room = self.packet_room(len(message)) - sum(len(e) for e in extra)
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

    # --- hygiene ----------------------------------------------------------------------------
    def _drop(self, reason: str) -> None:
        self.counters[f"dropped_{reason}"] += 1

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
        if self.topics.held(rec.name) == rec:
            return  # heard again, the common case
        problem = self.topic_problem(rec)
        if problem is not None:
            self._drop(problem if problem in _CAPACITY else f"invalid_{problem}")
            return
        self._store_topic(rec)

    def _apply_partition(self, rec: PartitionRecord) -> bool:
        problem = partition_problem(rec, self.limits)
        if problem is not None:
            self._drop(f"invalid_{problem}")
            return False
        taken = self.topics.apply_partition(rec)
        if taken is None:
            self._drop("partition_unknown")  # anti-entropy brings topic and records together
            return False
        if taken:
            key = (rec.topic, rec.partition)
            self._enqueue(("p", *key), self.topics.partitions[rec.topic][rec.partition][1])
        return taken

    def _store_topic(self, rec: TopicRecord) -> bool:
        total = self._partitions_total()
        cur = self.topics.get(rec.name)
        if not self.topics.apply(rec):
            return False
        kept = self.topics.records[rec.name]  # ``rec`` merged with what we held
        self._partitions = (total - (cur.num_partitions if cur is not None else 0)
                            + (0 if kept.deleted else kept.num_partitions))
        self._partitions_at = self.topics.version
        self._enqueue(("t", rec.name), self.topics.encoded[rec.name])
        self.creations.on_record(rec)
        return True

    def _partitions_total(self) -> int:
        # Recounted only if the store changed behind our back (its version moved).
        if self._partitions_at != self.topics.version:
            self._partitions = sum(r.num_partitions for r in self.topics.live())
            self._partitions_at = self.topics.version
        return self._partitions
