"""Unit tests of brokers/dsbs_broker/tables: topics, leaders, placement, offsets, state."""
