"""Unit tests of brokers/dsbs_broker/gossip: SWIM, creation, leadership, hostile input."""
