"""The Decentralized Stateful Broker (issue 4): embedded coordination tables and UDP gossip.

No external process: every broker keeps the paper's tables itself (membership, topic ->
partition -> broker, consumer -> offset) and gossips with its peers.

Layout (sans-IO core first, I/O at the edges):

* ``config.py``     ``GossipConfig`` (``LAN`` / ``LOCAL`` presets, a comment per knob),
                    ``DsbsConfig`` (addresses, seeds, offsets durability/replication).
* ``wire.py``       versioned binary codec of gossip datagrams (<= 1400 bytes); ``WireError``
                    is the only error junk can raise. HMAC slot reserved in the header flags.
* ``membership.py`` member table (node id, incarnation, status, gossip + Kafka addresses) and
                    SWIM's merge rules.
* ``metadata.py``   the topic table: committed records, the rank that settles competing ones,
                    anti-entropy range digests, the topics file's line format.
* ``creation.py``   ``Creations``: topic creation decided by the name's arbiter after a vote of
                    every live member (CREATE, PROPOSE/VOTE; docs/dsbs-metadata.md).
* ``placement.py``  replica rings fixed at creation, leader = first live replica, the
                    deterministic leader epoch, rendezvous hashing for group coordinators and
                    topic arbiters.
* ``offsets.py``    the committed-offsets table (last-writer-wins merge, lazy replication
                    bookkeeping) and its append-only JSON-lines file.
* ``offset_writer.py`` ``OffsetWriter``: the offsets file's one writer thread; commits queued
                    while it writes share its next write and fsync (group commit).
* ``state.py``      persisted incarnation and producer-id blocks.
* ``swim.py``       ``SwimNode``: the tick-driven gossip state machine (probe, indirect probe,
                    suspect, dead, refute; piggybacked dissemination; anti-entropy; offset
                    replication). No sockets, no sleeps, time passed in.
* ``simnet.py``     in-memory network with a simulated clock (loss, kills, partitions) for
                    tests and figures.
* ``udp.py``        asyncio-dgram adapter driving a ``SwimNode`` with the loop's clock.
* ``coordinator.py`` ``DsbsCoordinator``: the ``brokers.core.coordinator.Coordinator`` seam.
* ``__main__.py``   the broker process (``python -m brokers.dsbs_broker``), with the server.
"""
