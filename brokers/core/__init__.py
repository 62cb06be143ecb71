"""The broker core shared by both architectures. It imports neither twin.

Layout (one concept per module):
- ``errors.py``            the error taxonomy; Kafka wire codes in one registry
- ``config.py``            frozen config dataclasses (broker, storage, flush policy)
- ``coordinator.py``       the Coordinator Protocol: the seam between core and architecture
- ``isr_changes.py``       the replication seam: the IsrChanges Protocol (leader -> twin)
- ``replication/``         leaders, followers, high watermark, ISR, leader epochs (sans-IO)
- ``counters.py``          the counters contract: typed counter classes, counters.json's objects
- ``local_coordinator.py`` the single-node Coordinator (`twinbench broker`, the perf baseline)
- ``local_state.py``       small durable JSON documents and journals for local state
- ``atomic_file.py``       replacing a file atomically (and durably unless a caller says why not)
- ``fsyncs.py``            every fsync a broker process makes, counted
- ``datadir.py``           the data directory: its lock (taken first) and its failure state
- ``protocol/``            sans-IO Kafka wire codec: framing, headers, messages, RecordBatch v2
- ``storage/``             segment-log storage: one log per partition, index, flush, recovery,
                           the log start offset DeleteRecords moves, deleted topics' files
- ``logs.py``              the storage seam as seen by handlers (``PartitionLogLike``,
                           ``AppendResult``), and the null sink
- ``groups.py``            the consumer-group state machine (join/sync/heartbeat/commit,
                           static membership)
- ``producer_state.py``    idempotent produce: each producer's last batches per partition, and
                           the transactional batches and markers appended through it
- ``transactions/``        Kafka transactions: each partition's open and aborted transactions
                           (the last stable offset), the markers, the transaction coordinator
                           and the TransactionStore extension of the seam (docs/transactions.md)
- ``topic_config.py``      Kafka 2.8's topic configs: validation, effective values, which are
                           acted on, the storage settings and produce rules they give a topic
- ``record_checks.py``     the per-record key check of compacted topics (KIP-467's errors)
- ``group_registry.py``    the member and owner registries kept in memory (single node, DSBS;
                           the zk twin keeps them as znodes: ``GroupZnodes``)
- ``notify.py``            wake-ups for long-polling fetches
- ``handlers/``            one module per family of Kafka APIs, and the request dispatcher
- ``server.py``            KafkaServer and ServerConnection, the asyncio Protocol: frames in,
                           responses out in request order; one listening socket per listener
- ``request_meter.py``     MeteredDispatcher: per-API requests, bytes and time (only with
                           --metrics)
- ``response_meter.py``    ResponseMeter: bytes and messages per topic, error codes per API,
                           from decoded requests and responses (only with --metrics)
- ``metrics.py``           the Prometheus endpoint (prometheus-client): request metrics, topic
                           metrics and errors, the counters contract, disk, process; each
                           scrape built fresh on the event loop
- ``security/``            TLS and SASL listeners (PLAIN, SCRAM): listener syntax, TLS
                           contexts, credentials, the per-connection SASL state machine
- ``broker.py``            wiring, timers, and the process entry point (run_broker)
- ``allocator.py``         glibc's mmap threshold, pinned so TLS reads stay on the heap
- ``cli.py``               the command-line options every broker entry point shares
"""
