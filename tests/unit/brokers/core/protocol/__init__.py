"""Unit tests of brokers/core/protocol: framing, messages, records, and kafka-python parity."""
