"""ZkCoordinator: the Coordinator seam backed by a real ZooKeeper (Kafka 0.8-era layout).

What lives where in ZooKeeper (znode formats in ``paths.py``):

* membership: ephemeral ``/brokers/ids/<id>``; the controller: ephemeral ``/controller``;
* metadata: ``/brokers/topics/<t>`` (assignment, written by whichever broker creates the topic)
  and ``.../partitions/<p>/state`` (leader, epoch, isr; written by the controller on leader
  changes and by the partition's leader on ISR changes, each conditionally on its version);
* groups: the Kafka paper's three registries under ``/consumers/<group>``.

The coordinator owns one part per concept and wires them together: the shared session
(``session.py``), the watch-fed metadata cache (``cache.py``), the controller election
(``election.py``), topic creation (``topics.py``), the consumer registries (``group_znodes.py``) and
producer ids (``producer_ids.py``). What stays here is the lifecycle and the session's states
(kazoo's, delivered on the loop by the bridge):

* SUSPENDED (connection lost, session maybe alive): stop acting as controller; keep the cache, so
  produce/fetch for partitions this broker leads keep working (``partition_state(fresh=True)``
  falls back to the cache); group calls raise CoordinatorNotAvailable (retriable) rather than
  pretending to store something.
* LOST (session expired; our ephemerals are gone): when kazoo reconnects with a new session,
  re-register the broker, re-create the member/owner registrations this broker made, re-run
  the controller election and re-read everything.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import zlib
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from typing import Any

from kazoo.client import KazooState

from brokers.core.coordinator import (
    Assignment,
    BrokerInfo,
    ClusterView,
    ConfigChange,
    MemberRecord,
    OffsetAndMetadata,
    PartitionState,
    TopicInfo,
    TopicPartition,
)
from brokers.core.errors import CoordinatorNotAvailable
from brokers.zk_broker.cache import MetadataCache
from brokers.zk_broker.config import ZkCoordinatorConfig
from brokers.zk_broker.counters import ZkCounters
from brokers.zk_broker.deletion import request_deletion
from brokers.zk_broker.election import Election
from brokers.zk_broker.group_znodes import GroupZnodes
from brokers.zk_broker.isr import IsrWriter
from brokers.zk_broker.paths import ZkPaths
from brokers.zk_broker.producer_ids import ProducerIds
from brokers.zk_broker.session import (
    UNAVAILABLE,
    RunningDeadline,
    ZkSession,
    ZooKeeperUnreachable,
)
from brokers.zk_broker.topics import TopicCreator
from brokers.zk_broker.transactions import TransactionZnodes

__all__ = ["ZkCoordinator", "ZooKeeperUnreachable"]

log = logging.getLogger(__name__)


class ZkCoordinator:
    """The zk twin's Coordinator. One instance per broker; all methods run on one event loop."""

    def __init__(self, config: ZkCoordinatorConfig, node_id: int) -> None:
        self.config = config
        self._node_id = node_id
        self.paths = ZkPaths(config.chroot)
        self._me: BrokerInfo | None = None
        self._session = ZkSession(config, node_id, self.paths)
        self._cache = MetadataCache(
            self._session,
            self.paths,
            spawn=self._spawn,
            on_controller=self._on_controller,
            on_change=self._on_cache_change,
        )
        self._election = Election(self._session, self.paths, node_id, self._cache,
                                  unclean=config.unclean_leader_election)
        self._topics = TopicCreator(
            self._session, self.paths, self._cache, config.create_topic_timeout_ms
        )
        self._group_znodes = GroupZnodes(self._session, self.paths)
        self._txn_znodes = TransactionZnodes(self._session, self.paths)
        self._isr = IsrWriter(self._session, self.paths, self._cache, node_id)
        self._producer_ids = ProducerIds(
            self._session, self.paths, node_id, config.producer_id_block_size
        )
        self._tasks: set[asyncio.Task[Any]] = set()
        self._reconnect_lock = asyncio.Lock()
        self._stats: dict[str, float] = {
            "zk_session_suspended": 0,
            "zk_session_lost": 0,
            "zk_reconnects": 0,
        }

    # ============================================================================================
    # lifecycle
    # ============================================================================================
    @property
    def node_id(self) -> int:
        return self._node_id

    @property
    def view_is_store(self) -> bool:
        return False  # the view is fed by watches; ZooKeeper is the store

    @property
    def is_controller(self) -> bool:
        return self._election.is_controller

    @property
    def connected(self) -> bool:
        return self._session.connected

    async def start(self, me: BrokerInfo) -> None:
        if me.node_id != self._node_id:
            raise ValueError(f"BrokerInfo node_id {me.node_id} != coordinator {self._node_id}")
        session = self._session
        await session.connect(self._on_session_state)
        self._me = me
        try:
            await session.start_data_path()
            # Held so a reconnection's handler, fired while we start, waits and then finds
            # the session it would re-register already registered.
            async with self._reconnect_lock:
                await self._register_at_start(me)
        except BaseException:
            await self.close()
            raise

    async def _register_at_start(self, me: BrokerInfo) -> None:
        """Register and load the cache; a session lost on the way is waited out and the
        whole of it done again on the next session. A broker paused (or starved) while it
        starts finds its session expired when it runs again: that is a fault to survive,
        not a reason to exit, as a broker already running survives it."""
        session = self._session
        cfg = self.config
        patience_s = (2 * cfg.session_timeout_ms + cfg.connection_timeout_ms) / 1000
        deadline = RunningDeadline(patience_s)
        while True:
            try:
                session.id = session.current_id()
                for root in (self.paths.root, *self.paths.roots):
                    await session.ensure_path(root)
                await self._cache.load_cluster_id()
                await session.register_broker(me)
                session.connected = True
                await self._cache.resync()
                return
            except UNAVAILABLE as exc:
                session.connected = False
                if deadline.passed():
                    raise ZooKeeperUnreachable(
                        f"broker {self._node_id}: ZooKeeper at {cfg.connect} did not keep a "
                        f"session for {patience_s:.0f} s while the broker started "
                        f"({type(exc).__name__})"
                    ) from None
                log.warning("broker %d: ZooKeeper session %s while starting; again on the "
                            "next session", self._node_id, type(exc).__name__)
            while not session.client_connected() and not deadline.passed():
                await deadline.sleep(0.05)

    async def close(self) -> None:
        session = self._session
        if session.closed:
            return
        session.closed = True
        session.connected = False
        await self._election.resign("closing")
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(BaseException):
                await task
        self._cache.cancel_waiters()
        await session.close()

    # --- wiring: background tasks and what the cache tells the election ------------------------
    def _spawn(self, coro: Coroutine[Any, Any, Any], what: str) -> None:
        if self._session.closed:
            coro.close()
            return
        task = asyncio.get_running_loop().create_task(coro, name=what)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        exc = task.exception()
        if exc is None:
            return
        if isinstance(exc, UNAVAILABLE):
            # ZooKeeper went away mid-read; the resync after reconnection repairs the cache.
            log.info("%s: ZooKeeper unavailable (%s)", task.get_name(), type(exc).__name__)
        else:
            log.error("%s failed", task.get_name(), exc_info=exc)

    async def _on_controller(self, holder: tuple[int, int] | None) -> None:
        await self._election.on_controller(holder)

    def _on_cache_change(self) -> None:
        self._election.notify()

    # --- session states ------------------------------------------------------------------------
    def _on_session_state(self, state: KazooState) -> None:
        if self._session.closed:
            return
        if state == KazooState.SUSPENDED:
            self._stats["zk_session_suspended"] += 1
            self._session.connected = False
            self._spawn(self._election.resign("ZooKeeper connection suspended"), "zk-resign")
        elif state == KazooState.LOST:
            self._stats["zk_session_lost"] += 1
            self._session.connected = False
            self._spawn(self._election.resign("ZooKeeper session lost"), "zk-resign")
        elif state == KazooState.CONNECTED:
            self._spawn(self._on_reconnected(), "zk-reconnected")

    async def _on_reconnected(self) -> None:
        session = self._session
        async with self._reconnect_lock:
            client = session.client
            if client is None or session.closed or not client.connected:
                return
            self._stats["zk_reconnects"] += 1
            new_id = session.current_id()
            if new_id != session.id:
                # A new session: every ephemeral we owned is gone. Re-register before we
                # tell the broker core it may use the coordinator again. The session id is
                # recorded only once all of it succeeded, so a failure here is retried on the
                # next CONNECTED instead of being forgotten.
                log.warning("broker %d: new ZooKeeper session, re-registering", self._node_id)
                assert self._me is not None
                await session.register_broker(self._me, new_id)
                await self._group_znodes.restore()
                session.id = new_id
            session.connected = True
            await self._cache.resync()

    # ============================================================================================
    # metadata
    # ============================================================================================
    def cluster(self) -> ClusterView:
        return self._cache.view

    def subscribe(self, listener: Callable[[ClusterView], None]) -> None:
        self._cache.subscribe(listener)

    async def partition_state(
        self, topic: str, partition: int, *, fresh: bool
    ) -> PartitionState | None:
        return await self._cache.partition_state(TopicPartition(topic, partition), fresh=fresh)

    async def create_topic(
        self,
        name: str,
        num_partitions: int,
        replication_factor: int,
        configs: Mapping[str, str] | None = None,
        *,
        auto: bool = False,
    ) -> TopicInfo:
        return await self._topics.create(name, num_partitions, replication_factor, configs)

    async def create_topic_assigned(
        self, name: str, assignment: Assignment, configs: Mapping[str, str] | None = None
    ) -> TopicInfo:
        return await self._topics.create_assigned(name, assignment, configs)

    async def create_partitions(self, topic: str, total: int) -> TopicInfo:
        return await self._topics.add_partitions(topic, total)

    async def change_isr(
        self, topic: str, partition: int, leader_epoch: int, isr: Sequence[int]
    ) -> PartitionState:
        """IsrChanges (brokers/core/isr_changes.py): the leader's conditional write."""
        return await self._isr.change(topic, partition, leader_epoch, isr)

    async def alter_topic_configs(self, topic: str, change: ConfigChange) -> TopicInfo:
        return await self._topics.alter_configs(topic, change)

    async def delete_topic(self, topic: str) -> None:
        await request_deletion(self._session, self.paths, self._cache, topic,
                               self.config.create_topic_timeout_ms)

    def on_topic_deleted(self, listener: Callable[[str], None]) -> None:
        self._cache.on_topic_deleted(listener)

    # ============================================================================================
    # groups
    # ============================================================================================
    def group_coordinator(self, group_id: str) -> BrokerInfo:
        brokers = self._cache.view.brokers
        if not brokers:
            raise CoordinatorNotAvailable("no live brokers known")
        # crc32, not hash(): every broker must compute the same answer (str hashes are salted).
        return brokers[zlib.crc32(group_id.encode("utf-8")) % len(brokers)]

    def coordination_epoch(self, group_id: str) -> int:
        # /brokers/ids's pzxid: ZooKeeper's zxid of the last broker that registered or left,
        # this one's new session included. Cluster-wide, and it moves even when a broker left
        # and came back between two reads of the children.
        return self._cache.brokers_epoch

    async def register_member(self, group_id: str, member: MemberRecord) -> None:
        await self._group_znodes.register_member(group_id, member)

    async def unregister_member(self, group_id: str, member_id: str) -> None:
        await self._group_znodes.unregister_member(group_id, member_id)

    async def record_owners(self, group_id: str, owners: Mapping[TopicPartition, str]) -> None:
        await self._group_znodes.record_owners(group_id, owners)

    async def commit_offsets(
        self, group_id: str, offsets: Mapping[TopicPartition, OffsetAndMetadata]
    ) -> None:
        await self._group_znodes.commit_offsets(group_id, offsets)

    async def fetch_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition] | None
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        return await self._group_znodes.fetch_offsets(group_id, partitions)

    async def delete_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition] | None
    ) -> None:
        await self._group_znodes.delete_offsets(group_id, partitions)

    # ============================================================================================
    # misc
    # ============================================================================================
    async def allocate_producer_id(self) -> int:
        return await self._producer_ids.allocate()

    # --- transactions (brokers.core.transactions.coordinator.TransactionStore) ---------------
    async def read_transaction(self, transactional_id: str) -> tuple[bytes | None, int]:
        return await self._txn_znodes.read(transactional_id)

    async def write_transaction(self, transactional_id: str, record: bytes,
                                version: int) -> int:
        return await self._txn_znodes.write(transactional_id, record, version)

    async def list_transactions(self) -> list[str]:
        return await self._txn_znodes.list()

    def counters(self) -> ZkCounters:
        out = dict(self._stats)
        out["controller_elections_won"] = self._election.elections_won
        out |= self._session.counters()
        snapshot = ZkCounters.of(out, is_controller=1.0 if self._election.is_controller else 0.0)
        snapshot.coordination_ops = snapshot.zk_requests
        return snapshot
