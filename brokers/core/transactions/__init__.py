"""Kafka transactions on the shared core (docs/transactions.md).

Layout:

* ``markers``: the control batch a commit or abort marker is, built and read.
* ``partition``: what one partition leader knows of the transactions writing to it (sans-IO):
  which producers have a transaction open here and from which offset (hence the last stable
  offset, LSO), and the aborted transactions a read_committed consumer must skip.
* ``states``: those tables for every partition led here, built from the log on first need.

The transaction coordinator (InitProducerId with a transactional id, AddPartitionsToTxn,
AddOffsetsToTxn, EndTxn, the timeouts and the marker writes) builds on this and keeps its state
behind the Coordinator seam; it is the next part of issue 34.
"""
