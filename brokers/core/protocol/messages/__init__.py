"""One module per Kafka API; struct names follow the Kafka JSON specs and may repeat across
modules (e.g. each API has its own partition struct), hence the separate namespaces."""
