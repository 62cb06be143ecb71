"""Sans-IO Kafka wire codec (no asyncio, no sockets): bytes in, dataclasses out, and back.

Layout::

    primitives.py   Reader (bounds-checked) / Writer (buffer list) for ints, strings, bytes,
                    arrays, their compact (flexible) forms and varints; precompiled
                    struct.Struct objects S8..S64.
    schema.py       f() field declarations (wire type + version ranges + tag from the Kafka
                    JSON specs), Struct/Message base classes, the cached generic codec, and
                    the flexible-version rules (compact forms, tagged-field sections).
    header.py       FLEXIBLE_FROM (Kafka 2.8's first flexible version per API),
                    RequestHeader (v1, or v2 at flexible versions), peek_header(), response
                    header v0 / v1 (never v1 for ApiVersions).
    framing.py      FrameDecoder (int32 length prefix, zero-copy, size-checked before
                    buffering) and frame(parts).
    api.py          ApiKey, SUPPORTED (advertised) / SERVED ranges (docs/kafka-protocol.md),
                    REQUESTS / RESPONSES registries (the broker's dispatcher decodes through
                    them after is_served), is_supported / is_served, the KIP-511 ApiVersions
                    fallback, response_frame / request_frame, and decode_request /
                    encode_response / ... checked against SUPPORTED (for clients and tests).
    records.py      RecordBatch v2: the one definition of the header layout (fields,
                    offsets, structs, the broker-owned prefix), iter_batches, CRC-32C check,
                    decode_records (re-exports the consumer_protocol blobs).
    consumer_protocol.py  ConsumerProtocolSubscription / ConsumerProtocolAssignment: the
                    "consumer" blobs inside JoinGroup metadata and SyncGroup assignments.
    messages/       one module per API (produce, fetch, list_offsets, metadata,
                    offset_commit, offset_fetch, find_coordinator, join_group, sync_group,
                    heartbeat, leave_group, describe_groups, list_groups, api_versions,
                    create_topics, delete_topics, delete_records, init_producer_id,
                    describe_configs, create_partitions;
                    acls holds the three ACL APIs, alter_configs AlterConfigs and
                    IncrementalAlterConfigs, delete_groups DeleteGroups and OffsetDelete);
                    class and field names are the spec's, in snake_case.

Conventions: ``Message.encode(version)`` returns a list of buffers (large ``records`` are
passed by reference, never copied); ``Message.decode(data, version)`` returns the dataclass
with ``records`` as memoryviews into ``data``. Fields absent from a version are skipped on
encode and left at their default on decode. Malformed input raises
``brokers.core.errors.ProtocolViolation`` and nothing else; a length field is always checked
against the remaining bytes before anything is allocated.
"""
