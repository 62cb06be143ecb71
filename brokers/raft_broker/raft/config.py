"""Frozen configuration for the Raft core: timing in ticks, flow control, compaction.

Time in the core is counted in ticks (``RaftNode.tick``); the caller decides what a tick is in
seconds (the simulation: one step). Every knob is validated in ``__post_init__``; a bad value
raises ``UserError`` naming the knob.
"""

from __future__ import annotations

from dataclasses import dataclass

from brokers.core.errors import UserError


@dataclass(frozen=True)
class RaftConfig:
    # A follower that hears nothing from a leader for a randomized timeout drawn from
    # [election_ticks, 2 * election_ticks) campaigns. The same number bounds the leader lease
    # (check_quorum) and the leader's quorum check period.
    election_ticks: int = 10
    # The leader sends an Append to every follower each heartbeat_ticks, entries or none: it
    # keeps followers' election timers reset, carries the commit index, and doubles as the
    # retransmission of whatever was lost. Must be well below election_ticks.
    heartbeat_ticks: int = 1
    # Pre-vote (Raft thesis sec. 9.6): a node whose timer fires first asks whether it could win
    # at term+1 without raising its term, so a node cut off and rejoining does not force the
    # cluster into a new term.
    pre_vote: bool = True
    # The leader steps down when a majority of voters has not answered it over an election
    # timeout; followers that heard from a leader within one ignore (pre)vote requests (the
    # lease that makes pre-vote and check-quorum safe together).
    check_quorum: bool = True
    # Entries per Append message at most (a follower far behind catches up in batches).
    max_append_entries: int = 64
    # Append messages with entries a leader keeps unacknowledged per follower before it waits
    # (pipelining); 1 is stop-and-wait.
    max_inflight: int = 16
    # The node reports ``should_compact`` once this many applied entries are held in the log
    # past the last snapshot, so the application hands a snapshot to ``compact``; 0 never.
    snapshot_threshold: int = 0

    def __post_init__(self) -> None:
        if self.election_ticks < 2:
            raise UserError("raft election_ticks must be >= 2")
        if not 1 <= self.heartbeat_ticks < self.election_ticks:
            raise UserError("raft heartbeat_ticks must be >= 1 and below election_ticks")
        if self.max_append_entries < 1:
            raise UserError("raft max_append_entries must be >= 1")
        if self.max_inflight < 1:
            raise UserError("raft max_inflight must be >= 1")
        if self.snapshot_threshold < 0:
            raise UserError("raft snapshot_threshold must be >= 0 (0: never)")
