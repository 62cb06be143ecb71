"""The load client against a small in-test Kafka-protocol cluster, for real over loopback TCP.

``MemoryCluster`` is N listeners (node ids 0..N-1) sharing in-memory partition logs; partition
p is led by node p % N and a request to any other node gets NOT_LEADER_OR_FOLLOWER, so routing
is exercised. It answers ApiVersions, Metadata, CreateTopics, Produce, Fetch (with long-poll),
ListOffsets, OffsetCommit, OffsetFetch and FindCoordinator through the shared codec, and can
inject faults (leader moves, dropped or duplicated batches) to prove the client and verifier
notice. It is a test double, not a broker: no storage, no groups, no coordination.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import defaultdict
from dataclasses import dataclass, field

import pytest

from brokers.core.errors import NotLeaderOrFollower, OffsetOutOfRange, UnknownTopicOrPartition
from brokers.core.protocol import api
from brokers.core.protocol.framing import FrameDecoder, frame
from brokers.core.protocol.header import RequestHeader, encode_response_header
from brokers.core.protocol.messages import (
    create_topics,
    fetch,
    find_coordinator,
    list_offsets,
    metadata,
    offset_commit,
    offset_fetch,
    produce,
)
from brokers.core.protocol.records import BROKER_PREFIX, iter_batches
from workloads.cluster import Cluster
from workloads.connection import KafkaConnection, new_event_loop
from workloads.consumer import Consumer
from workloads.producer import Producer
from workloads.verify import Verifier

pytestmark = pytest.mark.integration


@dataclass
class PartitionLog:
    batches: list[bytes] = field(default_factory=list)  # baseOffset already patched
    next_offsets: list[int] = field(default_factory=list)
    end: int = 0
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def append(self, batch: bytes) -> int:
        buf = bytearray(batch)
        (h,) = list(iter_batches(buf, verify_crc=True, allow_partial_tail=False))
        base = self.end
        BROKER_PREFIX.pack_into(buf, 0, base, h.batch_length, 0)
        self.batches.append(bytes(buf))
        self.end = base + h.last_offset_delta + 1
        self.next_offsets.append(self.end)
        self.changed.set()
        self.changed = asyncio.Event()
        return base

    def read(self, offset: int, max_bytes: int) -> bytes:
        out = bytearray()
        for b, nxt in zip(self.batches, self.next_offsets, strict=True):
            if nxt <= offset:
                continue
            if out and len(out) + len(b) > max_bytes:
                break
            out += b
        return bytes(out)


@dataclass
class Faults:
    # (partition) -> number of Produce requests still to answer with NOT_LEADER_OR_FOLLOWER.
    not_leader: dict[int, int] = field(default_factory=dict)
    # Acknowledge but do not store the n-th Produce request (1-based, over the cluster).
    drop_produce: set[int] = field(default_factory=set)
    # Store the n-th Produce request twice.
    duplicate_produce: set[int] = field(default_factory=set)


class MemoryCluster:
    def __init__(self, nodes: int = 2) -> None:
        self.n = nodes
        self.ports: list[int] = []
        self.topics: dict[str, dict[int, PartitionLog]] = {}
        self.offsets: dict[tuple[str, str, int], int] = {}
        self.faults = Faults()
        self.produce_count = 0
        self.commit_count = 0
        self.requests: dict[int, int] = defaultdict(int)
        self._servers: list[asyncio.Server] = []
        self._tasks: set[asyncio.Task] = set()

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.ports[0]}"

    async def start(self) -> MemoryCluster:
        loop = asyncio.get_running_loop()
        for node in range(self.n):
            server = await loop.create_server(lambda node=node: _Conn(self, node), "127.0.0.1", 0)
            self._servers.append(server)
            self.ports.append(server.sockets[0].getsockname()[1])
        return self

    async def stop(self) -> None:
        for s in self._servers:
            s.close()
        for t in list(self._tasks):
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def leader(self, partition: int) -> int:
        return partition % self.n

    # -- request handlers ---------------------------------------------------------------------
    async def handle(self, node: int, key: int, version: int, req) -> object:
        self.requests[key] += 1
        if key == api.ApiKey.API_VERSIONS:
            return api.api_versions_response()
        if key == api.ApiKey.METADATA:
            return self._metadata(req)
        if key == api.ApiKey.CREATE_TOPICS:
            res = []
            for t in req.topics:
                err = 36 if t.name in self.topics else 0
                self.topics.setdefault(t.name, {p: PartitionLog() for p in range(t.num_partitions)})
                res.append(create_topics.CreatableTopicResult(name=t.name, error_code=err))
            return create_topics.CreateTopicsResponse(topics=res)
        if key == api.ApiKey.FIND_COORDINATOR:
            c = len(req.key) % self.n
            return find_coordinator.FindCoordinatorResponse(
                node_id=c, host="127.0.0.1", port=self.ports[c]
            )
        if key == api.ApiKey.PRODUCE:
            return self._produce(node, req)
        if key == api.ApiKey.FETCH:
            return await self._fetch(node, req)
        if key == api.ApiKey.LIST_OFFSETS:
            topics = []
            for t in req.topics:
                parts = []
                for p in t.partitions:
                    log = self.topics[t.name][p.partition_index]
                    off = 0 if p.timestamp == -2 else log.end
                    parts.append(
                        list_offsets.ListOffsetsPartitionResponse(
                            partition_index=p.partition_index,
                            error_code=0,
                            offset=off,
                            old_style_offsets=[off],
                        )
                    )
                topics.append(list_offsets.ListOffsetsTopicResponse(name=t.name, partitions=parts))
            return list_offsets.ListOffsetsResponse(topics=topics)
        if key == api.ApiKey.OFFSET_COMMIT:
            self.commit_count += 1
            assert req.generation_id_or_member_epoch == -1 and req.member_id == ""
            topics = []
            for t in req.topics:
                for p in t.partitions:
                    self.offsets[(req.group_id, t.name, p.partition_index)] = p.committed_offset
                topics.append(
                    offset_commit.OffsetCommitResponseTopic(
                        name=t.name,
                        partitions=[
                            offset_commit.OffsetCommitResponsePartition(p.partition_index, 0)
                            for p in t.partitions
                        ],
                    )
                )
            return offset_commit.OffsetCommitResponse(topics=topics)
        if key == api.ApiKey.OFFSET_FETCH:
            topics = []
            for t in req.topics or []:
                topics.append(
                    offset_fetch.OffsetFetchResponseTopic(
                        name=t.name,
                        partitions=[
                            offset_fetch.OffsetFetchResponsePartition(
                                partition_index=p,
                                error_code=0,
                                committed_offset=self.offsets.get((req.group_id, t.name, p), -1),
                            )
                            for p in t.partition_indexes
                        ],
                    )
                )
            return offset_fetch.OffsetFetchResponse(topics=topics)
        raise AssertionError(f"unexpected api key {key}")

    def _metadata(self, req) -> metadata.MetadataResponse:
        names = list(self.topics) if req.topics is None else [t.name for t in req.topics]
        topics = []
        for name in names:
            parts = self.topics.get(name)
            if parts is None:
                topics.append(metadata.MetadataResponseTopic(error_code=3, name=name))
                continue
            topics.append(
                metadata.MetadataResponseTopic(
                    error_code=0,
                    name=name,
                    partitions=[
                        metadata.MetadataResponsePartition(
                            error_code=0,
                            partition_index=p,
                            leader_id=self.leader(p),
                            replica_nodes=[self.leader(p)],
                            isr_nodes=[self.leader(p)],
                        )
                        for p in parts
                    ],
                )
            )
        return metadata.MetadataResponse(
            brokers=[
                metadata.MetadataResponseBroker(node_id=i, host="127.0.0.1", port=port)
                for i, port in enumerate(self.ports)
            ],
            cluster_id="memory",
            controller_id=0,
            topics=topics,
        )

    def _produce(self, node: int, req) -> produce.ProduceResponse:
        out = []
        for t in req.topic_data:
            parts = []
            for pd in t.partition_data:
                p = pd.index
                err, base = 0, -1
                if t.name not in self.topics or p not in self.topics[t.name]:
                    err = UnknownTopicOrPartition.code
                elif self.leader(p) != node or self.faults.not_leader.get(p, 0) > 0:
                    if self.faults.not_leader.get(p, 0) > 0:
                        self.faults.not_leader[p] -= 1
                    err = NotLeaderOrFollower.code
                else:
                    self.produce_count += 1
                    log = self.topics[t.name][p]
                    if self.produce_count in self.faults.drop_produce:
                        base = log.end
                    else:
                        base = log.append(bytes(pd.records))
                        if self.produce_count in self.faults.duplicate_produce:
                            log.append(bytes(pd.records))
                parts.append(
                    produce.PartitionProduceResponse(index=p, error_code=err, base_offset=base)
                )
            out.append(produce.TopicProduceResponse(name=t.name, partition_responses=parts))
        return produce.ProduceResponse(responses=out)

    async def _fetch(self, node: int, req) -> fetch.FetchResponse:
        def answer() -> tuple[fetch.FetchResponse, int]:
            total = 0
            topics = []
            for t in req.topics:
                parts = []
                for fp in t.partitions:
                    log = self.topics.get(t.topic, {}).get(fp.partition)
                    if log is None:
                        parts.append(fetch.PartitionData(fp.partition, 3, -1))
                        continue
                    if self.leader(fp.partition) != node:
                        parts.append(fetch.PartitionData(fp.partition, 6, -1))
                        continue
                    if fp.fetch_offset > log.end:
                        parts.append(
                            fetch.PartitionData(fp.partition, OffsetOutOfRange.code, log.end)
                        )
                        continue
                    data = log.read(fp.fetch_offset, min(fp.partition_max_bytes, req.max_bytes))
                    total += len(data)
                    parts.append(
                        fetch.PartitionData(
                            partition_index=fp.partition,
                            error_code=0,
                            high_watermark=log.end,
                            last_stable_offset=log.end,
                            log_start_offset=0,
                            records=data,
                        )
                    )
                topics.append(fetch.FetchableTopicResponse(topic=t.topic, partitions=parts))
            return fetch.FetchResponse(responses=topics), total

        resp, total = answer()
        if total < max(req.min_bytes, 1) and req.max_wait_ms > 0:
            events = [
                self.topics[t.topic][fp.partition].changed
                for t in req.topics
                for fp in t.partitions
                if fp.partition in self.topics.get(t.topic, {})
            ]
            waiters = [asyncio.ensure_future(e.wait()) for e in events]
            try:
                if waiters:
                    await asyncio.wait(
                        waiters, timeout=req.max_wait_ms / 1000, return_when=asyncio.FIRST_COMPLETED
                    )
            finally:
                for w in waiters:
                    w.cancel()
                await asyncio.gather(*waiters, return_exceptions=True)
            resp, total = answer()
        return resp


class _Conn(asyncio.Protocol):
    """One server-side connection: requests handled one at a time, answered in order."""

    def __init__(self, cluster: MemoryCluster, node: int) -> None:
        self.cluster = cluster
        self.node = node
        self.decoder = FrameDecoder(1 << 28)
        self.queue: asyncio.Queue = asyncio.Queue()
        self.task: asyncio.Task | None = None

    def connection_made(self, transport) -> None:
        self.transport = transport
        self.task = asyncio.ensure_future(self._serve())
        self.cluster._tasks.add(self.task)

    def connection_lost(self, exc) -> None:
        if self.task is not None:
            self.task.cancel()
            self.cluster._tasks.discard(self.task)

    def data_received(self, data: bytes) -> None:
        for f in self.decoder.feed(data):
            self.queue.put_nowait(bytes(f))

    async def _serve(self) -> None:
        while True:
            raw = await self.queue.get()
            header, pos = RequestHeader.decode(raw)
            req = api.decode_request(header.api_key, header.api_version, memoryview(raw)[pos:])
            if header.api_key == api.ApiKey.PRODUCE and req.acks == 0:
                await self.cluster.handle(self.node, header.api_key, header.api_version, req)
                continue
            resp = await self.cluster.handle(self.node, header.api_key, header.api_version, req)
            body = api.encode_response(header.api_key, header.api_version, resp)
            self.transport.writelines(frame([encode_response_header(header.correlation_id), *body]))


# -- tests ----------------------------------------------------------------------------------------


def run(coro):
    loop = new_event_loop()
    try:
        return loop.run_until_complete(asyncio.wait_for(coro, 60))
    finally:
        loop.close()


async def _with_cluster(body, nodes: int = 2):
    mc = await MemoryCluster(nodes).start()
    cluster = None
    try:
        cluster = await Cluster.open(mc.bootstrap)
        return await body(mc, cluster)
    finally:
        if cluster is not None:
            await cluster.close()
        await mc.stop()


@pytest.mark.parametrize(
    ("msg_size", "batch", "mode"),
    [
        (32, 20, "sync"),
        (8, 7, "sync"),
        (1024, 50, "pipelined"),
        (128 * 1024, 3, "pipelined"),
    ],
)
def test_produce_then_consume_split(msg_size, batch, mode):
    count = 1003 if msg_size < 100_000 else 31

    async def body(mc: MemoryCluster, cluster: Cluster):
        await cluster.create_topic("t", partitions=3)
        prod = await Producer(
            cluster, "t", msg_size=msg_size, batch=batch, mode=mode, window=4, producer_id=5
        ).run(count)
        assert prod.records_acked == prod.records_sent == count
        assert prod.requests == -(-count // batch) and prod.errors == {}
        assert sum(prod.partition_records.values()) == count
        assert prod.latency.count == prod.requests and prod.rps > 0
        v = Verifier()
        v.expect(5, prod.acked)
        cons = await Consumer(
            cluster, "t", [0, 1, 2], group="g", batch=batch, msg_size=msg_size, verifier=v
        ).run(expected=count, deadline_s=30)
        rep = v.report()
        assert rep.ok and rep.records == count and rep.unique == count, rep
        assert cons.records == count and not cons.timed_out and cons.missing == 0
        assert cons.e2e_latency.count == count
        # (a commit in flight when the last loop finished may be cancelled unanswered)
        assert cons.commits >= 1 and mc.commit_count in (
            cons.commits,
            cons.commits + 1,
            cons.commits + 2,
        )
        # committed offsets equal the log ends
        for p, log in mc.topics["t"].items():
            assert mc.offsets[("g", "t", p)] == log.end == cons.positions[p]
        return cons

    run(_with_cluster(body))


def test_every_fetch_commits_and_fetches_about_batch_records():
    async def body(mc, cluster):
        await cluster.create_topic("t", partitions=1)
        await Producer(cluster, "t", msg_size=32, batch=20).run(400)
        cons = await Consumer(cluster, "t", [0], batch=20, msg_size=32, commit="every_fetch").run(
            expected=400
        )
        assert cons.fetches == 20 and cons.commits == 20
        assert cons.fetch_latency.count == 20 and cons.commit_latency.count == 20
        # a second consumer of the group starts from the committed offset: nothing left
        again = await Consumer(cluster, "t", [0], batch=20, msg_size=32).run(deadline_s=2)
        assert again.records == 0 and again.positions == {0: 400}

    run(_with_cluster(body, nodes=1))


def test_interval_and_none_commit_policies():
    async def body(mc, cluster):
        await cluster.create_topic("t", partitions=2)
        await Producer(cluster, "t", msg_size=16, batch=10).run(200)
        c1 = await Consumer(
            cluster, "t", [0, 1], group="a", batch=10, msg_size=16, commit=("interval_ms", 60_000)
        ).run(expected=200)
        assert c1.commits == 1  # only the final commit
        before = mc.commit_count
        c2 = await Consumer(
            cluster, "t", [0, 1], group="b", batch=10, msg_size=16, commit="none"
        ).run(expected=200)
        assert c2.commits == 0 and mc.commit_count == before and c2.records == 200

    run(_with_cluster(body))


def test_streaming_consumers_split_partitions_share_a_verifier():
    async def body(mc, cluster):
        await cluster.create_topic("s", partitions=4)
        v = Verifier()
        consumers = [
            Consumer(
                cluster,
                "s",
                parts,
                group="g",
                batch=20,
                msg_size=64,
                verifier=v,
                consumer_id=i,
                max_wait_ms=50,
            )
            for i, parts in enumerate([[0, 1], [2, 3]])
        ]
        # 480 records = 24 batches per producer = 6 per partition: each consumer gets 480
        ctasks = [asyncio.ensure_future(c.run(expected=480, deadline_s=30)) for c in consumers]
        prods = await asyncio.gather(
            *[Producer(cluster, "s", msg_size=64, batch=20, producer_id=i).run(480) for i in (1, 2)]
        )
        for p in prods:
            v.expect(p.producer_id, p.acked)
        results = await asyncio.gather(*ctasks)
        rep = v.report()
        assert rep.ok and rep.records == 960, rep
        assert sum(r.records for r in results) == 960
        assert all(r.e2e_latency.percentile(50) > 0 for r in results)

    run(_with_cluster(body))


def test_producer_retries_after_not_leader_and_verifier_sees_faults():
    async def body(mc, cluster):
        await cluster.create_topic("f", partitions=2)
        mc.faults.not_leader[1] = 2  # the first two requests to partition 1 bounce
        mc.faults.drop_produce.add(3)  # acked, never stored -> lost
        mc.faults.duplicate_produce.add(5)  # stored twice -> duplicates
        prod = await Producer(cluster, "f", msg_size=32, batch=10, producer_id=1).run(100)
        assert prod.retries == 2 and prod.records_acked == 100 and prod.errors == {}
        assert cluster.metadata_refreshes >= 3
        v = Verifier()
        v.expect(1, prod.acked)
        cons = await Consumer(cluster, "f", [0, 1], batch=10, msg_size=32, verifier=v).run(
            expected=100, deadline_s=3
        )
        rep = v.report()
        assert rep.lost == 10 and rep.duplicates == 10 and rep.out_of_order == 0
        assert cons.records == 100  # 90 originals + 10 duplicates

    run(_with_cluster(body))


def test_deadline_reports_missing_records():
    async def body(mc, cluster):
        await cluster.create_topic("d", partitions=1)
        await Producer(cluster, "d", msg_size=32, batch=5).run(50)
        cons = await Consumer(cluster, "d", [0], batch=5, msg_size=32, max_wait_ms=20).run(
            expected=80, deadline_s=0.5
        )
        assert cons.timed_out and cons.records == 50 and cons.missing == 30

    run(_with_cluster(body, nodes=1))


def test_connection_pipelines_and_records_latency():
    async def body(mc, cluster):
        conn = await KafkaConnection.open("127.0.0.1", mc.ports[0])
        futs = [conn.request(18, 2, b"") for _ in range(50)]
        frames = await asyncio.gather(*futs)
        assert len(frames) == 50 and conn.in_flight == 0
        assert conn.latency[18].count == 51  # + the handshake
        assert conn.pick_version(0, 3, 8) == 8 and conn.pick_version(1, 4, 11) == 11
        conn.close()
        with contextlib.suppress(Exception):
            await conn.request(18, 2, b"")

    run(_with_cluster(body, nodes=1))


def test_acks_zero_sends_without_waiting_and_counts_nothing_as_acked():
    async def body(mc, cluster):
        await cluster.create_topic("z", partitions=1)
        prod = await Producer(cluster, "z", msg_size=32, batch=10, acks=0).run(100)
        assert prod.records_sent == 100 and prod.records_acked == 0 and prod.requests == 10
        v = Verifier()
        v.expect(0, prod.acked)
        cons = await Consumer(cluster, "z", [0], batch=10, msg_size=32, verifier=v).run(
            expected=100, deadline_s=5
        )
        rep = v.report()
        assert cons.records == 100 and rep.unexpected == 100 and rep.lost == 0

    run(_with_cluster(body, nodes=1))


def test_pipelined_producer_over_several_leaders_keeps_per_partition_order():
    async def body(mc, cluster):
        await cluster.create_topic("o", partitions=6)
        prod = await Producer(
            cluster, "o", msg_size=16, batch=7, mode="pipelined", window=16, producer_id=3
        ).run(5000)
        assert prod.records_acked == 5000
        assert {p: (0, c - 1) for p, c in prod.partition_records.items()} == (
            prod.partition_offsets
        )
        v = Verifier()
        v.expect(3, prod.acked)
        await Consumer(cluster, "o", list(range(6)), batch=7, msg_size=16, verifier=v).run(
            expected=5000
        )
        assert v.report().ok

    run(_with_cluster(body, nodes=3))
