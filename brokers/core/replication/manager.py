"""ReplicaManager: the replication duties of one broker, between the handlers and the twin.

It follows the twin's view (``Coordinator.subscribe``): for every partition with more than one
replica that names this broker, it is either the leader (a ``LeaderPartition``; produce and
fetch handlers consult it) or a follower (the partition is handed to the fetcher of its leader,
``fetcher.py``). Partitions with one replica never enter it, so with replication factor 1 the
data path costs one failed dict lookup per partition and the coordination traffic is unchanged.

What it does for the handlers:

* Produce to a partition it leads: the leader epoch to stamp into the appended batches, the
  min.insync.replicas check for acks=-1 (NOT_ENOUGH_REPLICAS), and for acks=-1 a future that
  completes when the high watermark passes the batch (``purgatory.py``; REQUEST_TIMED_OUT at
  the request's timeout, NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR shrank below the minimum
  meanwhile, NOT_LEADER_OR_FOLLOWER when the leadership moved).
* Fetch: a follower's fetch (replica id >= 0) moves that follower's log end and maybe the high
  watermark; a consumer's fetch is capped at the high watermark.
* OffsetForLeaderEpoch: the leader-epoch cache of each replicated partition.

ISR changes it proposes go to the twin through ``IsrChanges`` (brokers/core/isr_changes.py):
when a follower catches up (at once) and when one lags (checked every half lag time, by a
timer that runs only while this broker leads a replicated partition).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from brokers.core.atomic_file import replace_file
from brokers.core.coordinator import ClusterView, Coordinator, PartitionState, TopicPartition
from brokers.core.errors import (
    KafkaError,
    NotEnoughReplicasAfterAppend,
    NotLeaderOrFollower,
    RequestTimedOut,
)
from brokers.core.isr_changes import IsrChanges
from brokers.core.logs import LogStore, PartitionLogLike, stored_batch_headers
from brokers.core.notify import AppendNotifier
from brokers.core.protocol.records import iter_batches
from brokers.core.replication.config import ReplicationConfig
from brokers.core.replication.epochs import LeaderEpochCache, from_checkpoint
from brokers.core.replication.leader import LeaderPartition
from brokers.core.replication.purgatory import DelayedProduces

log = logging.getLogger("twinbench.replication")

MIN_INSYNC = "min.insync.replicas"
# Kafka's name for the file next to a partition's segments that keeps its leader-epoch cache.
EPOCH_CHECKPOINT = "leader-epoch-checkpoint"


def now_ms() -> int:
    return int(time.monotonic() * 1000)


@dataclass(slots=True)
class Following:
    """A partition this broker follows: whom, in which epoch, and what it knows of the HW."""

    leader: int
    leader_epoch: int
    high_watermark: int = 0
    truncated: bool = False  # cut to the leader's log since this leadership began


def _read_checkpoint(plog: PartitionLogLike) -> str | None:
    directory = getattr(plog, "directory", None)
    if directory is None:
        return None
    try:
        return (Path(directory) / EPOCH_CHECKPOINT).read_text("ascii")
    except (OSError, UnicodeDecodeError):
        return None  # none, or unreadable: the headers are scanned instead


def _epoch_at(plog: PartitionLogLike, offset: int) -> int:
    """The leader epoch of the stored batch holding ``offset`` (-1 if none is readable)."""
    for header in iter_batches(plog.read(offset, 1)):
        return header.partition_leader_epoch
    return -1


class ReplicaManager:
    def __init__(
        self, node_id: int, config: ReplicationConfig, coordinator: Coordinator,
        store: LogStore, notifier: AppendNotifier,
        forget_producers: Callable[[str, int], None],
    ) -> None:
        self.node_id = node_id
        self.config = config
        self.coordinator = coordinator
        self.store = store
        self.notifier = notifier
        self._forget_producers = forget_producers
        self.leaders: dict[TopicPartition, LeaderPartition] = {}
        self.following: dict[TopicPartition, Following] = {}
        self._epochs: dict[TopicPartition, LeaderEpochCache] = {}
        self._min_isr: dict[str, int] = {}
        self._purgatory: DelayedProduces[tuple[asyncio.Future[KafkaError | None], str, int]] = (
            DelayedProduces())
        self._expiry: asyncio.TimerHandle | None = None
        self._isr_timer: asyncio.Task[None] | None = None
        self._changes: set[asyncio.Task[None]] = set()
        # Fetchers per leader broker id; created by the fetcher module's factory (set by the
        # broker), so this module stays free of sockets.
        self.on_following_changed: Callable[[], None] = lambda: None
        self._closed = False

    # --- following the twin's view ----------------------------------------------------------
    def apply_view(self, view: ClusterView) -> None:
        """Become leader or follower of each replicated partition naming this broker."""
        me = self.node_id
        seen: set[TopicPartition] = set()
        following_changed = False
        for name, topic in view.topics.items():
            self._min_isr[name] = int(topic.configs.get(MIN_INSYNC,
                                                        self.config.min_insync_replicas))
            for state in topic.partitions:
                if len(state.replicas) < 2 or me not in state.replicas:
                    continue
                tp = TopicPartition(name, state.partition)
                seen.add(tp)
                if state.leader == me:
                    self._lead(tp, state)
                    following_changed |= self.following.pop(tp, None) is not None
                else:
                    self._resign(tp)
                    following_changed |= self._follow(tp, state)
        for tp in [tp for tp in self.leaders if tp not in seen]:
            self._resign(tp)
        for tp in [tp for tp in self.following if tp not in seen]:
            del self.following[tp]
            following_changed = True
        if following_changed:
            self.on_following_changed()
        if self.leaders and self._isr_timer is None and not self._closed:
            self._isr_timer = asyncio.get_running_loop().create_task(self._isr_loop())

    def _lead(self, tp: TopicPartition, state: PartitionState) -> None:
        current = self.leaders.get(tp)
        if current is not None and current.leader_epoch == state.leader_epoch:
            if current.isr != frozenset(state.isr) | {self.node_id}:
                self._advanced(tp, current.isr_committed(state.isr))
            return
        if current is not None:
            self._resign(tp)
        plog = self.store.get_or_create(tp.topic, tp.partition)
        previous = self.following.get(tp)
        hw = previous.high_watermark if previous is not None else 0
        leader = LeaderPartition(
            self.node_id, state.leader_epoch, state.replicas, state.isr,
            log_end_offset=plog.log_end_offset, high_watermark=hw, now_ms=now_ms())
        self.leaders[tp] = leader
        self.record_epoch(tp, plog, state.leader_epoch, plog.log_end_offset)
        # Batches replicated while following are not in the idempotence table yet.
        self._forget_producers(tp.topic, tp.partition)
        log.info("%s-%d: leader in epoch %d, isr %s, log end %d, high watermark %d", tp.topic,
                 tp.partition, state.leader_epoch, sorted(leader.isr), plog.log_end_offset,
                 leader.high_watermark)
        self._advanced(tp, leader.on_append(plog.log_end_offset))
        self.notifier.notify(tp)

    def _resign(self, tp: TopicPartition) -> None:
        leader = self.leaders.pop(tp, None)
        if leader is None:
            return
        for fut, _, _ in self._purgatory.drop(tp):
            if not fut.done():
                fut.set_result(NotLeaderOrFollower(
                    f"{tp.topic}-{tp.partition}: leadership moved before the ISR had the batch"))
        self.notifier.notify(tp)

    def _follow(self, tp: TopicPartition, state: PartitionState) -> bool:
        current = self.following.get(tp)
        if (current is not None and current.leader == state.leader
                and current.leader_epoch == state.leader_epoch):
            return False
        hw = current.high_watermark if current is not None else 0
        self.following[tp] = Following(state.leader, state.leader_epoch, hw)
        return True

    # --- leader epochs ----------------------------------------------------------------------
    def epochs(self, tp: TopicPartition, plog: PartitionLogLike) -> LeaderEpochCache:
        """The partition's epoch cache: on first use, its checkpoint file checked against the
        log and completed from the batch headers after it (``epochs.from_checkpoint``), or,
        without a usable file, every stored batch header."""
        cache = self._epochs.get(tp)
        if cache is None:
            cache, scan_from = from_checkpoint(_read_checkpoint(plog), plog.log_start_offset,
                                               plog.log_end_offset, lambda o: _epoch_at(plog, o))
            changed = False
            for header in stored_batch_headers(plog, scan_from):
                changed |= cache.assign(header.partition_leader_epoch, header.base_offset)
            self._epochs[tp] = cache
            if changed:
                self.save_epochs(plog, cache)
        return cache

    def record_epoch(self, tp: TopicPartition, plog: PartitionLogLike, epoch: int,
                     start_offset: int) -> None:
        """Records of ``epoch`` start at ``start_offset`` in ``plog`` (a leadership taken, a
        follower's appended run); the checkpoint is rewritten when that is news."""
        cache = self.epochs(tp, plog)
        if cache.assign(epoch, start_offset):
            self.save_epochs(plog, cache)

    def record_cut(self, tp: TopicPartition, plog: PartitionLogLike, end_offset: int) -> None:
        """``plog`` was cut to end at ``end_offset``: its epochs from there on go."""
        cache = self.epochs(tp, plog)
        if cache.truncate_from_end(end_offset):
            self.save_epochs(plog, cache)

    @staticmethod
    def save_epochs(plog: PartitionLogLike, cache: LeaderEpochCache) -> None:
        """Rewrite the checkpoint (atomically, without fsync: it is checked at start, so a lost
        or stale one costs a scan). A log without a directory (the null sink) keeps none; a
        failed write is logged, and the next start scans."""
        directory = getattr(plog, "directory", None)
        if directory is None:
            return
        try:
            replace_file(Path(directory) / EPOCH_CHECKPOINT, cache.encode(), sync_file=False,
                         sync_dir=False)
        except OSError as exc:
            log.warning("%s: leader-epoch checkpoint not written (%s)", directory, exc)

    def end_offset_for(self, tp: TopicPartition, epoch: int) -> tuple[int, int]:
        plog = self.store.get_or_create(tp.topic, tp.partition)
        return self.epochs(tp, plog).end_offset_for(epoch, plog.log_end_offset)

    # --- produce ----------------------------------------------------------------------------
    def produce_leader(self, tp: TopicPartition, acks: int, replica_count: int
                       ) -> LeaderPartition | None:
        """This broker's part in a produce to ``tp``, asked once before the append;
        ``replica_count``: the partition's replicas as the leadership check found them.

        None: the partition has one replica (replication factor 1 costs this one failed dict
        lookup); append it as it comes. A ``LeaderPartition``: this broker leads it; stamp its
        ``leader_epoch`` into the batches and report the append with ``appended``. Raises
        NOT_ENOUGH_REPLICAS when acks=-1 finds the ISR below min.insync.replicas, and
        NOT_LEADER_OR_FOLLOWER when the partition has several replicas but this manager does
        not lead it yet: the store already names this broker (the per_request check, or a view
        the manager has not caught up with: a topic just created, a leadership just moved), and
        appending unreplicated would acknowledge with no min.insync check, a batch lost with
        this broker. The client retries, as on any leadership move."""
        leader = self.leaders.get(tp)
        if leader is None:
            if replica_count > 1 or (self.following and tp in self.following):
                raise NotLeaderOrFollower(
                    f"{tp.topic}-{tp.partition}: this broker is taking over its leadership")
            return None
        if acks == -1:
            leader.check_min_isr(self.min_isr(tp.topic))
        return leader

    def min_isr(self, topic: str) -> int:
        return self._min_isr.get(topic, self.config.min_insync_replicas)

    def appended(
        self, tp: TopicPartition, leader: LeaderPartition, end_offset: int, acks: int,
        timeout_ms: int,
    ) -> asyncio.Future[KafkaError | None] | None:
        """A batch was appended, ending at ``end_offset``: for acks=-1 the future of its
        answer (None: the ISR has it), else None."""
        self._advanced(tp, leader.on_append(end_offset))
        if acks != -1:
            return None
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[KafkaError | None] = loop.create_future()
        if leader.high_watermark >= end_offset:
            fut.set_result(self._after_append_error(tp, leader))
            return fut
        deadline = loop.time() + max(timeout_ms, 0) / 1000
        self._purgatory.park(tp, end_offset, deadline, (fut, tp.topic, tp.partition))
        self._schedule_expiry()
        return fut

    def _after_append_error(self, tp: TopicPartition, leader: LeaderPartition) -> KafkaError | None:
        need = self.min_isr(tp.topic)
        if len(leader.isr) < need:
            return NotEnoughReplicasAfterAppend(
                f"{tp.topic}-{tp.partition}: {len(leader.isr)} in-sync replicas, "
                f"min.insync.replicas is {need}")
        return None

    def _advanced(self, tp: TopicPartition, high_watermark: int | None) -> None:
        if high_watermark is None:
            return
        leader = self.leaders.get(tp)
        for fut, _, _ in self._purgatory.on_high_watermark(tp, high_watermark):
            if not fut.done():
                fut.set_result(self._after_append_error(tp, leader) if leader else None)
        self.notifier.notify(tp)  # consumers capped at the old high watermark may read on

    def _schedule_expiry(self) -> None:
        at = self._purgatory.next_deadline()
        if at is None:
            return
        if self._expiry is not None:
            if self._expiry.when() <= at:
                return
            self._expiry.cancel()
        self._expiry = asyncio.get_running_loop().call_at(at, self._expire)

    def _expire(self) -> None:
        self._expiry = None
        for fut, topic, partition in self._purgatory.expire(asyncio.get_running_loop().time()):
            if not fut.done():
                fut.set_result(RequestTimedOut(
                    f"{topic}-{partition}: the in-sync replicas did not confirm the batch "
                    "within the request timeout (it stays in the leader's log)"))
        self._schedule_expiry()

    # --- fetch ------------------------------------------------------------------------------
    def replica_fetched(self, tp: TopicPartition, replica_id: int, fetch_offset: int) -> None:
        """A follower fetched from ``fetch_offset``. Raises NotLeaderOrFollower when this
        broker does not lead the partition as a replicated one or the asker is no replica."""
        leader = self.leaders.get(tp)
        if leader is None:
            raise NotLeaderOrFollower(f"{tp.topic}-{tp.partition} is not led here")
        self._advanced(tp, leader.on_follower_fetch(replica_id, fetch_offset, now_ms()))
        if not leader.change_in_flight and leader.caught_up():
            self._propose(tp, leader)

    # --- ISR changes ------------------------------------------------------------------------
    async def _isr_loop(self) -> None:
        period = self.config.replica_lag_time_max_ms / 2000
        while self.leaders and not self._closed:
            await asyncio.sleep(period)
            for tp, leader in list(self.leaders.items()):
                self._propose(tp, leader)
        self._isr_timer = None

    def _propose(self, tp: TopicPartition, leader: LeaderPartition) -> None:
        if not isinstance(self.coordinator, IsrChanges):
            return  # the twin keeps the ISR itself
        isr = leader.propose(now_ms(), self.config.replica_lag_time_max_ms)
        if isr is None:
            return
        task = asyncio.get_running_loop().create_task(self._change(tp, leader, isr))
        self._changes.add(task)
        task.add_done_callback(self._changes.discard)

    async def _change(
        self, tp: TopicPartition, leader: LeaderPartition, isr: frozenset[int]
    ) -> None:
        assert isinstance(self.coordinator, IsrChanges)
        try:
            state = await self.coordinator.change_isr(
                tp.topic, tp.partition, leader.leader_epoch, sorted(isr))
        except KafkaError as exc:
            log.info("%s-%d: ISR change to %s refused: %s", tp.topic, tp.partition,
                     sorted(isr), exc)
            leader.isr_refused(now_ms())
            return
        except Exception:
            log.exception("%s-%d: ISR change to %s failed", tp.topic, tp.partition, sorted(isr))
            leader.isr_refused(now_ms())
            return
        if self.leaders.get(tp) is leader:
            log.info("%s-%d: isr now %s", tp.topic, tp.partition, list(state.isr))
            self._advanced(tp, leader.isr_committed(state.isr))
        else:
            leader.isr_refused()

    async def close(self) -> None:
        self._closed = True
        tasks = [t for t in (self._isr_timer, *self._changes) if t is not None]
        for t in tasks:
            t.cancel()
        for t in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        if self._expiry is not None:
            self._expiry.cancel()
        for tp in list(self.leaders):
            self._resign(tp)
