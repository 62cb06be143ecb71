"""The two twin brokers and the core they share.

- ``core/``: storage, Kafka wire codec, server, request handlers, group state machine, and the
  Coordinator seam (``core/coordinator.py``) that is the only difference between the twins.
- ``zk_broker/``: the Coordinator backed by a real ZooKeeper through kazoo.
- ``dsbs_broker/``: the Coordinator with embedded tables and UDP gossip (the DSBS paper).
"""
