"""The paper's tables every broker keeps (members, topic -> partition -> broker, consumer ->
offset), the rules that merge what gossip brings into them, and the files that keep them.

Pure data and deterministic functions: no sockets, no clocks, no protocol. The gossip node
(``gossip/``) fills them; the coordinator reads them to answer the broker core.

* ``members.py``      member table (node id, incarnation, status, gossip + Kafka addresses) and
                      SWIM's merge rules.
* ``topics.py``       ``TopicStore``, the topic table: committed records and their replicated
                      partitions' records, the rank that settles competing ones, the merge (a
                      join within a creation), anti-entropy range digests with content tags,
                      the topics and partitions files' line formats.
* ``leaders.py``      replicated partitions' leader and ISR records: the election from the last
                      known ISR, ISR changes, the majority rule, the merge (a join).
* ``replica_placement.py`` replica rings fixed at creation, leader = first live replica and the
                      deterministic leader epoch (one replica per partition), rendezvous hashing
                      for group coordinators (and their offsets' copies) and topic arbiters.
* ``validation.py``   the rules every decoded update must pass (ids, incarnations, addresses,
                      topic names and sizes, offset stamps, transaction records) before it
                      touches a table.
* ``offsets.py``      the committed-offsets table (last-writer-wins merge, lazy replication
                      bookkeeping) and its append-only JSON-lines file.
* ``offset_writer.py`` ``OffsetWriter``: the offsets file's one writer thread; commits queued
                      while it writes share its next write and fsync (group commit).
* ``transactions.py`` ``TxnTable``, every transactional id's record (opaque bytes) and version:
                      conditional writes, versions that count writes and name the writer, the
                      merge (the higher version wins); ``TxnLog``, its JSON-lines file.
* ``state.py``        this broker's own durable state: its incarnation and producer-id blocks.
"""
