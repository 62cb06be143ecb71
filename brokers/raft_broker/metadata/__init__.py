"""The Raft twin's metadata: the records its quorum commits and the image every broker
applies them to (KRaft's metadata log and image, KIP-631, on this project's core).

* ``records.py``   the record types (brokers, topics and partitions, groups, offsets, producer
                   ids, transactions) and their JSON codec.
* ``image.py``     ``MetadataImage``: the records applied in log order, deterministically, to
                   what the Coordinator seam serves; its snapshot for log compaction.
* ``decisions.py`` what the controller (the quorum's leader) decides from its image: topic
                   creation and growth, configs, leadership after fencing, leaders' ISR
                   changes, and broker sessions (heartbeats in, fencing records out).
"""

from __future__ import annotations

from brokers.raft_broker.metadata.image import MetadataImage, Outcome
from brokers.raft_broker.metadata.records import Record, RecordDecodeError, decode, encode

__all__ = ["MetadataImage", "Outcome", "Record", "RecordDecodeError", "decode", "encode"]
