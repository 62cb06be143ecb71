"""The Raft twin: cluster metadata as a replicated log decided by an embedded Raft quorum
(KRaft's design, KIP-500/KIP-595/KIP-631), on the same core as the other twins.

Layout, from the bottom up (each layer imports only those below it; sans-IO first):

* ``raft/``         the consensus core: ``RaftNode``, the algorithm as a tick-driven sans-IO
                    state machine (elections with pre-vote and check-quorum, replication,
                    snapshots, ReadIndex reads), its messages and their codec, the log, and a
                    deterministic simulated cluster with a safety checker.
* ``metadata/``     the metadata log's records, the image every broker applies them to, and
                    what the controller (the quorum's leader) decides from it.
* ``transport.py``  the quorum's network: Raft messages over TCP between nodes, framed and
                    authenticated by the cluster key (sans-IO frames, asyncio at the edge).
* ``storage.py``    what a node keeps on disk: term and vote (fsynced on change), the log
                    (appended, fdatasynced per Ready, a torn tail dropped on load), the snapshot.
* ``node.py``       ``RaftDriver``: a ``RaftNode`` on asyncio with its storage and transport,
                    each Ready persisted, sent, applied in the core's order; proposals awaited
                    to their fate, ReadIndex reads, compaction into the state's snapshot.

Being built (issue 32): the coordinator (the ``brokers.core.coordinator.Coordinator`` seam over
the driver and the image), the process.
"""
