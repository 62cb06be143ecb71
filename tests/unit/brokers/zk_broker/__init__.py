"""Unit tests of brokers/zk_broker: pure decisions, the direct wire, ISR writes."""
