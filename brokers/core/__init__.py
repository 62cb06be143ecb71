"""The broker core shared by both architectures. It imports neither twin.

Layout:
- ``errors.py``       the error taxonomy; Kafka wire codes in one registry
- ``config.py``       frozen config dataclasses (broker, storage, flush policy)
- ``coordinator.py``  the Coordinator Protocol: the seam between core and architecture
- ``protocol/``       sans-IO Kafka wire codec: framing, headers, messages, RecordBatch v2
- ``storage/``        segment-log storage: one log per partition, index, flush, recovery
"""
