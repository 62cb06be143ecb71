"""The Decentralized Stateful Broker: embedded coordination tables and UDP gossip.

No external process: every broker keeps the paper's tables itself (membership, topic ->
partition -> broker, consumer -> offset) and gossips with its peers.

Layout (sans-IO core first, I/O at the edges):

* ``config.py``     ``GossipConfig`` (``LAN`` / ``LOCAL`` presets, a comment per knob),
                    ``GossipLimits`` (caps on what gossip input may make a broker hold/send),
                    ``DsbsConfig`` (addresses, seeds, key, offsets durability/replication).
* ``wire.py``       versioned binary codec of gossip datagrams (<= 1400 bytes); ``WireError``
                    is the only error junk can raise. A header flag marks an HMAC-tagged packet.
* ``auth.py``       the cluster key file and ``Authenticator``: HMAC-SHA256 tags (128 bits) on
                    every datagram, checked before decoding.
* ``validation.py`` the rules every decoded update must pass (ids, incarnations, addresses,
                    topic names and sizes, offset stamps) before it touches a table.
* ``membership.py`` member table (node id, incarnation, status, gossip + Kafka addresses) and
                    SWIM's merge rules.
* ``metadata.py``   the topic table: committed records and their replicated partitions'
                    records, the rank that settles competing ones, the merge (a join within a
                    creation), anti-entropy range digests with content tags, the topics and
                    partitions files' line formats.
* ``creation.py``   ``Creations``: topic creation decided by the name's arbiter after a vote of
                    every live member (CREATE, PROPOSE/VOTE; docs/dsbs-metadata.md).
* ``placement.py``  replica rings fixed at creation, leader = first live replica and the
                    deterministic leader epoch (one replica per partition), rendezvous hashing
                    for group coordinators and topic arbiters.
* ``leaders.py``    replicated partitions' leader and ISR records: the election from the last
                    known ISR, ISR changes, the majority rule, the merge (a join).
* ``leadership.py`` ``Leadership``: elections and ISR changes on the gossip node, LEADER_AND_ISR
                    pushes and answers, changes confirmed by the remaining in-sync replicas.
* ``offsets.py``    the committed-offsets table (last-writer-wins merge, lazy replication
                    bookkeeping) and its append-only JSON-lines file.
* ``offset_writer.py`` ``OffsetWriter``: the offsets file's one writer thread; commits queued
                    while it writes share its next write and fsync (group commit).
* ``state.py``      persisted incarnation and producer-id blocks.
* ``broadcast.py``  ``BroadcastQueue``: the updates piggybacked on every packet, least-sent
                    first, each up to the retransmit limit.
* ``replay.py``     ``ReplayWindows``: per-sender anti-replay windows over packet numbers.
* ``antientropy.py`` ``AntiEntropy``: periodic SYNC (member chunks, topic digests), the join
                    through seeds and the reconnection after a partition.
* ``offset_replication.py`` ``OffsetReplication``: committed offsets pushed to the group's
                    next rendezvous ranks (OFFSETS / OFFSETS_ACK).
* ``swim.py``       ``SwimNode``: the tick-driven gossip state machine (probe, indirect probe,
                    suspect, dead, refute) and the packet layer (piggybacking, reply caps,
                    authentication); owns the anti-entropy, offset replication and creation
                    protocols above. No sockets, no sleeps, time passed in.
* ``simnet.py``     in-memory network with a simulated clock (loss, kills, partitions) for
                    tests and figures.
* ``udp.py``        the UDP socket (bounded receive queue) and ``GossipDriver``, driving a
                    ``SwimNode`` with the loop's clock; no exception ends its loops.
* ``counters.py``   ``DsbsCounters``: the gossip tally as this twin's part of the counters
                    contract (brokers/core/counters.py).
* ``coordinator.py`` ``DsbsCoordinator``: the ``brokers.core.coordinator.Coordinator`` seam.
* ``__main__.py``   the broker process (``python -m brokers.dsbs_broker``), with the server.
"""
