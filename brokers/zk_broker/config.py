"""ZkCoordinatorConfig: how the zk broker reaches and uses ZooKeeper (a comment per knob)."""

from __future__ import annotations

from dataclasses import dataclass

from brokers.core.errors import UserError


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
