"""Unit tests of brokers/core/storage: batch headers, logs, the manager, recovery."""
