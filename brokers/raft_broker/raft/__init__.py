"""The Raft consensus core: the algorithm as a deterministic state machine, all I/O left to the
caller (after etcd-io/raft), and a simulated cluster that checks Raft's safety properties.

* ``config.py``    ``RaftConfig``: election and heartbeat ticks, pre-vote, check-quorum, batch
                   and pipelining limits, the compaction threshold (a comment per knob).
* ``messages.py``  the messages (``RequestVote``/``VoteResponse``, ``Append``/
                   ``AppendResponse``, ``InstallSnapshot``/``SnapshotResponse``), ``Entry``, and
                   their binary codec (``encode``/``decode``, ``RaftDecodeError``).
* ``log.py``       ``RaftLog`` (entries above a snapshot base, conflict truncation, compaction),
                   ``HardState`` and ``Snapshot``: what a node persists.
* ``core.py``      ``RaftNode``: ``tick``/``step``/``propose``/``read_index`` in, ``Ready`` out
                   (what to persist, send and apply), ``advance`` back; ``compact``.
* ``sim.py``       ``SimCluster``: nodes exchanging encoded messages over a seeded network with
                   crashes, restarts, pauses, partitions, loss, duplication and reordering, a
                   client workload and the safety and liveness checks; ``run_seed``.
"""

from __future__ import annotations

from brokers.raft_broker.raft.config import RaftConfig
from brokers.raft_broker.raft.core import NotLeader, RaftNode, ReadState, Ready, Role
from brokers.raft_broker.raft.log import HardState, RaftLog, Snapshot
from brokers.raft_broker.raft.messages import (
    Append,
    AppendResponse,
    Entry,
    InstallSnapshot,
    Message,
    RaftDecodeError,
    RequestVote,
    SnapshotResponse,
    VoteResponse,
    decode,
    encode,
)

__all__ = [
    "Append",
    "AppendResponse",
    "Entry",
    "HardState",
    "InstallSnapshot",
    "Message",
    "NotLeader",
    "RaftConfig",
    "RaftDecodeError",
    "RaftLog",
    "RaftNode",
    "ReadState",
    "Ready",
    "RequestVote",
    "Role",
    "Snapshot",
    "SnapshotResponse",
    "VoteResponse",
    "decode",
    "encode",
]
