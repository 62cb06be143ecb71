"""The Decentralized Stateful Broker (issue 4): embedded coordination tables and UDP gossip."""
