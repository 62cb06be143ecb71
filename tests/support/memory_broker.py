"""MemoryCluster: a small in-memory Kafka-protocol cluster for testing the load client over
loopback TCP (tests/integration/test_client_roundtrip.py).

N listeners (node ids 0..N-1) share in-memory partition logs; partition p is led by node
p % N and a request to any other node gets NOT_LEADER_OR_FOLLOWER, so routing is exercised. It
answers ApiVersions, Metadata, CreateTopics, Produce, Fetch (with long-poll), ListOffsets,
OffsetCommit, OffsetFetch and FindCoordinator through the shared codec, and can inject faults
(leader moves, dropped or duplicated batches) to prove the client and verifier notice. It is a
test double, not a broker: no storage, no groups, no coordination.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from dataclasses import dataclass, field

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
