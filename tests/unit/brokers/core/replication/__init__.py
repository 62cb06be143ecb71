"""Unit tests of brokers/core/replication: epochs, leader, purgatory, truncation, handlers."""
