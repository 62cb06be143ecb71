"""The gossip node: ``SwimNode`` and the protocols it runs over the tables, and its two networks.

Sans-IO except the UDP adapter: time is passed in, datagrams are handed in and taken out. The
node is the packet layer every protocol below sends through (piggybacking, reply caps,
authentication) and drives each of them from ``tick`` and ``receive``.

* ``swim.py``         ``SwimNode``: the tick-driven gossip state machine (probe, indirect probe,
                      suspect, dead, refute) and the packet layer; owns the protocols below.
* ``broadcast.py``    ``BroadcastQueue``: the updates piggybacked on every packet, least-sent
                      first, each up to the retransmit limit.
* ``antientropy.py``  ``AntiEntropy``: periodic SYNC (member chunks, topic digests), the join
                      through seeds and the reconnection after a partition.
* ``creation.py``     ``Creations``: topic creation decided by the name's arbiter after a vote of
                      every live member (CREATE, PROPOSE/VOTE; docs/dsbs-metadata.md).
* ``leadership.py``   ``Leadership``: elections and ISR changes on the gossip node, LEADER_AND_ISR
                      pushes and answers, changes confirmed by the remaining in-sync replicas.
* ``offset_replication.py`` ``OffsetReplication``: committed offsets pushed to the group's next
                      rendezvous ranks (OFFSETS / OFFSETS_ACK).
* ``txn_replication.py`` ``TxnReplication``: transaction records sent to every member in
                      datagram-sized pieces (TXN_PART / TXN_ACK), a write held by a peer before
                      it is acknowledged, pulls after view changes (TXN_PULL / TXN_PULLED).
* ``udp.py``          the UDP socket (bounded receive queue) and ``GossipDriver``, driving a
                      ``SwimNode`` with the loop's clock; no exception ends its loops.
* ``simnet.py``       in-memory network with a simulated clock (loss, kills, partitions) for
                      tests and figures.
"""
