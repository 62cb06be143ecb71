"""Replication in the broker core: what a leader and its followers do, whoever coordinates them.

The twins decide who leads a partition, with which leader epoch, and which replicas are in
sync (the ISR); the core replicates under that decision and asks the twin to change the ISR
when a follower falls behind or catches up (the ``IsrChanges`` seam,
``brokers/core/isr_changes.py``). With replication factor 1 nothing here runs: the data path
and the coordination traffic are those of an unreplicated broker.

Layout (one concept per module; the first five are sans-IO, with no clock of their own,
unit-tested without sockets; the last two do the I/O):
- ``config.py``       ``ReplicationConfig``: lag time, the broker default of min.insync.replicas,
                      the follower's fetch settings
- ``leader.py``       ``LeaderPartition``: the leader's record of its followers (log end
                      offsets, caught-up times), the high watermark, ISR shrink and expand
                      proposals, the min.insync.replicas check
- ``epochs.py``       ``LeaderEpochCache``: (epoch, start offset) of every leader epoch in a
                      log, the end-offset lookup OffsetForLeaderEpoch answers, its checkpoint
                      file's text format, and how far a checkpoint found at start is trusted
- ``truncation.py``   where a returning replica cuts its log, from its epoch cache and the
                      leader's answer for its latest epoch
- ``purgatory.py``    ``DelayedProduces``: acks=-1 produces parked until the high watermark
                      passes them or their timeout ends
- ``manager.py``      ``ReplicaManager``: follows the twin's view (leader or follower of each
                      replicated partition), serves the produce/fetch/OffsetForLeaderEpoch
                      handlers, completes delayed produces, sends ISR proposals to the twin,
                      keeps each partition's leader-epoch-checkpoint file
- ``fetcher.py``      ``ReplicaFetcher`` (one per leader) and ``Fetchers``: truncation by
                      OffsetForLeaderEpoch, then Fetch with replica_id, over one connection
"""
