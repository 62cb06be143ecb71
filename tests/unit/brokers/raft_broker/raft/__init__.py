"""Unit tests of brokers/raft_broker/raft: the codec, the log, the node, the simulation."""
