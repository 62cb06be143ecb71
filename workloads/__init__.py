"""The load client (Kafka protocol, ignorant of the broker architecture) and workload files."""
