"""The measuring producer: exactly ``batch`` records per Produce request.

Modes:
* ``sync``: one request at a time; the next is built only after the previous one was
  acknowledged (the DSBS paper's producer). Throughput = batch / round trip.
* ``pipelined``: up to ``window`` requests in flight (over all partitions); responses are
  consumed oldest first (Kafka answers in order per connection, and the oldest request overall
  is the one whose buffer we need back first).

Records of producer ``k`` carry (k, sequence) with sequences 0..count-1 in send order; each
request carries consecutive sequences, and requests go to partitions round-robin. The last
request may be smaller than ``batch`` when ``count`` is not a multiple of it.

Each in-flight request owns one reusable buffer ``[Produce frame prefix][RecordBatch]`` from a
small pool (window + 1 buffers), so the hot path allocates nothing per request: it patches
partition, version and correlation id in the prefix, stamps the records, computes the CRC and
writes one buffer. A buffer goes back to the pool only once its response arrived (the broker has
then read it all, so no transport can still be holding a reference to unsent bytes of it).

A retriable error (leader moved, topic not yet known) refreshes metadata and resends the same
bytes to the new leader, up to the cluster's retry limit; the retry can create duplicates if the
first attempt was in fact stored, which is exactly what the verifier is there to count.
"""

from __future__ import annotations

import asyncio
import struct
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from brokers.core.errors import KafkaError, UserError, error_for_code
from workloads import wire
from workloads.cluster import ClusterClient
from workloads.connection import BrokerConnection, ConnectionClosed
from workloads.latency import LatencyRecorder
from workloads.payload import MIN_MSG_SIZE, BatchBuilder, now_us
from workloads.schedule import OpenLoopSchedule, ScheduleConfig, ScheduleReport
from workloads.verify import fill

__all__ = ["Producer", "ProducerConfig", "ProducerResult"]

# Produce versions we encode/decode (3 = first with RecordBatch v2; 9 is flexible).
_PRODUCE_VERSIONS = (3, 8)
_VERSION_AT = 6  # api_version inside the frame
_PARTITION = struct.Struct(">i")
_I16 = struct.Struct(">h")
# Fast-path response parse: 1 topic, name, 1 partition -> (index, error_code, base_offset).
_ONE = struct.Struct(">i")
_PART_HEAD = struct.Struct(">ihq")


@dataclass(frozen=True)
class ProducerConfig:
    # Topic to produce to (must exist; the driver creates it).
    topic: str
    # Bytes per record value (>= 8: producer id + sequence; >= 16 adds a send timestamp).
    msg_size: int
    # Records per Produce request (the paper's "batch").
    batch: int
    # "sync": wait for each ack before the next request; "pipelined": up to `window` in flight.
    mode: Literal["sync", "pipelined"] = "sync"
    # Requests in flight in pipelined mode (sync forces 1).
    window: int = 1
    # Written into every record so consumers can attribute and de-duplicate records.
    producer_id: int = 0
    # Produce acks: 1 = leader wrote it (the paper's setting; no replication yet), 0 = no
    # response at all (nothing is counted as acknowledged), -1 = all in-sync replicas.
    acks: int = 1
    # Broker-side timeout for acks != 0 (Produce timeout_ms).
    timeout_ms: int = 30_000
    # Partitions to use round-robin; None = every partition of the topic, in id order.
    partitions: tuple[int, ...] | None = None
    # Records per second this producer sends at, open loop (workloads.schedule: every request
    # is due at its intended time and timed from it; records carry it as their send time);
    # None = as fast as the acknowledgements come (closed loop).
    rate: float | None = None
    # Open loop only: "uniform" or "poisson" intended send times, and the poisson RNG's seed.
    arrivals: Literal["uniform", "poisson"] = "uniform"
    seed: int = 0
    # Open loop only: requests due in the first warmup_s seconds are not measured.
    warmup_s: float = 0.0

    def __post_init__(self) -> None:
        if self.msg_size < MIN_MSG_SIZE:
            raise UserError(f"msg_size must be >= {MIN_MSG_SIZE} bytes")
        if self.batch < 1:
            raise UserError("batch must be >= 1")
        if self.mode not in ("sync", "pipelined"):
            raise UserError("mode must be sync or pipelined")
        if self.window < 1:
            raise UserError("window must be >= 1")
        if self.acks not in (-1, 0, 1):
            raise UserError("acks must be -1, 0 or 1")
        if not 0 <= self.producer_id < 2**32:
            raise UserError("producer_id must fit in 32 bits")
        if self.rate is not None:
            # Validates rate and arrivals; the producer builds its own when it runs.
            self.schedule_config()

    def schedule_config(self) -> ScheduleConfig:
        assert self.rate is not None
        return ScheduleConfig(rate=self.rate, arrivals=self.arrivals, seed=self.seed,
                              warmup_s=self.warmup_s)

    @property
    def in_flight(self) -> int:
        return 1 if self.mode == "sync" else self.window


@dataclass
class ProducerResult:
    producer_id: int
    msg_size: int
    batch: int
    mode: str
    # Records handed to the transport / acknowledged without error.
    records_sent: int
    records_acked: int
    # Produce requests that got a response (or were sent, with acks=0); resends included.
    requests: int
    # Resends after retriable errors.
    retries: int
    # Wire error code -> requests that finally failed with it (their records are not acked).
    errors: dict[int, int]
    # From the first send to the last ack (s).
    wall_s: float
    # Per-request round trip (µs).
    latency: LatencyRecorder
    # acked[seq] != 0 when record `seq` was acknowledged: the tag of its partition
    # (workloads/verify.py, tag()), what the verifier expects to see and where.
    acked: bytearray
    # Records acked per partition and the [first, last] offset range each partition got.
    partition_records: dict[int, int] = field(default_factory=dict)
    partition_offsets: dict[int, tuple[int, int]] = field(default_factory=dict)
    # time.perf_counter() at the first send: lets a driver time several clients as one phase.
    t_start: float = 0.0
    # Open loop: the schedule's latencies (per record) and its verdict; None when closed loop.
    schedule: OpenLoopSchedule | None = None
    schedule_report: ScheduleReport | None = None

    @property
    def rps(self) -> float:
        """Acknowledged records per second."""
        return self.records_acked / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def kbps(self) -> float:
        """The paper's "kbps": payload kilobytes per second (rps * msg_size / 1000)."""
        return self.rps * self.msg_size / 1000


class _Req:
    """One request in flight."""

    __slots__ = (
        "acked_at",
        "attempts",
        "buf",
        "conn",
        "count",
        "due",
        "first_seq",
        "fut",
        "last_error",
        "partition",
        "sent_at",
    )

    def __init__(self, buf, conn, fut, partition, first_seq, count) -> None:
        self.buf = buf
        self.conn = conn
        self.attempts = 0
        self.last_error = 0
        self.fut = fut
        self.partition = partition
        self.first_seq = first_seq
        self.count = count
        # Open loop: intended send, actual send and response arrival (perf_counter seconds).
        self.due = self.sent_at = self.acked_at = 0.0

    def arrived(self, _fut: asyncio.Future) -> None:
        """Done-callback (open loop): the response's arrival time, before settling, which may
        come much later when an older request is waited for first."""
        self.acked_at = time.perf_counter()


class _Routes:
    """Each partition's leader connection and the Produce version it speaks."""

    __slots__ = ("cluster", "conns", "topic", "versions")

    def __init__(self, cluster: ClusterClient, topic: str) -> None:
        self.cluster = cluster
        self.topic = topic
        self.conns: dict[int, BrokerConnection] = {}
        self.versions: dict[int, int] = {}

    async def route(self, p: int) -> BrokerConnection:
        """Look up ``p``'s leader (from the metadata the cluster holds) and connect to it."""
        conn = await self.cluster.leader_connection(self.topic, p)
        self.conns[p] = conn
        self.versions[p] = conn.pick_version(wire.PRODUCE, *_PRODUCE_VERSIONS)
        return conn

    async def reroute(self, p: int) -> BrokerConnection:
        """``route``, retried with a metadata refresh while the leader is unknown or down."""
        return await self.cluster.retrying(lambda: self.route(p), refresh=[self.topic])


class Producer:
    def __init__(
        self,
        cluster: ClusterClient,
        topic: str | None = None,
        msg_size: int = 32,
        batch: int = 20,
        mode: Literal["sync", "pipelined"] = "sync",
        window: int = 1,
        producer_id: int = 0,
        acks: int = 1,
        *,
        timeout_ms: int = 30_000,
        partitions: tuple[int, ...] | list[int] | None = None,
        rate: float | None = None,
        config: ProducerConfig | None = None,
    ) -> None:
        if config is None:
            if topic is None:
                raise UserError("Producer needs a topic")
            config = ProducerConfig(
                topic=topic,
                msg_size=msg_size,
                batch=batch,
                mode=mode,
                window=window,
                producer_id=producer_id,
                acks=acks,
                timeout_ms=timeout_ms,
                partitions=None if partitions is None else tuple(partitions),
                rate=rate,
            )
        self.cluster = cluster
        self.config = config
        self._topic = config.topic.encode()
        self._client_id = cluster.config.connection.client_id.encode()
        self._prefix_size = wire.produce_prefix_size(self._client_id, self._topic)
        self._builders: dict[int, BatchBuilder] = {}
        self._pools: dict[int, list[bytearray]] = {}
        self.latency = LatencyRecorder("produce")
        # Called with (partition, records) for every acknowledged request (fault timelines).
        self.on_ack: Callable[[int, int], None] | None = None
        # The last open-loop run's schedule (latencies from intended send times), else None.
        self.schedule: OpenLoopSchedule | None = None

    # -- buffers ------------------------------------------------------------------------------
    def _builder(self, n: int) -> BatchBuilder:
        b = self._builders.get(n)
        if b is None:
            b = self._builders[n] = BatchBuilder(self.config.msg_size, n, self.config.producer_id)
        return b

    def _take_buffer(self, n: int) -> bytearray:
        pool = self._pools.setdefault(n, [])
        if pool:
            return pool.pop()
        builder = self._builder(n)
        buf = builder.new_buffer(self._prefix_size)
        buf[: self._prefix_size] = wire.produce_prefix(
            version=_PRODUCE_VERSIONS[0],
            client_id=self._client_id,
            topic=self._topic,
            partition=0,
            acks=self.config.acks,
            timeout_ms=self.config.timeout_ms,
            batch_size=builder.layout.size,
        )
        return buf

    # -- the run ------------------------------------------------------------------------------
    async def run(self, count: int, duration_s: float | None = None) -> ProducerResult:
        """Send ``count`` records (open loop: at most, stopping at the first request due
        ``duration_s`` after the start); returns when every request was answered."""
        cfg = self.config
        routes = _Routes(self.cluster, cfg.topic)
        parts = await self._partitions()
        for p in parts:
            await routes.reroute(p)
        conns, versions = routes.conns, routes.versions
        acked = bytearray(count)
        state = _State()
        inflight: deque[_Req] = deque()
        window = cfg.in_flight
        expect = cfg.acks != 0
        batch = cfg.batch
        prefix = self._prefix_size
        latency = self.latency
        n_parts = len(parts)
        full_builder = self._builder(batch)
        full_pool = self._pools.setdefault(batch, [])
        seq = 0
        i = 0
        t_start = time.perf_counter()
        sched = None
        # Intended times are perf_counter seconds; records carry them as wall-clock µs.
        wall0_us = now_us() - round(t_start * 1e6)
        deadline = t_start + duration_s if duration_s is not None else float("inf")
        if cfg.rate is not None:
            sched = OpenLoopSchedule(cfg.schedule_config(), t_start)
        self.schedule = sched
        due = 0.0
        while seq < count:
            if sched is not None:
                due = sched.next_due(min(batch, count - seq))
                # Time-bounded: stop at the first request due after the end, or at the end
                # itself when the producer is behind (its due times lag the clock).
                if due >= deadline or time.perf_counter() >= deadline:
                    break
                # Never early: the event loop's timers have millisecond resolution and may
                # wake a little before the due time (a send before its intended time would
                # make it look earlier than scheduled).
                while (delay := due - time.perf_counter()) > 0:
                    await asyncio.sleep(delay)
            p = parts[i % n_parts]
            i += 1
            conn = conns[p]
            if conn.closed:
                conn = await routes.reroute(p)
            # One reusable buffer per request: full batches from their own pool, the last,
            # shorter request (count not a multiple of batch) from its size's pool.
            if count - seq >= batch:
                n = batch
                builder = full_builder
                buf = full_pool.pop() if full_pool else self._take_buffer(n)
            else:
                n = count - seq
                builder = self._builder(n)
                buf = self._take_buffer(n)
            _patch_prefix(buf, versions[p], p, prefix)
            if sched is None:
                builder.fill(buf, prefix, seq, now_us())
            else:
                builder.fill(buf, prefix, seq, wall0_us + round(due * 1e6))
            if conn.write_paused:
                await conn.writable()
            fut = conn.send_frame(buf, wire.PRODUCE, latency, expect_response=expect)
            req = _Req(buf, conn, fut, p, seq, n)
            inflight.append(req)
            state.sent += n
            seq += n
            if sched is not None:
                req.due = due
                req.sent_at = now = time.perf_counter()
                sched.on_send(due, now, n)
                fut.add_done_callback(req.arrived)
                if len(inflight) >= window:
                    while len(inflight) >= window:
                        await self._settle(inflight.popleft(), acked, state, routes)
                    sched.waited(time.perf_counter() - now)
                continue
            while len(inflight) >= window:
                await self._settle(inflight.popleft(), acked, state, routes)
        report = None if sched is None else sched.report(time.perf_counter())
        while inflight:
            await self._settle(inflight.popleft(), acked, state, routes)
        result = self._result(state, acked, t_start)
        result.schedule, result.schedule_report = sched, report
        return result

    async def _partitions(self) -> list[int]:
        """The partitions to produce to, round robin: the configured ones or all."""
        cfg = self.config
        parts = (
            list(cfg.partitions)
            if cfg.partitions is not None
            else (await self.cluster.topic_partitions(cfg.topic))
        )
        if not parts:
            raise UserError(f"topic {cfg.topic} has no partitions")
        return parts

    async def _settle(
        self, req: _Req, acked: bytearray, state: _State, routes: _Routes
    ) -> None:
        """Wait for ``req``'s response and book it, resending it after a retriable error."""
        try:
            frame = await req.fut
        except ConnectionClosed:
            frame = _LOST
        if not self._account(req, frame, acked, state, routes.versions):
            await self._retry(req, acked, state, routes)

    def _result(self, state: _State, acked: bytearray, t_start: float) -> ProducerResult:
        """The run's result, timed from ``t_start`` (the first send) to now (the last ack)."""
        cfg = self.config
        wall = time.perf_counter() - t_start
        return ProducerResult(
            producer_id=cfg.producer_id,
            msg_size=cfg.msg_size,
            batch=cfg.batch,
            mode=cfg.mode,
            records_sent=state.sent,
            records_acked=state.acked,
            requests=state.requests,
            retries=state.retries,
            errors=state.errors,
            wall_s=wall,
            latency=self.latency,
            acked=acked,
            partition_records=state.partition_records,
            partition_offsets={
                p: (first, state.last_offsets[p]) for p, first in state.first_offsets.items()
            },
            t_start=t_start,
        )

    def _account(
        self, req: _Req, frame, acked: bytearray, state: _State, versions: dict[int, int]
    ) -> bool:
        """Book one response (plain function: no coroutine on the hot path). False means the
        request failed with a retriable error and should be retried."""
        if frame is _LOST:
            err, base = -2, -1
        else:
            state.requests += 1
            if frame is None:  # acks=0: nothing to learn, nothing counted as acknowledged
                self._pools[req.count].append(req.buf)
                return True
            err, base = _parse(frame, versions[req.partition])
        if err == 0:
            n = req.count
            s = req.first_seq
            p = req.partition
            # The partition's tag, not just "yes": loss is then counted per partition.
            acked[s : s + n] = fill(p, n)
            state.acked += n
            pr = state.partition_records
            pr[p] = pr.get(p, 0) + n
            if p not in state.first_offsets:
                state.first_offsets[p] = base
            state.last_offsets[p] = base + n - 1
            self._pools[n].append(req.buf)
            if self.on_ack is not None:
                self.on_ack(p, n)
            if req.due and self.schedule is not None:
                # The done-callback has not run yet when the response was already there as we
                # came to settle it: then it arrived just now, as far as this loop can tell.
                self.schedule.on_ack(req.due, req.sent_at, req.acked_at or time.perf_counter(), n)
            return True
        exc_cls = error_for_code(err) if err != -2 else None
        retriable = err == -2 or (exc_cls is not None and exc_cls.retriable)
        if retriable and req.attempts < self.cluster.config.retries:
            req.last_error = err
            return False
        state.errors[err] = state.errors.get(err, 0) + 1
        self._pools[req.count].append(req.buf)
        return True

    async def _retry(
        self, req: _Req, acked: bytearray, state: _State, routes: _Routes
    ) -> None:
        """Resend a request after a retriable error until it is accounted for."""
        cfg = self.config
        versions = routes.versions
        while True:
            req.attempts += 1
            state.retries += 1
            ccfg = self.cluster.config
            await asyncio.sleep(min(ccfg.retry_backoff_ms * req.attempts,
                                    ccfg.retry_backoff_max_ms) / 1000)
            try:
                await self.cluster.refresh_metadata([cfg.topic])
                conn = await routes.route(req.partition)
                _patch_prefix(req.buf, versions[req.partition], req.partition, self._prefix_size)
                req.conn = conn
                frame = await conn.send_frame(req.buf, wire.PRODUCE, self.latency)
                req.acked_at = time.perf_counter()
            except (KafkaError, ConnectionClosed, OSError):
                frame = _LOST
            if self._account(req, frame, acked, state, versions):
                return


_LOST = object()  # marker: the connection died before the response arrived


def _patch_prefix(buf: bytearray, version: int, partition: int, prefix: int) -> None:
    """Patch the api_version and the partition index into a Produce frame prefix."""
    _I16.pack_into(buf, _VERSION_AT, version)
    _PARTITION.pack_into(buf, prefix - 8, partition)


class _State:
    __slots__ = (
        "acked",
        "errors",
        "first_offsets",
        "last_offsets",
        "partition_records",
        "requests",
        "retries",
        "sent",
    )

    def __init__(self) -> None:
        self.sent = 0
        self.acked = 0
        self.requests = 0
        self.retries = 0
        self.errors: dict[int, int] = {}
        self.partition_records: dict[int, int] = {}
        self.first_offsets: dict[int, int] = {}
        self.last_offsets: dict[int, int] = {}


def _parse(frame: memoryview, version: int) -> tuple[int, int]:
    """(error_code, base_offset) of a one-partition Produce response frame."""
    # Fast path: [corr][1 topic][name][1 partition][index, error, base_offset ...]
    if _ONE.unpack_from(frame, 4)[0] == 1:
        name_len = _I16.unpack_from(frame, 8)[0]
        pos = 10 + name_len
        if name_len >= 0 and _ONE.unpack_from(frame, pos)[0] == 1:
            _index, err, base = _PART_HEAD.unpack_from(frame, pos + 4)
            return err, base
    results = wire.decode_produce_response(frame, version, 4)
    for r in results:
        if r.error_code:
            return r.error_code, r.base_offset
    if not results:
        return -1, -1
    return 0, results[0].base_offset
