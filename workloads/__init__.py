"""The load client (Kafka protocol, ignorant of the broker architecture) and workload files.

A lean asyncio producer and consumer written for measurement, not convenience. It shares the
sans-IO wire codec in ``brokers.core.protocol`` but never imports a broker twin.

Layout (one concept per module; a module imports only modules above it in the list)::

    payload.py     fixed-layout RecordBatch v2 for our records: per-(msg_size, batch) template,
                   in-place stamping of (producer id, sequence, send µs) + CRC-32C; fast
                   fixed-stride decoder with a generic fallback for foreign batches
    verify.py      Verifier: count, per-partition order, loss, duplicates (bytearrays per
                   producer, O(1) per batch) -> VerifyReport
    latency.py     LatencyRecorder: HDR histogram (µs, 1 µs..60 s, 3 digits), bulk-folded
    timeline.py    Timeline: records per time bucket and the longest gap per partition (fault
                   sessions)
    wire.py        hand-written Produce / Fetch / ApiVersions encoding and parsing (hot path)
    connection.py  BrokerConnection: asyncio.Protocol, pipelining, correlation ids, per-request
                   latency, ApiVersions handshake; new_event_loop()/run() pick uvloop
    schedule.py    OpenLoopSchedule: intended send times (uniform / seeded poisson), latency from
                   the intended and the actual send, send delay, the "behind" verdict (sans-IO)
    cluster.py     ClusterClient: bootstrap, Metadata, leaders, CreateTopics, FindCoordinator,
                   bounded retries with backoff on retriable errors
    producer.py    Producer.run(count) -> ProducerResult (sync or pipelined, exactly `batch`
                   records per Produce request; with a rate, open loop on a schedule)
    consumer.py    Consumer.run(expected) -> ConsumerResult (static assignment, ~`batch`
                   records per Fetch, OffsetCommit every fetch / on an interval / never)
    group.py       GroupMember: a consumer-group member that only joins, syncs and heartbeats
                   (the probe timing group recovery after a fault)

Typical use (inside ``workloads.connection.run``)::

    cluster = await ClusterClient.open("127.0.0.1:9092")
    await cluster.create_topic("bench", partitions=3)
    prod = await Producer(cluster, "bench", msg_size=32, batch=20, producer_id=1).run(30_000)
    verifier = Verifier()
    verifier.expect(prod.producer_id, prod.acked)
    cons = await Consumer(cluster, "bench", [0, 1, 2], batch=20, msg_size=32,
                          verifier=verifier).run(expected=prod.records_acked)
    report = verifier.report()   # lost / duplicates / out_of_order ...
"""
