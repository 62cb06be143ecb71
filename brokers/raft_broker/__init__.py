"""The Raft twin: cluster metadata as a replicated log decided by an embedded Raft quorum
(KRaft's design, KIP-500/KIP-595/KIP-631), on the same core as the other twins.

Layout, from the bottom up (each layer imports only those below it; sans-IO first):

* ``metadata/``   the metadata log's records and the image every broker applies them to.

Being built (issue 32): the sans-IO Raft core and its simulation, the coordinator (the
``brokers.core.coordinator.Coordinator`` seam), the transport between voters, the process.
"""
