"""Unit tests of brokers/, laid out as the product is: core/, dsbs_broker/, zk_broker/."""
