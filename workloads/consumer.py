"""The measuring consumer: static partition assignment, fetch ~``batch`` records per request,
commit to the group coordinator after every fetch, on an interval, or never.

Why no group protocol: for measurement the driver splits partitions among consumers itself, so
rebalances never interfere with the numbers; offsets still go to the group coordinator through
OffsetCommit with generation -1 and an empty member id (the "manual assignment" commit every
Kafka broker accepts), which is the coordination traffic the experiment is about (the paper's
"constant update" = ``every_fetch``).

Per fetch: one Fetch request per leader broker for the partitions it leads (in one request),
``max_bytes`` = the size of one producer batch of ``batch`` records of ``msg_size`` bytes, so a
fetch returns about ``batch`` records; then (``every_fetch``) one OffsetCommit awaited before the
next fetch. Batches are decoded with the fixed-layout fast path, fed to the shared
:class:`~workloads.verify.Verifier`, and each record's end-to-end latency (now minus the send
time its payload carries) goes into a histogram.

Start position per partition: the group's committed offset (OffsetFetch), else earliest
(ListOffsets -2), or as configured. The consumer stops when it has consumed ``expected``
records, at a deadline (reporting how many are missing), or with ``expected=None`` once every
partition is caught up with its high watermark.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from brokers.core.errors import (
    KafkaError,
    OffsetOutOfRange,
    UnknownServerError,
    UserError,
    error_for_code,
)
from brokers.core.protocol.messages.list_offsets import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsTopic,
)
from brokers.core.protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
)
from brokers.core.protocol.messages.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestTopic,
    OffsetFetchResponse,
)
from workloads import wire
from workloads.cluster import ClusterClient, raise_for_code
from workloads.connection import BrokerConnection, ConnectionClosed
from workloads.latency import LatencyRecorder
from workloads.payload import MIN_MSG_SIZE, batch_layout, decode_batches, now_us
from workloads.verify import Verifier

__all__ = ["CommitPolicy", "Consumer", "ConsumerConfig", "ConsumerResult"]

LIST_OFFSETS = 2
OFFSET_COMMIT = 8
OFFSET_FETCH = 9
_FETCH_VERSIONS = (4, 11)
EARLIEST = -2
LATEST = -1

CommitPolicy = Literal["every_fetch", "none"] | tuple[Literal["interval_ms"], int]


@dataclass(frozen=True)
class ConsumerConfig:
    # Topic to consume.
    topic: str
    # Partitions this consumer owns (static assignment chosen by the driver).
    partitions: tuple[int, ...]
    # Group whose coordinator stores the committed offsets.
    group: str = "twinbench"
    # Records per fetch the consumer aims for (sizes max_bytes; the paper's batch).
    batch: int = 20
    # Expected record value size; with `batch` it sizes max_bytes to one producer batch.
    msg_size: int = 32
    # "every_fetch" (the paper's constant update), ("interval_ms", N), or "none".
    commit: CommitPolicy = "every_fetch"
    # Fetch long-poll: the broker waits up to this long for min_bytes before answering.
    max_wait_ms: int = 100
    # Fetch min_bytes (1: answer as soon as anything is there).
    min_bytes: int = 1
    # Where to start: "committed" (fall back to earliest), "earliest" or "latest".
    start: Literal["committed", "earliest", "latest"] = "committed"
    # Check each batch's CRC-32C (real clients do by default; costs ~nothing).
    check_crc: bool = True
    # Identifies this consumer in results.
    consumer_id: int = 0
    # Override max_bytes (per request and per partition); None = one producer batch.
    max_bytes: int | None = None
    # End-to-end latency only for records sent (intended) at or after this wall-clock µs: an
    # open-loop session's warm-up is left out. 0 = every record.
    e2e_from_us: int = 0

    def __post_init__(self) -> None:
        if not self.partitions:
            raise UserError("a consumer needs at least one partition")
        if self.batch < 1 or self.msg_size < MIN_MSG_SIZE:
            raise UserError(f"batch must be >= 1 and msg_size >= {MIN_MSG_SIZE}")
        c = self.commit
        if not (
            c in ("every_fetch", "none")
            or (isinstance(c, tuple) and len(c) == 2 and c[0] == "interval_ms" and c[1] > 0)
        ):
            raise UserError(f"commit policy {c!r}: every_fetch, none or ('interval_ms', N>0)")
        if self.start not in ("committed", "earliest", "latest"):
            raise UserError("start must be committed, earliest or latest")

    @property
    def fetch_bytes(self) -> int:
        if self.max_bytes is not None:
            return self.max_bytes
        return batch_layout(self.msg_size, self.batch).size


@dataclass
class ConsumerResult:
    consumer_id: int
    msg_size: int
    batch: int
    # Records of ours delivered (duplicates included) and foreign records seen.
    records: int
    foreign: int
    # Fetch requests, those that returned no records, and OffsetCommit requests.
    fetches: int
    empty_fetches: int
    commits: int
    # From the first fetch to the last record consumed (s).
    wall_s: float
    # Per-request latency (µs) of Fetch and OffsetCommit, and per-record end-to-end latency.
    fetch_latency: LatencyRecorder
    commit_latency: LatencyRecorder
    e2e_latency: LatencyRecorder
    # Next offset per partition when the consumer stopped.
    positions: dict[int, int]
    # What the driver asked for, and how many were still missing at the deadline.
    expected: int | None
    missing: int
    timed_out: bool
    # Wire error code -> occurrences (retried or not).
    errors: dict[int, int] = field(default_factory=dict)
    # time.perf_counter() at the first fetch: lets a driver time several clients as one phase.
    t_start: float = 0.0

    @property
    def rps(self) -> float:
        return self.records / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def kbps(self) -> float:
        """The paper's "kbps": payload kilobytes per second (rps * msg_size / 1000)."""
        return self.rps * self.msg_size / 1000


class _Done(Exception):
    """Internal: the expected count was reached."""


class Consumer:
    def __init__(
        self,
        cluster: ClusterClient,
        topic: str | None = None,
        partitions: tuple[int, ...] | list[int] = (),
        *,
        group: str = "twinbench",
        batch: int = 20,
        msg_size: int = 32,
        commit: CommitPolicy = "every_fetch",
        max_wait_ms: int = 100,
        verifier: Verifier | None = None,
        consumer_id: int = 0,
        start: Literal["committed", "earliest", "latest"] = "committed",
        e2e_from_us: int = 0,
        config: ConsumerConfig | None = None,
    ) -> None:
        if config is None:
            if topic is None:
                raise UserError("Consumer needs a topic")
            config = ConsumerConfig(
                topic=topic,
                partitions=tuple(partitions),
                group=group,
                batch=batch,
                msg_size=msg_size,
                commit=commit,
                max_wait_ms=max_wait_ms,
                consumer_id=consumer_id,
                start=start,
                e2e_from_us=e2e_from_us,
            )
        self.cluster = cluster
        self.config = config
        self.verifier = verifier if verifier is not None else Verifier()
        self.positions: dict[int, int] = {}
        self.fetch_latency = LatencyRecorder("fetch")
        self.commit_latency = LatencyRecorder("offset_commit")
        self.e2e_latency = LatencyRecorder("end_to_end")
        self._records = 0
        self._foreign = 0
        self._fetches = 0
        self._empty = 0
        self._commits = 0
        self._errors: dict[int, int] = {}
        self._last_record_t = 0.0
        self._committed: dict[int, int] = {}
        self._high_watermarks: dict[int, int] = {}
        self._expected: int | None = None
        # follow: being caught up does not end the run until finish() (fault sessions, where
        # producers run for a time, and a retried request can be stored twice, so no count
        # of records says when everything has been read).
        self._follow = False
        # Bumped by finish(): only a fetch sent after it can show the final catch-up.
        self._finish_epoch = 0
        # Called with (partition, records) per fetched partition with records, and with no
        # arguments per successful offset commit (fault timelines), and with (end-to-end µs,
        # records) per run of records sharing a send time, warm-up included (time series).
        self.on_records: Callable[[int, int], None] | None = None
        self.on_commit: Callable[[], None] | None = None
        self.on_e2e: Callable[[int, int], None] | None = None

    def finish(self) -> None:
        """End a ``follow`` run as soon as every partition is caught up with its high watermark,
        judged by fetches sent from now on."""
        self._follow = False
        self._finish_epoch += 1

    # -- offsets ------------------------------------------------------------------------------
    async def _committed_offsets(self) -> dict[int, int]:
        cfg = self.config

        async def attempt() -> dict[int, int]:
            conn = await self.cluster.coordinator(cfg.group)
            version = conn.pick_version(OFFSET_FETCH, 1, 5)
            req = OffsetFetchRequest(
                group_id=cfg.group,
                topics=[
                    OffsetFetchRequestTopic(name=cfg.topic, partition_indexes=list(cfg.partitions))
                ],
            )
            resp = OffsetFetchResponse.decode(
                await conn.call(OFFSET_FETCH, version, req.encode(version)), version
            )
            if resp.error_code:
                self.cluster.forget_coordinator(cfg.group)
                raise_for_code(resp.error_code, "OffsetFetch")
            out = {}
            for t in resp.topics:
                for p in t.partitions:
                    raise_for_code(p.error_code, f"OffsetFetch {t.name}-{p.partition_index}")
                    out[p.partition_index] = p.committed_offset
            return out

        return await self.cluster.retrying(attempt)

    async def _list_offsets(self, partitions: list[int], timestamp: int) -> dict[int, int]:
        cfg = self.config
        out: dict[int, int] = {}
        for p in partitions:

            async def attempt(p: int = p) -> int:
                conn = await self.cluster.leader_connection(cfg.topic, p)
                version = conn.pick_version(LIST_OFFSETS, 1, 5)
                req = ListOffsetsRequest(
                    replica_id=-1,
                    topics=[
                        ListOffsetsTopic(
                            name=cfg.topic,
                            partitions=[
                                ListOffsetsPartition(partition_index=p, timestamp=timestamp)
                            ],
                        )
                    ],
                )
                resp = ListOffsetsResponse.decode(
                    await conn.call(LIST_OFFSETS, version, req.encode(version)), version
                )
                for t in resp.topics:
                    for r in t.partitions:
                        raise_for_code(r.error_code, f"ListOffsets {t.name}-{r.partition_index}")
                        return r.offset
                raise UnknownServerError("empty ListOffsets response")

            out[p] = await self.cluster.retrying(attempt, refresh=[cfg.topic])
        return out

    async def _init_positions(self) -> None:
        cfg = self.config
        parts = list(cfg.partitions)
        if cfg.start == "latest":
            self.positions = await self._list_offsets(parts, LATEST)
            return
        committed = await self._committed_offsets() if cfg.start == "committed" else {}
        missing = [p for p in parts if committed.get(p, -1) < 0]
        earliest = await self._list_offsets(missing, EARLIEST) if missing else {}
        self.positions = {p: committed[p] if p not in earliest else earliest[p] for p in parts}
        self._committed = {p: committed.get(p, -1) for p in parts}

    async def commit(self, partitions: list[int] | None = None) -> None:
        """Commit current positions (of ``partitions``, default all that moved) now."""
        cfg = self.config
        parts = [
            p
            for p in (partitions if partitions is not None else cfg.partitions)
            if self.positions.get(p, -1) != self._committed.get(p, -1)
        ]
        if not parts:
            return
        offsets = {p: self.positions[p] for p in parts}

        async def attempt() -> None:
            conn = await self.cluster.coordinator(cfg.group)
            version = conn.pick_version(OFFSET_COMMIT, 2, 7)
            req = OffsetCommitRequest(
                group_id=cfg.group,
                generation_id_or_member_epoch=-1,
                member_id="",
                topics=[
                    OffsetCommitRequestTopic(
                        name=cfg.topic,
                        partitions=[
                            OffsetCommitRequestPartition(partition_index=p, committed_offset=o)
                            for p, o in offsets.items()
                        ],
                    )
                ],
            )
            frame = await conn.request(
                OFFSET_COMMIT, version, req.encode(version), self.commit_latency
            )
            resp = OffsetCommitResponse.decode(frame[4:], version)
            self._commits += 1
            for t in resp.topics:
                for r in t.partitions:
                    if r.error_code:
                        self._count_error(r.error_code)
                        cls = error_for_code(r.error_code)
                        if cls is not None and cls.retriable:
                            self.cluster.forget_coordinator(cfg.group)
                        raise_for_code(r.error_code, f"OffsetCommit {t.name}-{r.partition_index}")

        await self.cluster.retrying(attempt)
        self._committed.update(offsets)
        if self.on_commit is not None:
            self.on_commit()

    def _count_error(self, code: int) -> None:
        self._errors[code] = self._errors.get(code, 0) + 1

    # -- the run ------------------------------------------------------------------------------
    async def run(
        self, expected: int | None = None, deadline_s: float | None = None, *,
        follow: bool = False,
    ) -> ConsumerResult:
        """Consume until ``expected`` records (or caught up when None) or ``deadline_s``;
        with ``follow``, until caught up after ``finish()`` was called."""
        cfg = self.config
        self._follow = follow
        await self.cluster.topic_partitions(cfg.topic)
        await self._init_positions()
        self._expected = expected
        t0 = time.perf_counter()
        self._last_record_t = t0
        timed_out = False
        try:
            await asyncio.wait_for(self._fetch_all(), deadline_s)
        except TimeoutError:
            timed_out = True
        except _Done:
            pass
        if cfg.commit != "none":
            try:
                await self.commit()
            except (KafkaError, ConnectionClosed, OSError) as exc:
                code = getattr(exc, "code", -1)
                self._count_error(code)
        wall = (self._last_record_t if self._records else time.perf_counter()) - t0
        missing = max(0, expected - self._records) if expected is not None else 0
        return ConsumerResult(
            consumer_id=cfg.consumer_id,
            msg_size=cfg.msg_size,
            batch=cfg.batch,
            records=self._records,
            foreign=self._foreign,
            fetches=self._fetches,
            empty_fetches=self._empty,
            commits=self._commits,
            wall_s=wall,
            fetch_latency=self.fetch_latency,
            commit_latency=self.commit_latency,
            e2e_latency=self.e2e_latency,
            positions=dict(self.positions),
            expected=expected,
            missing=missing,
            timed_out=timed_out,
            errors=dict(self._errors),
            t_start=t0,
        )

    async def _fetch_all(self) -> None:
        """Group partitions by leader and run one fetch loop per leader until done."""
        cfg = self.config
        pending = set(cfg.partitions)
        failures = 0  # consecutive leader moves without progress: bounded like any retry
        while pending:
            by_leader: dict[int, list[int]] = defaultdict(list)
            for p in sorted(pending):
                leader = self.cluster.leader_of(cfg.topic, p)
                if leader < 0:
                    await self.cluster.retrying(
                        functools.partial(self.cluster.leader_connection, cfg.topic, p),
                        refresh=[cfg.topic],
                    )
                    leader = self.cluster.leader_of(cfg.topic, p)
                by_leader[leader].append(p)
            records_before = self._records
            tasks = [
                asyncio.ensure_future(self._fetch_loop(leader, parts))
                for leader, parts in by_leader.items()
            ]
            try:
                done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
                for t in done:
                    exc = t.exception()
                    if exc is not None:
                        raise exc
                # All loops finished normally: caught up (expected=None).
                return
            except _LeaderMoved:
                # Cancel the rest, refresh, regroup, go on from the current positions.
                for t in tasks:
                    t.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                failures = 0 if self._records != records_before else failures + 1
                if failures > self.cluster.config.retries:
                    raise
                await asyncio.sleep(self.cluster.config.retry_backoff_ms / 1000 * failures)
                await self.cluster.retrying(lambda: self.cluster.refresh_metadata([cfg.topic]))
            except BaseException:
                for t in tasks:
                    t.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                raise

    async def _fetch_loop(self, leader: int, parts: list[int]) -> None:
        """Fetch ``parts`` from ``leader`` until this loop is done: it returns once caught up
        (no count expected), raises _Done when the expected count is reached and _LeaderMoved
        on any retriable error. The steps of a fetch are plain calls: no coroutine per request
        beyond the request itself (this is the load client's hot loop)."""
        cfg = self.config
        try:
            conn: BrokerConnection = await self.cluster.connection(leader)
        except (KafkaError, ConnectionClosed, OSError) as exc:
            raise _LeaderMoved() from exc
        version = conn.pick_version(wire.FETCH, *_FETCH_VERSIONS)
        max_bytes = cfg.fetch_bytes
        commit_every = cfg.commit == "every_fetch"
        interval = cfg.commit[1] / 1000 if isinstance(cfg.commit, tuple) else None
        last_commit = time.perf_counter()
        caught_up: set[int] = set()
        while True:
            epoch = self._finish_epoch
            body = self._fetch_request(version, parts, max_bytes)
            try:
                frame = await conn.request(wire.FETCH, version, body, self.fetch_latency)
            except ConnectionClosed as exc:
                raise _LeaderMoved() from exc
            got = 0
            for r in self._fetch_results(frame, version):
                if r.error_code:
                    await self._partition_error(r.partition, r.error_code)
                else:
                    got += self._take(r, caught_up)
            if got:
                self._records += got
                self._last_record_t = time.perf_counter()
            else:
                self._empty += 1
            if commit_every or (
                interval is not None and time.perf_counter() - last_commit >= interval
            ):
                await self.commit(parts)
                last_commit = time.perf_counter()
            expected = self._expected
            if expected is not None:
                if self._records >= expected:
                    raise _Done()  # ends every fetch loop
            elif (len(caught_up) == len(parts) and not self._follow
                  and epoch == self._finish_epoch):
                return  # caught up, judged by a fetch sent after the last finish()

    def _fetch_request(self, version: int, parts: list[int], max_bytes: int) -> bytes:
        """A Fetch of ``parts`` from their positions."""
        cfg = self.config
        positions = self.positions
        return wire.encode_fetch_request(
            version=version,
            max_wait_ms=cfg.max_wait_ms,
            min_bytes=cfg.min_bytes,
            max_bytes=max_bytes,
            topic=cfg.topic,
            partitions=[(p, positions[p], max_bytes) for p in parts],
        )

    def _fetch_results(
        self, frame: bytes | memoryview, version: int
    ) -> list[wire.FetchPartitionResult]:
        """The partitions of a Fetch response; a top-level error means the leader moved."""
        self._fetches += 1
        top_error, results = wire.decode_fetch_response(frame, version, 4)
        if top_error:
            self._count_error(top_error)
            raise _LeaderMoved()
        return results

    async def _partition_error(self, p: int, code: int) -> None:
        """A partition's fetch error: an offset out of range restarts it from the earliest
        offset; a retriable one means the leader moved; anything else is raised."""
        self._count_error(code)
        if code == OffsetOutOfRange.code:
            self.positions[p] = (await self._list_offsets([p], EARLIEST))[p]
            return
        cls = error_for_code(code)
        if cls is not None and cls.retriable:
            raise _LeaderMoved()
        raise_for_code(code, f"Fetch {self.config.topic}-{p}")

    def _take(self, r: wire.FetchPartitionResult, caught_up: set[int]) -> int:
        """Book one partition's answer: its records (from our position on), the new position
        and whether it is caught up with the high watermark. Returns our records delivered."""
        p = r.partition
        hw = r.high_watermark
        self._high_watermarks[p] = hw
        start = self.positions[p]
        if r.records is None or len(r.records) == 0:
            # No records but behind the high watermark (the response's size limit went to
            # another partition): not caught up, whatever an older fetch said.
            if start >= hw:
                caught_up.add(p)
            else:
                caught_up.discard(p)
            return 0
        pos, got = self._read_batches(p, r.records, start)
        if self.on_records is not None and pos > start:
            self.on_records(p, pos - start)
        self.positions[p] = pos
        if pos >= hw:
            caught_up.add(p)
        else:
            caught_up.discard(p)
        return got

    def _read_batches(self, p: int, records: memoryview, pos: int) -> tuple[int, int]:
        """Feed the verifier and the end-to-end histogram with the records of ``records`` at or
        after offset ``pos``; returns (the offset after the last batch, our records in it)."""
        verifier = self.verifier
        e2e = self.e2e_latency
        cutoff = self.config.e2e_from_us
        on_e2e = self.on_e2e
        got = 0
        now = now_us()
        for b in decode_batches(records, self.config.check_crc):
            if b.next_offset <= pos:
                continue  # a batch before our position (broker sent from its start)
            if not b.crc_ok:
                verifier.add_corrupt()
                pos = b.next_offset
                continue
            pids, seqs, sends = b.producer_ids, b.sequences, b.send_us
            if b.offsets is None:
                if b.base_offset < pos:
                    k = pos - b.base_offset
                    pids, seqs, sends = pids[k:], seqs[k:], sends[k:]
            elif b.base_offset < pos:
                keep = [i for i, o in enumerate(b.offsets) if o >= pos]
                pids = tuple(pids[i] for i in keep)
                seqs = tuple(seqs[i] for i in keep)
                sends = tuple(sends[i] for i in keep)
            n = len(seqs)
            if b.foreign:
                self._foreign += b.foreign
                verifier.add_foreign(b.foreign)
            if n:
                verifier.add_batch(p, pids, seqs)
                s0 = sends[0]
                if sends.count(s0) == n:
                    if s0 >= cutoff:
                        e2e.record(now - s0, n)
                    if on_e2e is not None:
                        on_e2e(now - s0, n)
                else:
                    for s in sends:
                        if s >= cutoff:
                            e2e.record(now - s)
                        if on_e2e is not None:
                            on_e2e(now - s, 1)
                got += n
            pos = b.next_offset
        return pos, got


class _LeaderMoved(Exception):
    """Internal: a fetch loop hit a retriable error; regroup partitions by leader."""
