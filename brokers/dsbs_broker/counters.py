"""DsbsCounters: what a DSBS broker counts, as its part of the counters contract
(brokers/core/counters.py).

The gossip node (``SwimNode.counters``, and the driver and creation code that share it) keeps a
running tally under bare names (``packets_out``, ``dropped_<reason>``); in the contract every
one of them is ``gossip_<name>``, which is the one place that prefix is applied
(``from_gossip``). ``coordination_ops`` equals ``gossip_packets_out``: a gossip datagram sent is
this twin's unit of coordination.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Self

from brokers.core.counters import CoordinatorCounters, by_label, gauge, total

# The contract's name of a gossip tally entry is this prefix + the tally's name.
GOSSIP_PREFIX = "gossip_"


@dataclass(kw_only=True)
class DsbsCounters(CoordinatorCounters):
    gossip_packets_out: int = total("gossip datagrams sent")
    gossip_bytes_out: int = total("bytes of gossip datagrams sent")
    gossip_packets_in: int = total("gossip datagrams received (before any check)")
    gossip_bytes_in: int = total("bytes of gossip datagrams received")
    gossip_dropped: Mapping[str, int] = by_label(
        "datagrams or updates dropped, by reason (unauthenticated, truncated, replayed, "
        "invalid_<field>, topics_full, queue_full, ...)")
    gossip_declared: Mapping[str, int] = by_label(
        "members this broker declared, by status (suspect, dead, ...)")
    gossip_late_acks: int = total("acks matching no probe or relay in flight (late)")
    gossip_sync_replies_in: int = total("member-table syncs received in answer to ours")
    gossip_reconnect_syncs: int = total("syncs sent to a seed that is not among the peers")
    gossip_refutations: int = total("suspicions of this broker it refuted")
    gossip_members_declared_down_by_gossip: int = total(
        "updates from peers saying a member is dead or has left")
    gossip_peer_restarts_seen: int = total("peers seen to come back as a new process")
    gossip_replay_windows_evicted: int = total("replay windows dropped to stay within the cap")
    gossip_replies_capped: int = total(
        "replies cut to 3x the request to a sender not yet a verified member")
    gossip_offset_batches_out: int = total("batches of committed offsets sent to successors")
    gossip_offset_pulls: int = total(
        "groups whose offsets this broker pulled from their other holders before serving them")
    gossip_offset_commits_timed_out: int = total(
        "commits no successor acknowledged in time (refused: COORDINATOR_NOT_AVAILABLE)")
    gossip_offset_commits_without_successors: int = total(
        "commits refused at once: fewer live successors than a commit needs")
    gossip_txn_writes: int = total(
        "transaction records this broker wrote as their id's coordinator")
    gossip_txn_writes_timed_out: int = total(
        "transaction writes no peer acknowledged in time (refused: COORDINATOR_NOT_AVAILABLE)")
    gossip_txn_writes_without_peers: int = total(
        "transaction writes refused at once: fewer live peers than a write needs")
    gossip_txn_writes_superseded: int = total(
        "transaction writes a peer answered with another coordinator's newer record")
    gossip_txn_records_out: int = total("transaction records sent to peers (each in pieces)")
    gossip_txn_parts_out: int = total("TXN_PART datagrams sent: the pieces of those records")
    gossip_txn_records_in: int = total("transaction records from peers that replaced ours")
    gossip_txn_records_unsendable: int = total(
        "transaction records too large for 65,535 pieces (never, within the limits)")
    gossip_txn_pulls: int = total(
        "pulls of the peers' transaction records after this broker's live set changed")
    gossip_creates_forwarded: int = total("topic creations forwarded to the name's arbiter")
    gossip_creates_redirected: int = total("creations that reached a broker not their arbiter")
    gossip_creates_busy: int = total("creations put off: the name promised, or too many pending")
    gossip_proposals: int = total("creation proposals this broker made as arbiter")
    gossip_proposals_committed: int = total("proposals committed: every live member voted for")
    gossip_proposals_abandoned: int = total("proposals dropped (their waiters retry)")
    gossip_proposals_met_a_record: int = total(
        "answers to this broker's proposals that held a record of the name")
    gossip_proposals_refused: int = total("votes against this broker's proposals")
    gossip_votes_refused: int = total("votes this broker refused to another arbiter")
    gossip_leader_elections: int = total(
        "replicated partitions this broker won a leader epoch of (a majority's votes)")
    gossip_leader_resignations: int = total(
        "partitions this broker handed on after a restart (no leader, an ISR without it)")
    gossip_stand_for_out: int = total("STAND_FOR requests: votes asked for a candidacy")
    gossip_candidacies_lost: int = total("candidacies refused by too many replicas to win")
    gossip_ballots_granted: int = total("leader epochs this broker promised to a candidate")
    gossip_ballots_refused: int = total("votes this broker refused to a candidate")
    gossip_promises_persisted: int = total(
        "promises written and fsynced before their ballot left (its own vote included)")
    gossip_leader_and_isr_fenced: int = total(
        "pushes of an older epoch's record refused here: a newer epoch was promised")
    gossip_leader_epoch_conflicts: int = total(
        "records naming another leader in an epoch already held (votes make it impossible)")
    gossip_isr_changes: int = total("ISR changes this broker wrote as a partition's leader")
    gossip_isr_changes_confirmed: int = total(
        "ISR changes every live in-sync replica answered for")
    gossip_isr_changes_superseded: int = total(
        "records this broker wrote that another broker's record replaced before confirmation")
    gossip_leader_and_isr_out: int = total("LEADER_AND_ISR pushes of a partition's record")
    gossip_socket_errors: int = total("sends the kernel refused (OSError)")
    gossip_socket_errors_reported: int = total("errors the socket reported (ICMP unreachable...)")
    gossip_send_errors: int = total("sends that failed otherwise (counted, loop goes on)")
    gossip_receive_errors: int = total("received datagrams whose handling raised")
    gossip_tick_errors: int = total("timer ticks that raised")
    gossip_activity_errors: int = total("activity callbacks (view changes) that raised")
    gossip_members_live: float = gauge("members alive in this broker's table")
    gossip_members_known: float = gauge("members in this broker's table, any status")
    gossip_incarnation: float = gauge("this broker's incarnation number")

    @classmethod
    def from_gossip(cls, tally: Mapping[str, int], *, members_live: int, members_known: int,
                    incarnation: int) -> Self:
        """A snapshot of the gossip node's tally and its member table."""
        counters = cls.of({GOSSIP_PREFIX + k: v for k, v in tally.items()},
                          gossip_members_live=float(members_live),
                          gossip_members_known=float(members_known),
                          gossip_incarnation=float(incarnation))
        counters.coordination_ops = counters.gossip_packets_out
        return counters
