"""Unit tests of brokers/dsbs_broker/packets: the wire codec and authentication."""
