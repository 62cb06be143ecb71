"""Frozen configuration of the Raft twin's coordinator: the quorum's members, its timing, the
controller's sessions.

Time in the Raft core is counted in ticks; ``tick_s`` says what a tick is here, so the core's
``election_ticks`` of 10 is a 0.5 to 1 s election timeout at 50 ms a tick, in the range of
KRaft's defaults (controller.quorum.election.timeout.ms is 1 s, fetch timeout 2 s).

Every knob is validated in ``__post_init__``; a bad value raises ``UserError`` naming the knob,
so the command line answers a bad voter list in one line before anything starts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from brokers.core.errors import UserError
from brokers.core.security.secret_file import read_secret_file
from brokers.raft_broker.raft.config import RaftConfig

# A cluster key shorter than this is refused: the transport's tags are HMAC-SHA256 under it.
MIN_KEY_BYTES = 32


def load_key_file(path: str | Path) -> bytes:
    """The cluster key from its file (mode 0600 at most); every problem is one UserError."""
    p = Path(path)
    key = read_secret_file(p, "raft key file", 4096).rstrip(b" \t\r\n")
    if len(key) < MIN_KEY_BYTES:
        raise UserError(f"raft key file {p}: {len(key)} bytes; at least {MIN_KEY_BYTES} are "
                        "needed")
    return key


@dataclass(frozen=True)
class RaftBrokerConfig:
    # Where this node's Raft listener binds; port 0 lets the OS choose (tests on one host).
    listen_host: str = "127.0.0.1"
    listen_port: int = 0
    # Every member of the quorum's group by node id, voters and learners, and where its Raft
    # listener is. A broker not listed here cannot join: the membership is fixed at start, as
    # a KRaft cluster's controller.quorum.voters is (KIP-853's dynamic quorums are not built).
    peers: Mapping[int, tuple[str, int]] = field(default_factory=dict)
    # The voters: an odd number of the peers (1, 3 or 5 make sense). Every other peer is a
    # learner (KRaft's observer): it replicates and applies the log but never votes.
    voters: tuple[int, ...] = (0,)
    # The cluster key: every transport frame carries an HMAC-SHA256 tag under it. None
    # requires ``insecure``: anyone reaching a Raft port could then vote and write metadata.
    key: bytes | None = None
    insecure: bool = False
    # Seconds per Raft tick (the core's logical clock).
    tick_s: float = 0.05
    # The Raft core's knobs, in ticks. Compaction keeps the log (and a restart's replay) short:
    # the image's snapshot replaces the applied entries every ``snapshot_threshold`` of them.
    raft: RaftConfig = field(default_factory=lambda: RaftConfig(snapshot_threshold=2000))
    # The controller fences a broker whose heartbeats stopped this long ago (KRaft's
    # broker.session.timeout.ms, 9 s by default; shorter here, as the zk twin's session is).
    session_timeout_s: float = 3.0
    # How often a broker tells the controller it is alive and how far it has applied the log.
    heartbeat_s: float = 0.5
    # How often the controller compares what is with what should be (fencing, leadership).
    controller_period_s: float = 0.1
    # A request to the controller (a proposal, a read barrier) is sent again when unanswered
    # for this long, and given up (one error to the client) after ``request_timeout_s``.
    attempt_timeout_s: float = 1.0
    request_timeout_s: float = 15.0
    # How long start() waits for a quorum to register this broker: the other voters may still
    # be starting.
    start_timeout_s: float = 60.0
    # Producer ids taken from the log per AllocateProducerIds (KRaft hands out blocks of 1000).
    producer_id_block: int = 1000
    # Served in Metadata; every broker of a cluster must be given the same.
    cluster_id: str = "twinbench"

    def __post_init__(self) -> None:
        if not self.voters:
            raise UserError("raft voters: at least one voter is needed")
        if len(set(self.voters)) != len(self.voters):
            raise UserError(f"raft voters {list(self.voters)} name a node twice")
        if len(self.voters) % 2 == 0:
            raise UserError(f"raft voters {list(self.voters)}: an even number of voters "
                            "tolerates no more failures than one fewer; give an odd number")
        missing = [v for v in self.voters if v not in self.peers]
        if self.peers and missing:
            raise UserError(f"raft voters {missing} have no address among the raft peers")
        if self.key is None and not self.insecure:
            raise UserError("raft: give the cluster key, or choose unauthenticated Raft "
                            "explicitly (insecure)")
        if self.key is not None and len(self.key) < MIN_KEY_BYTES:
            raise UserError(f"raft key: at least {MIN_KEY_BYTES} bytes are needed")
        if self.tick_s <= 0:
            raise UserError("raft tick_s must be positive")
        if self.heartbeat_s <= 0 or self.session_timeout_s <= 2 * self.heartbeat_s:
            raise UserError("raft session_timeout_s must exceed two heartbeats (heartbeat_s)")
        if self.controller_period_s <= 0:
            raise UserError("raft controller_period_s must be positive")
        if not 0 < self.attempt_timeout_s <= self.request_timeout_s:
            raise UserError("raft attempt_timeout_s must be positive and at most "
                            "request_timeout_s")
        if self.start_timeout_s <= 0:
            raise UserError("raft start_timeout_s must be positive")
        if self.producer_id_block < 1:
            raise UserError("raft producer_id_block must be at least 1")
        if not 0 < len(self.cluster_id) <= 255 or not self.cluster_id.isprintable():
            raise UserError(f"raft cluster id {self.cluster_id!r}: give 1 to 255 printable "
                            "characters")
        if not 0 <= self.listen_port <= 65535:
            raise UserError(f"raft listen port {self.listen_port} is not a port")

    def check_member(self, node_id: int) -> None:
        """``node_id`` must be one of the peers (a voter or a learner)."""
        if node_id not in self.peers:
            raise UserError(f"node {node_id} is not among the raft peers "
                            f"{sorted(self.peers)}: list every broker's raft address, its own "
                            "included")

    @property
    def learners(self) -> tuple[int, ...]:
        return tuple(sorted(set(self.peers) - set(self.voters)))
