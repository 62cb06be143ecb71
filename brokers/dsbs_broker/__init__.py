"""The Decentralized Stateful Broker: embedded coordination tables and UDP gossip.

No external process: every broker keeps the paper's tables itself (membership, topic ->
partition -> broker, consumer -> offset) and gossips with its peers.

Layout, from the bottom up (each layer imports only those below it; sans-IO core first, I/O at
the edges):

* ``packets/``       the datagram: the wire codec and the records it carries, HMAC tags,
                     anti-replay windows.
* ``config.py``      ``GossipConfig`` (``LAN`` / ``LOCAL`` presets, a comment per knob),
                     ``GossipLimits`` (caps on what gossip input may make a broker hold/send),
                     ``DsbsConfig`` (addresses, seeds, key, offsets durability/replication).
* ``tables/``        the tables (members, topics, leaders, offsets, transaction records), their
                     merge rules and files, the rules decoded updates must pass, deterministic
                     replica placement, and the broker's own durable state.
* ``gossip/``        ``SwimNode`` (SWIM) and the protocols it runs over the tables: dissemination,
                     anti-entropy, topic creation, partition leadership, offset and transaction
                     record replication; the UDP driver and the simulated network.
* ``counters.py``    ``DsbsCounters``: the gossip tally as this twin's part of the counters
                     contract (brokers/core/counters.py).
* ``coordinator.py`` ``DsbsCoordinator``: the ``brokers.core.coordinator.Coordinator`` seam, and
                     the transaction store behind it (``TransactionStore``).
* ``__main__.py``    the broker process (``python -m brokers.dsbs_broker``), with the server.

Each package's ``__init__.py`` maps its modules.
"""
