"""Replication settings, named after Kafka's broker settings where Kafka has the same knob."""

from __future__ import annotations

from dataclasses import dataclass

from brokers.core.errors import UserError


@dataclass(frozen=True, slots=True)
class ReplicationConfig:
    # A follower in the ISR that has not caught up with the leader's log end for this long
    # leaves the ISR (replica.lag.time.max.ms; Kafka 2.8's default).
    replica_lag_time_max_ms: int = 30_000
    # acks=-1 needs at least this many in-sync replicas when a topic sets no
    # min.insync.replicas of its own (the broker-wide min.insync.replicas).
    min_insync_replicas: int = 1
    # A follower's Fetch waits this long on the leader for new data (replica.fetch.wait.max.ms).
    replica_fetch_wait_max_ms: int = 500
    # Bytes one follower Fetch asks for per partition (replica.fetch.max.bytes).
    replica_fetch_max_bytes: int = 1024 * 1024
    # After a failed fetch (leader gone, connection refused) a fetcher waits this long before
    # asking again (replica.fetch.backoff.ms).
    replica_fetch_backoff_ms: int = 1_000

    def __post_init__(self) -> None:
        for name in ("replica_lag_time_max_ms", "min_insync_replicas",
                     "replica_fetch_wait_max_ms", "replica_fetch_max_bytes",
                     "replica_fetch_backoff_ms"):
            if getattr(self, name) < 1:
                raise UserError(f"{name} must be at least 1, got {getattr(self, name)}")
