"""RaftCounters: what a Raft twin broker counts, as its part of the counters contract
(brokers/core/counters.py).

``coordination_ops`` equals ``raft_messages_out``: a transport message sent (a Raft message of
the quorum, or a request to or answer from the controller) is this twin's unit of
coordination, as a datagram is the DSBS twin's and a request to ZooKeeper the zk twin's. Its
fsyncs (the log once per Ready, the vote on every change) are in the broker's ``fsyncs``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from brokers.core.counters import CoordinatorCounters, by_label, gauge, total


@dataclass(kw_only=True)
class RaftCounters(CoordinatorCounters):
    raft_messages_out: int = total("transport messages sent: Raft's and the control channel's")
    raft_bytes_out: int = total("bytes of transport messages sent")
    raft_messages_in: int = total("transport messages received, authenticated")
    raft_bytes_in: int = total("bytes of transport messages received")
    raft_dropped: int = total("messages lost on the way out (a peer's queue full or down)")
    raft_refused: int = total("inbound connections closed for a bad frame (key, replay)")
    raft_undecodable: int = total("messages that decoded to no Raft or control message")
    raft_events: Mapping[str, int] = by_label(
        "the Raft core's own tally: elections, steps down, snapshots sent, ...")
    raft_proposals: int = total("records this broker proposed (through the leader or itself)")
    raft_proposals_rejected: int = total(
        "proposals the image rejected where they committed (decided on an older state)")
    raft_proposals_retried: int = total("requests to the leader sent again (unanswered, lost)")
    raft_requests_served: int = total("control requests this broker served as the leader")
    raft_read_barriers: int = total("linearizable reads: ReadIndex barriers asked")
    raft_controller_records: int = total(
        "records this broker's controller proposed: fencing and leadership")
    raft_transaction_writes: int = total(
        "transaction records this broker proposed (TxnState: one per transaction state change)")
    raft_transaction_writes_refused: int = total(
        "transaction records the log refused: the id's version moved, or it lost the id")
    raft_term: float = gauge("the Raft term this node is in")
    raft_applied_index: float = gauge("the last log index applied to this broker's image")
    raft_is_leader: float = gauge("1 while this broker leads the quorum (is the controller)")
