"""Frozen configuration for the DSBS coordinator: gossip timing presets and the broker's knobs.

Two gossip presets:

* ``GossipConfig.LAN``: one protocol period per second, like the usual SWIM deployments on a
  LAN; detection takes several seconds but gossip costs a few packets per broker per second.
* ``GossipConfig.LOCAL``: fast timers for brokers on one machine (tests, the benchmark's
  single-host runs); a SIGKILLed broker is declared dead well inside 3 s.

``GossipLimits`` caps what gossip input can make a broker hold or send: a forged or
runaway datagram must cost a bounded amount of memory and reply bytes, whatever it claims.

Every knob is validated in ``__post_init__``; a bad value raises ``UserError`` naming the knob.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar

from brokers.core.errors import UserError
from brokers.dsbs_broker.packets.auth import check_key
from brokers.dsbs_broker.packets.wire import MAX_PACKET_BYTES


@dataclass(frozen=True)
class GossipConfig:
    # Length of one SWIM protocol period: each member probes one peer per period.
    period_s: float = 1.0
    # Wait this long for a direct ACK before asking peers to probe indirectly. Must leave room
    # in the period for the indirect round trip (two hops each way).
    ack_timeout_s: float = 0.4
    # How many peers are asked to probe a silent member indirectly (SWIM's k).
    indirect_probes: int = 3
    # A suspect is declared dead after suspicion_mult * max(1, log10(n)) periods without a
    # refutation; larger values trade detection time for fewer false positives.
    suspicion_mult: float = 4.0
    # Each piggybacked update is sent retransmit_mult * ceil(log10(n + 1)) times, enough for an
    # epidemic to reach every member with high probability.
    retransmit_mult: int = 4
    # Extra push-only gossip: every gossip_interval_s, send queued updates to this many random
    # peers (0 disables it; SWIM's piggybacking alone still disseminates, just more slowly).
    gossip_fanout: int = 2
    gossip_interval_s: float = 0.2
    # Anti-entropy: every sync_interval_s exchange a membership chunk and a topic digest with one
    # random peer, so a member that missed packets or joined late converges anyway.
    sync_interval_s: float = 5.0
    # Upper bound on the packets a member sends back to a joining member (full member table and
    # missing topic records); the rest arrives by gossip and anti-entropy.
    join_reply_packets: int = 8
    # Topic creation (gossip/creation.py): a CREATE to the arbiter or a PROPOSE to a member that has
    # not answered is sent again after this long (datagrams get lost; answers are idempotent).
    create_retry_s: float = 0.2
    # How long an arbiter's proposal waits for every live member's vote before it gives up and
    # lets the requests retry. A member's promise to a proposer lasts 3x this, so it outlives
    # any proposal that counted it (a member that is down but not yet declared dead stalls a
    # proposal; the retry after this long asks the members live by then).
    create_propose_s: float = 1.0
    # A requester gives up on a creation after this long (REQUEST_TIMED_OUT): long enough for
    # a dead arbiter to be detected and its names to move to the next rank.
    create_timeout_s: float = 30.0
    # The UDP adapter wakes at least this often to run timers (sans-IO core is tick-driven).
    tick_s: float = 0.05
    # Largest datagram we send or accept; larger ones are dropped unread.
    max_packet_bytes: int = MAX_PACKET_BYTES

    LAN: ClassVar[GossipConfig]
    LOCAL: ClassVar[GossipConfig]

    def __post_init__(self) -> None:
        if self.period_s <= 0:
            raise UserError("gossip period_s must be positive")
        if not 0 < self.ack_timeout_s < self.period_s:
            raise UserError("gossip ack_timeout_s must be positive and below period_s")
        if self.indirect_probes < 0:
            raise UserError("gossip indirect_probes must be >= 0")
        if self.suspicion_mult <= 0:
            raise UserError("gossip suspicion_mult must be positive")
        if self.retransmit_mult < 1:
            raise UserError("gossip retransmit_mult must be >= 1")
        if self.gossip_fanout < 0 or self.gossip_interval_s <= 0:
            raise UserError("gossip_fanout must be >= 0 and gossip_interval_s positive")
        if self.sync_interval_s <= 0:
            raise UserError("gossip sync_interval_s must be positive")
        if self.join_reply_packets < 1:
            raise UserError("gossip join_reply_packets must be >= 1")
        if not 0 < self.create_retry_s < self.create_propose_s < self.create_timeout_s:
            raise UserError("gossip needs 0 < create_retry_s < create_propose_s < "
                            "create_timeout_s")
        if self.tick_s <= 0:
            raise UserError("gossip tick_s must be positive")
        if not 512 <= self.max_packet_bytes <= 65_000:
            raise UserError("gossip max_packet_bytes must be within 512..65000")

    def suspicion_timeout(self, n_members: int) -> float:
        """Seconds a member stays suspect before it is declared dead, for a cluster of n."""
        # Grows with log(n) because a refutation needs ~log(n) periods to reach everyone.
        return self.suspicion_mult * max(1.0, math.log10(max(n_members, 1))) * self.period_s

    def retransmit_limit(self, n_members: int) -> int:
        return self.retransmit_mult * max(1, math.ceil(math.log10(n_members + 1)))


GossipConfig.LAN = GossipConfig()
GossipConfig.LOCAL = GossipConfig(
    period_s=0.2,
    ack_timeout_s=0.08,
    indirect_probes=3,
    # 3 * 0.2 s = 0.6 s suspicion for small clusters: detection stays near 1 s on one host,
    # where loss is rare and a scheduling hiccup of a few hundred ms must not kill a broker.
    suspicion_mult=3.0,
    retransmit_mult=4,
    gossip_fanout=2,
    gossip_interval_s=0.05,
    sync_interval_s=1.0,
    join_reply_packets=8,
    create_retry_s=0.05,
    create_propose_s=0.25,
    create_timeout_s=10.0,
    tick_s=0.01,
)


@dataclass(frozen=True)
class GossipLimits:
    # Partitions one topic may have, whether created here or learned by gossip: every broker
    # expands a record into one partition state per partition, so a forged record claiming
    # 2**32-1 partitions must be refused, not expanded. CreateTopics beyond it: INVALID_PARTITIONS.
    max_topic_partitions: int = 10_000
    # Topics a broker keeps. Records of further names are dropped (counted) and CreateTopics is
    # refused, so a flood of forged records cannot grow the table without end.
    max_topics: int = 10_000
    # Partitions over all topics (each costs a partition state in every Metadata view).
    max_total_partitions: int = 200_000
    # Node ids a broker remembers, dead ones included (they are kept so stale gossip cannot
    # resurrect them). Updates about further ids are dropped (counted).
    max_members: int = 4_096
    # Datagrams waiting between the socket and the state machine while the event loop is busy;
    # more are dropped (counted) and the kernel's socket buffer is the only queue beyond it.
    receive_queue_packets: int = 1_024
    # Senders whose anti-replay windows are kept; the least recently heard is forgotten first.
    replay_senders: int = 4_096
    # Indirect probes relayed for other members at once (PING_REQ); further requests are refused
    # until earlier ones expire (one protocol period).
    max_relays: int = 1_024
    # Everything sent in answer to one datagram from a source that is not a verified member
    # (wrong source address, or any source in insecure mode) totals at most this many times the
    # datagram's size, so a spoofed SYNC cannot turn a broker into an amplifier.
    reply_amplification: int = 3
    # Transactional ids whose records a broker keeps (every broker keeps every id's record,
    # tables/transactions.py). Records of further ids are dropped (counted) and a new id's
    # first write is refused, so forged records cannot grow the table without end.
    max_transactions: int = 100_000
    # Bytes of one transaction record (the coordinator's encoding, which lists every partition
    # and group of the transaction: some 20 bytes each). A record travels in pieces of one
    # datagram each, so this also bounds what a half-received record may hold; 64 KiB is a
    # transaction over some 3,000 partitions. A larger record's write is refused.
    max_transaction_bytes: int = 64 * 1024

    def __post_init__(self) -> None:
        for knob in ("max_topic_partitions", "max_topics", "max_total_partitions",
                     "max_members", "receive_queue_packets", "replay_senders", "max_relays",
                     "reply_amplification", "max_transactions", "max_transaction_bytes"):
            if getattr(self, knob) < 1:
                raise UserError(f"gossip limit {knob} must be >= 1")
        if self.max_topic_partitions > 0x7FFFFFFF:
            raise UserError("gossip limit max_topic_partitions must fit a Kafka int32")


@dataclass(frozen=True)
class DsbsConfig:
    # Address the gossip UDP socket binds to, and the address peers are told to use.
    gossip_host: str = "127.0.0.1"
    # Gossip UDP port; 0 picks a free one (read it back from DsbsCoordinator.gossip_address).
    gossip_port: int = 0
    # Gossip addresses ("host:port") of brokers to join through; any one that answers suffices.
    # Our own address may be listed (every broker can share one seed list) and is skipped.
    seeds: tuple[str, ...] = ()
    # Packets carrying another cluster name are dropped, so clusters sharing a host stay apart.
    cluster_name: str = "twinbench"
    gossip: GossipConfig = field(default_factory=lambda: GossipConfig.LAN)
    # start() waits at most this long for a seed to answer before serving with what it knows
    # (the first broker of a cluster has nobody to answer it).
    join_timeout_s: float = 3.0
    # Committed offsets are copied to this many successor coordinators of the group (next
    # ranks of the rendezvous order), so a successor can serve them after a failure.
    offset_replicas: int = 2
    # A commit is acknowledged once this many of those successors hold it (capped by
    # offset_replicas and by the other members ever known, so one broker commits alone). 1 is
    # what Kafka's __consumer_offsets gives with min.insync.replicas=2; 0 is the paper's lazy
    # replication, which loses acknowledged commits when the coordinator dies
    # (gossip/offset_replication.py).
    offset_commit_acks: int = 1
    # A commit not held by enough successors within this long fails with
    # COORDINATOR_NOT_AVAILABLE (clients retry it).
    offset_commit_timeout_s: float = 5.0
    # How often unacknowledged offsets are sent again, and unanswered pulls asked again.
    offset_replication_interval_s: float = 0.5
    # fsync the offsets file before a commit is acknowledged (the durable default); False leaves
    # it to the page cache, as ZooKeeper's forceSync=no would.
    offsets_fsync: bool = True
    # Producer ids are (node_id << 40) | counter; the counter is reserved in blocks of this size
    # persisted before use, so a restart never reuses an id and costs one write per block.
    producer_id_block: int = 1000
    # The shared cluster key: every gossip packet carries an HMAC-SHA256 tag under it, checked
    # before anything is decoded (packets/auth.py). Never printed (repr=False).
    gossip_key: bytes | None = field(default=None, repr=False)
    # Unauthenticated gossip, for experiments only: anyone who can reach the gossip port can
    # forge membership, topics and offsets. Off by default; start() refuses a config with neither
    # a key nor this.
    gossip_insecure: bool = False
    limits: GossipLimits = field(default_factory=GossipLimits)
    # close()/abort() give the gossip tasks, the background writes and the offsets writer this
    # long in all, then log what did not finish and return: a shutdown never hangs.
    shutdown_timeout_s: float = 10.0

    def __post_init__(self) -> None:
        if not 0 <= self.gossip_port <= 65535:
            raise UserError(f"gossip_port {self.gossip_port} is out of range")
        for seed in self.seeds:
            parse_address(seed)
        if not self.cluster_name:
            raise UserError("cluster_name must not be empty")
        if self.join_timeout_s < 0:
            raise UserError("join_timeout_s must be >= 0")
        if self.offset_replicas < 0:
            raise UserError("offset_replicas must be >= 0")
        if self.offset_commit_acks < 0:
            raise UserError("offset_commit_acks must be >= 0")
        if self.offset_commit_timeout_s <= 0:
            raise UserError("offset_commit_timeout_s must be positive")
        if self.offset_replication_interval_s <= 0:
            raise UserError("offset_replication_interval_s must be positive")
        if self.producer_id_block < 1:
            raise UserError("producer_id_block must be >= 1")
        if self.gossip_key is not None:
            check_key(self.gossip_key)
            if self.gossip_insecure:
                raise UserError("a gossip key and gossip_insecure exclude each other")
        if self.shutdown_timeout_s <= 0:
            raise UserError("shutdown_timeout_s must be positive")


def parse_address(text: str) -> tuple[str, int]:
    """Parse ``host:port`` (IPv6 as ``[::1]:port``); raises UserError on anything else."""
    host, sep, port = text.strip().rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) <= 65535:
        raise UserError(f"gossip address {text!r} is not host:port")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host, int(port)
