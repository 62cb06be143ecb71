"""ReplicaFetcher: a follower's copy loop, one per leader broker, over the Kafka Fetch API.

As Kafka's brokers do, a follower fetches from its leader with ``replica_id`` set to its own
id (so the leader counts the fetch offset as the follower's log end and does not cap the
answer at the high watermark) and ``current_leader_epoch`` set to the epoch it follows (a
leader in another epoch refuses it: FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH). Before its
first fetch in an epoch it cuts its log to the leader's with OffsetForLeaderEpoch
(``truncation.py``). Fetched batches are appended as they are: their offsets are already the
leader's (the follower's log end is where the first one starts) and their
partitionLeaderEpoch field keeps the epoch they were written in, which the follower's own
epoch cache records. Per batch, never per record.

One TCP connection per leader, one request in flight; an error closes it and the loop retries
after ``replica_fetch_backoff_ms``. The fetcher of a leader that no partition follows any
more stops. A leader whose registered listener is secured is reached over TLS and/or SASL
(``Fetchers.security``, set by the broker from its own listener settings), the exchange done
once per connection before the first fetch.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import Callable

from brokers.core.coordinator import Coordinator, TopicPartition
from brokers.core.errors import (
    KafkaError,
    KafkaStorageError,
    OffsetOutOfRange,
    ProtocolViolation,
    error_for_code,
)
from brokers.core.logs import LogStore, PartitionLogLike
from brokers.core.protocol.api import RESPONSES, ApiKey
from brokers.core.protocol.framing import frame
from brokers.core.protocol.header import RequestHeader, decode_response_header
from brokers.core.protocol.messages.fetch import (
    FetchPartition,
    FetchRequest,
    FetchResponse,
    FetchTopic,
)
from brokers.core.protocol.messages.offset_for_leader_epoch import (
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
    OffsetForLeaderPartition,
    OffsetForLeaderTopic,
)
from brokers.core.protocol.primitives import S32
from brokers.core.protocol.records import iter_batches
from brokers.core.protocol.schema import Message
from brokers.core.replication.manager import ReplicaManager
from brokers.core.replication.truncation import first_question, next_cut, no_epochs_cut
from brokers.core.security.client import ClientSecurity, SaslClientExchange
from brokers.core.transactions.states import mark_transactional

log = logging.getLogger("twinbench.replication.fetcher")

FETCH_VERSION = 11  # the last non-flexible Fetch: replica_id and current_leader_epoch
EPOCH_VERSION = 3  # OffsetForLeaderEpoch with replica_id
MAX_RESPONSE_BYTES = 64 * 1024 * 1024  # a frame larger than this from a leader is garbage
CLIENT_ID = "twinbench-replica-fetcher"


class LeaderConnection:
    """One request at a time to one broker, framed with the shared codec."""

    def __init__(self, host: str, port: int, client_id: str,
                 security: ClientSecurity | None = None) -> None:
        self.host, self.port, self.client_id = host, port, client_id
        self.security = security
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._ids = itertools.count(1)

    async def _open(self, timeout_s: float) -> None:
        """Connect (TLS when the listener is), then log in (SASL) before any other request."""
        sec = self.security
        ctx = sec.ssl_context() if sec is not None else None
        self._reader, self._writer = await asyncio.wait_for(asyncio.open_connection(
            self.host, self.port, ssl=ctx, server_hostname=self.host if ctx else None),
            timeout_s)
        if sec is not None and sec.protocol.sasl:
            exchange = SaslClientExchange(sec)
            step: tuple[int, int, Message] | None = exchange.first()
            while step is not None:
                api_key, version, request = step
                answer = await self.call(api_key, version, request,
                                         RESPONSES[ApiKey(api_key)], timeout_s)
                step = exchange.next(answer)

    async def call(self, api_key: int, version: int, request: Message,
                   response_type: type[Message], timeout_s: float) -> Message:
        if self._writer is None:
            await self._open(timeout_s)
        reader, writer = self._reader, self._writer
        assert reader is not None and writer is not None
        correlation = next(self._ids)
        header = RequestHeader(api_key, version, correlation, self.client_id).encode()
        writer.writelines(frame([header, *request.encode(version)]))
        await writer.drain()
        size = S32.unpack(await asyncio.wait_for(reader.readexactly(4), timeout_s))[0]
        if not 0 <= size <= MAX_RESPONSE_BYTES:
            raise ProtocolViolation(f"response frame of {size} bytes from the leader")
        body = await asyncio.wait_for(reader.readexactly(size), timeout_s)
        got, at = decode_response_header(body)
        if got != correlation:
            raise ProtocolViolation(f"correlation id {got} where {correlation} was expected")
        return response_type.decode(memoryview(body)[at:], version)

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
        self._reader = self._writer = None


class ReplicaFetcher:
    """Copies every partition this broker follows from one leader."""

    def __init__(self, leader_id: int, manager: ReplicaManager, coordinator: Coordinator,
                 store: LogStore, security: ClientSecurity | None = None) -> None:
        self.leader_id = leader_id
        self.security = security
        self.manager = manager
        self.coordinator = coordinator
        self.store = store
        self._conn: LeaderConnection | None = None
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(
            self._run(), name=f"replica-fetcher-{self.leader_id}")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self._conn is not None:
            self._conn.close()

    def _partitions(self) -> list[TopicPartition]:
        return [tp for tp, f in self.manager.following.items() if f.leader == self.leader_id]

    async def _run(self) -> None:
        cfg = self.manager.config
        while True:
            partitions = self._partitions()
            if not partitions:
                return
            try:
                await self._round(partitions)
            except asyncio.CancelledError:
                raise
            except KafkaStorageError:
                return  # the data directory is offline; the broker is halting
            except (OSError, TimeoutError, EOFError, ProtocolViolation,
                    asyncio.IncompleteReadError, KafkaError) as exc:
                log.info("fetch from broker %d failed (%s); retrying", self.leader_id, exc)
                if self._conn is not None:
                    self._conn.close()
                    self._conn = None
                await asyncio.sleep(cfg.replica_fetch_backoff_ms / 1000)

    def _connection(self) -> LeaderConnection:
        broker = self.coordinator.cluster().broker(self.leader_id)
        if broker is None:
            raise OSError(f"broker {self.leader_id} is not in the cluster view")
        if self._conn is None or (self._conn.host, self._conn.port) != (broker.host,
                                                                        broker.port):
            if self._conn is not None:
                self._conn.close()
            self._conn = LeaderConnection(broker.host, broker.port,
                                          f"{CLIENT_ID}-{self.manager.node_id}", self.security)
        return self._conn

    async def _round(self, partitions: list[TopicPartition]) -> None:
        conn = self._connection()
        timeout_s = self.manager.config.replica_fetch_wait_max_ms / 1000 + 10
        untruncated = [tp for tp in partitions if not self.manager.following[tp].truncated]
        if untruncated:
            await self._truncate(conn, untruncated, timeout_s)
        cfg = self.manager.config
        by_topic: dict[str, list[FetchPartition]] = {}
        epochs: dict[TopicPartition, int] = {}
        for tp in partitions:
            f = self.manager.following.get(tp)
            if f is None or not f.truncated:
                continue
            plog = self.store.get_or_create(tp.topic, tp.partition)
            epochs[tp] = f.leader_epoch
            by_topic.setdefault(tp.topic, []).append(FetchPartition(
                partition=tp.partition, current_leader_epoch=f.leader_epoch,
                fetch_offset=plog.log_end_offset, partition_max_bytes=cfg.replica_fetch_max_bytes))
        if not by_topic:
            return
        req = FetchRequest(
            replica_id=self.manager.node_id, max_wait_ms=cfg.replica_fetch_wait_max_ms,
            min_bytes=1, max_bytes=MAX_RESPONSE_BYTES // 2,
            topics=[FetchTopic(topic=t, partitions=ps) for t, ps in by_topic.items()],
            forgotten_topics_data=[])
        resp = await conn.call(ApiKey.FETCH, FETCH_VERSION, req, FetchResponse, timeout_s)
        assert isinstance(resp, FetchResponse)
        backoff = False
        for t in resp.responses:
            for p in t.partitions:
                tp = TopicPartition(t.topic, p.partition_index)
                f = self.manager.following.get(tp)
                if f is None or f.leader_epoch != epochs.get(tp):
                    continue  # the view moved on while the request was out
                if p.error_code:
                    error = error_for_code(p.error_code)
                    log.info("%s-%d: leader %d answered %s", tp.topic, tp.partition,
                             self.leader_id, error.wire_name if error else p.error_code)
                    if isinstance(error, OffsetOutOfRange):
                        # This log reaches past the leader's (records of another leader):
                        # cut it to the leader's again before the next fetch.
                        f.truncated = False
                    backoff = True
                    continue
                self._append(tp, p.records or b"")
                plog = self.store.get_or_create(tp.topic, tp.partition)
                f.high_watermark = min(p.high_watermark, plog.log_end_offset)
                # DeleteRecords on the leader: its log start comes with every answer, and a
                # follower moves its own there (as far as its log reaches), so the records
                # stay deleted when it leads.
                if p.log_start_offset > plog.log_start_offset:
                    plog.delete_records(min(p.log_start_offset, plog.log_end_offset))
        if backoff:
            await asyncio.sleep(cfg.replica_fetch_backoff_ms / 1000)

    def _append(self, tp: TopicPartition, records: bytes | memoryview) -> None:
        if not records:
            return
        plog = self.store.get_or_create(tp.topic, tp.partition)
        view = memoryview(records)
        # Runs of batches written in one epoch go in one append, stamped with that epoch; a
        # partial batch at the end of the response (cut at max bytes) waits for the next fetch.
        expected = plog.log_end_offset
        run_start = run_end = 0
        run_epoch: int | None = None
        flagged = False
        for header in iter_batches(view):
            if header.is_transactional and not flagged:
                # Before any of it is stored: if this replica comes to lead the partition, it
                # must know to rebuild the partition's transactions (transactions/states.py).
                mark_transactional(plog)
                flagged = True
            if header.base_offset != expected:
                raise ProtocolViolation(
                    f"{tp.topic}-{tp.partition}: leader sent offset {header.base_offset} "
                    f"where {expected} was next")
            if run_epoch is not None and header.partition_leader_epoch != run_epoch:
                self._store_run(tp, plog, view[run_start:run_end], run_epoch)
                run_start = run_end
            run_epoch = header.partition_leader_epoch
            run_end = header.position + header.size
            expected = header.last_offset + 1
        if run_epoch is not None and run_end > run_start:
            self._store_run(tp, plog, view[run_start:run_end], run_epoch)

    def _store_run(self, tp: TopicPartition, plog: PartitionLogLike, run: memoryview,
                   epoch: int) -> None:
        result = plog.append(run, epoch)
        self.manager.record_epoch(tp, plog, epoch, result.base_offset)

    async def _truncate(self, conn: LeaderConnection, partitions: list[TopicPartition],
                        timeout_s: float) -> None:
        """Cut each partition's log to the leader's (rounds of OffsetForLeaderEpoch)."""
        pending = {tp: self.manager.following[tp] for tp in partitions}
        for _ in range(64):  # each round removes an epoch; a log has far fewer than this
            asks: dict[TopicPartition, int] = {}
            for tp, f in list(pending.items()):
                plog = self.store.get_or_create(tp.topic, tp.partition)
                cache = self.manager.epochs(tp, plog)
                asked = first_question(cache)
                if asked < 0:
                    self._cut(tp, no_epochs_cut(plog.log_end_offset, f.high_watermark).end_offset)
                    f.truncated = True
                    del pending[tp]
                else:
                    asks[tp] = asked
            if not asks:
                return
            by_topic: dict[str, list[OffsetForLeaderPartition]] = {}
            for tp, asked in asks.items():
                by_topic.setdefault(tp.topic, []).append(OffsetForLeaderPartition(
                    partition=tp.partition, current_leader_epoch=pending[tp].leader_epoch,
                    leader_epoch=asked))
            req = OffsetForLeaderEpochRequest(
                replica_id=self.manager.node_id,
                topics=[OffsetForLeaderTopic(topic=t, partitions=ps)
                        for t, ps in by_topic.items()])
            resp = await conn.call(ApiKey.OFFSET_FOR_LEADER_EPOCH, EPOCH_VERSION, req,
                                   OffsetForLeaderEpochResponse, timeout_s)
            assert isinstance(resp, OffsetForLeaderEpochResponse)
            for t in resp.topics:
                for p in t.partitions:
                    tp = TopicPartition(t.topic, p.partition)
                    waiting = pending.get(tp)
                    if waiting is None or tp not in asks:
                        continue
                    if self.manager.following.get(tp) is not waiting:
                        del pending[tp]  # it leads now, or follows another epoch: not ours
                        continue
                    if p.error_code:
                        error = error_for_code(p.error_code)
                        raise (error or KafkaError)(
                            f"{tp.topic}-{tp.partition}: OffsetForLeaderEpoch refused")
                    plog = self.store.get_or_create(tp.topic, tp.partition)
                    cut = next_cut(self.manager.epochs(tp, plog), plog.log_end_offset,
                                   asks[tp], p.leader_epoch, p.end_offset,
                                   waiting.high_watermark)
                    self._cut(tp, cut.end_offset)
                    if cut.done:
                        waiting.truncated = True
                        del pending[tp]
            if not pending:
                return
        raise ProtocolViolation("truncation did not settle in 64 rounds")

    def _cut(self, tp: TopicPartition, end_offset: int) -> None:
        plog = self.store.get_or_create(tp.topic, tp.partition)
        if end_offset >= plog.log_end_offset:
            return
        truncate = getattr(plog, "truncate_to", None)
        if truncate is None:
            return  # the null sink keeps nothing to cut
        end = truncate(end_offset)
        self.manager.record_cut(tp, plog, end)
        following = self.manager.following.get(tp)
        if following is not None:
            following.high_watermark = min(following.high_watermark, end)
        log.info("%s-%d: cut to end at %d to match leader %d", tp.topic, tp.partition, end,
                 self.leader_id)


class Fetchers:
    """The fetcher of every leader this broker follows some partition of."""

    def __init__(self, manager: ReplicaManager, coordinator: Coordinator, store: LogStore,
                 make: Callable[[int], ReplicaFetcher] | None = None) -> None:
        self.manager = manager
        self.coordinator = coordinator
        self.store = store
        # How followers reach a leader's listener (None: PLAINTEXT); set before the first
        # refresh() by the broker.
        self.security: ClientSecurity | None = None
        self._make = make or (lambda leader: ReplicaFetcher(leader, manager, coordinator, store,
                                                            self.security))
        self._fetchers: dict[int, ReplicaFetcher] = {}
        self._stopping: set[asyncio.Task[None]] = set()

    def refresh(self) -> None:
        """Start a fetcher for each leader followed; stop those no partition follows."""
        leaders = {f.leader for f in self.manager.following.values() if f.leader >= 0}
        for leader in leaders:
            fetcher = self._fetchers.get(leader)
            if fetcher is None or fetcher._task is None or fetcher._task.done():
                fetcher = self._make(leader)
                self._fetchers[leader] = fetcher
                fetcher.start()
        for leader in [b for b in self._fetchers if b not in leaders]:
            task = asyncio.get_running_loop().create_task(self._fetchers.pop(leader).stop())
            self._stopping.add(task)
            task.add_done_callback(self._stopping.discard)

    async def close(self) -> None:
        fetchers, self._fetchers = list(self._fetchers.values()), {}
        for f in fetchers:
            await f.stop()
        for t in list(self._stopping):
            with contextlib.suppress(asyncio.CancelledError):
                await t
