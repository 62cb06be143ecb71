"""ZkCoordinatorConfig: how the zk broker reaches and uses ZooKeeper (a comment per knob)."""

from __future__ import annotations

from dataclasses import dataclass, field

from brokers.core.errors import UserError
from brokers.zk_broker.acl import ZkDigest

DATA_PATHS = ("direct", "kazoo")


@dataclass(frozen=True)
class ZkCoordinatorConfig:
    # ZooKeeper servers, "host:port[,host:port...]" (zookeeper.connect). A "/chroot" suffix is
    # accepted, as Kafka accepts it, and moves into `chroot`.
    connect: str
    # Prefix for every znode ("" = the root). Lets several clusters (or tests) share one
    # ZooKeeper without seeing each other. Created on start if missing.
    chroot: str = ""
    # Session timeout asked of ZooKeeper (zookeeper.session.timeout.ms; Kafka's default is
    # 18000). A dead broker leaves /brokers/ids, and a dead controller is replaced, this long
    # after it stops heartbeating. The server clamps it to [2, 20] x its tickTime.
    session_timeout_ms: int = 18_000
    # How long start() waits for the first connection before failing with a clear error
    # (zookeeper.connection.timeout.ms).
    connection_timeout_ms: int = 10_000
    # Upper bound on one ZooKeeper request issued from the event loop; past it the caller gets
    # a retriable error instead of a hung request handler.
    request_timeout_ms: int = 10_000
    # How long create_topic waits for the controller to elect leaders before REQUEST_TIMED_OUT.
    create_topic_timeout_ms: int = 30_000
    # Cap on the back-off between reconnection attempts. Kazoo's default grows to an hour; a
    # benchmark broker should notice a returning ZooKeeper within about a second.
    reconnect_max_delay_ms: int = 1_000
    # Producer ids claimed per /latest_producer_id_block update (Kafka's block size).
    producer_id_block_size: int = 1_000
    # Which client carries the data path's znode reads and writes (the per_request leadership
    # getData, offset commits and fetches): "direct", a second session on the event loop
    # (direct.py), or "kazoo", the broker's main session. kazoo adds ~0.45 ms of thread
    # hand-offs per request on this machine; "kazoo" is kept to measure exactly that.
    data_path: str = "direct"
    # Digest identity both sessions authenticate as; set, every znode the broker creates is
    # writable by it alone and readable by anyone (acl.py). None: open znodes, no auth.
    digest: ZkDigest | None = field(default=None, repr=False)
    # Security protocol of the broker's registered (first) listener, as its /brokers/ids
    # registration names it: the endpoint "SASL_SSL://host:port" and the listener map.
    security_protocol: str = "PLAINTEXT"
    # unclean.leader.election.enable: when no replica of the ISR is alive, the controller may
    # elect a live replica outside it (availability over the records only the ISR had). Off,
    # as in Kafka since 0.11: the partition stays leaderless until an ISR member returns.
    unclean_leader_election: bool = False

    def __post_init__(self) -> None:
        connect, sep, chroot = self.connect.strip().partition("/")
        if not connect:
            raise UserError("zookeeper connect string is empty (expected HOST:PORT)")
        if sep:
            if self.chroot:
                raise UserError("give the chroot either in the connect string or as chroot")
            object.__setattr__(self, "connect", connect)
            object.__setattr__(self, "chroot", "/" + chroot.strip("/"))
        if self.chroot and not self.chroot.startswith("/"):
            object.__setattr__(self, "chroot", "/" + self.chroot)
        object.__setattr__(self, "chroot", self.chroot.rstrip("/"))
        for knob in (
            "session_timeout_ms",
            "connection_timeout_ms",
            "request_timeout_ms",
            "create_topic_timeout_ms",
            "reconnect_max_delay_ms",
            "producer_id_block_size",
        ):
            if getattr(self, knob) <= 0:
                raise UserError(f"{knob} must be positive")
        if self.data_path not in DATA_PATHS:
            raise UserError(f"data_path must be one of {', '.join(DATA_PATHS)}")
        self.endpoints()  # a malformed address fails here, not when the session connects

    def endpoints(self) -> tuple[tuple[str, int], ...]:
        """``connect`` as (host, port) pairs; a missing port is ZooKeeper's 2181."""
        out = []
        for item in self.connect.split(","):
            host, sep, port = item.strip().rpartition(":")
            if not sep:
                host, port = port, "2181"
            if not host or not port.isdigit() or not 0 < int(port) < 65536:
                raise UserError(f"bad ZooKeeper address {item.strip()!r}: expected HOST:PORT")
            out.append((host.strip("[]"), int(port)))
        return tuple(out)
