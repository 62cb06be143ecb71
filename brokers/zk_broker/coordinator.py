"""ZkCoordinator: the Coordinator seam backed by a real ZooKeeper (Kafka 0.8-era layout).

What lives where (znode formats in ``paths.py``):

* membership: ephemeral ``/brokers/ids/<id>``; the controller: ephemeral ``/controller``;
* metadata: ``/brokers/topics/<t>`` (assignment, written by whichever broker creates the topic)
  and ``.../partitions/<p>/state`` (leader, epoch, isr; written only by the controller);
* groups: the Kafka paper's three registries under ``/consumers/<group>``; offsets are written
  on every commit and read on every fetch, as Kafka 0.8.2 did with offsets.storage=zookeeper.

The metadata cache is fed by watches. A watch event never carries data, so each one triggers a
re-read that also re-arms the watch; reads carry the znode's zxid and a late, older read never
overwrites a newer one. After any reconnection the whole tree is re-read (watches armed by reads
that failed during the outage would otherwise be missing).

Session states (kazoo's, delivered on the loop by the bridge):

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
import time
import uuid
import zlib
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping
from typing import Any

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import (
    BadVersionError,
    ConnectionClosedError,
    ConnectionLoss,
    NodeExistsError,
    NoNodeError,
    OperationTimeoutError,
    SessionExpiredError,
    SessionMovedError,
)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import WatchedEvent
from kazoo.retry import KazooRetry

from brokers.core.coordinator import (
    NO_LEADER,
    BrokerInfo,
    ClusterView,
    MemberRecord,
    OffsetAndMetadata,
    PartitionState,
    TopicInfo,
    TopicPartition,
    validate_replication_factor,
    validate_topic_name,
)
from brokers.core.errors import (
    CoordinatorNotAvailable,
    KafkaError,
    NotController,
    RequestTimedOut,
    TopicAlreadyExists,
    UserError,
)
from brokers.zk_broker import paths as fmt
from brokers.zk_broker.bridge import BridgeTimeout, KazooBridge
from brokers.zk_broker.config import ZkCoordinatorConfig
from brokers.zk_broker.controller import CachedState, Controller, assign_replicas
from brokers.zk_broker.counters import ZkCounters
from brokers.zk_broker.direct import DirectSession
from brokers.zk_broker.paths import LeaderAndIsr, ZkPaths

log = logging.getLogger(__name__)

# Errors meaning "ZooKeeper cannot answer right now" (connection loss, expired session, closed
# client, a request past its timeout). Group calls turn them into CoordinatorNotAvailable.
# Anything else kazoo raises (NoNode, BadVersion...) is a real answer the caller handles.
_UNAVAILABLE = (
    ConnectionLoss,
    SessionExpiredError,
    SessionMovedError,
    ConnectionClosedError,
    OperationTimeoutError,
    BridgeTimeout,
    KazooTimeoutError,
)


class ZooKeeperUnreachable(UserError):
    """ZooKeeper did not answer at start-up; the broker exits non-zero with this message."""


class ZkCoordinator:
    """The zk twin's Coordinator. One instance per broker; all methods run on one event loop."""

    def __init__(self, config: ZkCoordinatorConfig, node_id: int) -> None:
        self.config = config
        self._node_id = node_id
        self.paths = ZkPaths(config.chroot)
        self._client: KazooClient | None = None
        self._bridge: KazooBridge | None = None
        # The data path's own session (config.data_path == "direct"); None = all via kazoo.
        self._direct: DirectSession | None = None
        self._me: BrokerInfo | None = None
        self._session_id: int | None = None
        self._connected = False  # a usable session right now
        self._closed = False
        self._cluster_id = "twinbench"
        # --- metadata cache (only ever mutated on the loop) ---
        self._brokers: dict[int, BrokerInfo] = {}
        self._brokers_pzxid = -1
        self._controller_id = NO_LEADER
        self._topics_pzxid = -1
        self._assignments: dict[str, dict[int, tuple[int, ...]]] = {}
        self._assignment_mzxid: dict[str, int] = {}
        self._topic_configs: dict[str, dict[str, str]] = {}
        self._states: dict[TopicPartition, CachedState] = {}
        self._view = ClusterView((), NO_LEADER, {}, self._cluster_id)
        self._listeners: list[Callable[[ClusterView], None]] = []
        self._waiters: list[tuple[Callable[[ClusterView], bool], asyncio.Future[None]]] = []
        # --- controller ---
        self._controller: Controller | None = None
        self._becoming_controller = False
        # --- what this broker registered, to restore after a session loss ---
        self._my_members: dict[str, dict[str, MemberRecord]] = {}
        self._my_owners: dict[str, dict[TopicPartition, str]] = {}
        # --- misc ---
        self._ensured: set[str] = set()
        self._pid_lock = asyncio.Lock()
        self._pid_next = 0
        self._pid_end = -1  # inclusive; next < end+1 means the block has ids left
        self._tasks: set[asyncio.Task[Any]] = set()
        self._reconnect_lock = asyncio.Lock()
        self._stats: dict[str, float] = {
            "zk_session_suspended": 0,
            "zk_session_lost": 0,
            "zk_reconnects": 0,
            "controller_elections_won": 0,
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
        return self._controller is not None

    @property
    def connected(self) -> bool:
        return self._connected

    async def start(self, me: BrokerInfo) -> None:
        if me.node_id != self._node_id:
            raise ValueError(f"BrokerInfo node_id {me.node_id} != coordinator {self._node_id}")
        if self._client is not None:
            raise RuntimeError("ZkCoordinator.start() called twice")
        self._me = me
        loop = asyncio.get_running_loop()
        cfg = self.config
        self._client = KazooClient(
            hosts=cfg.connect,
            timeout=cfg.session_timeout_ms / 1000,
            # Retry connecting forever, but never back off beyond reconnect_max_delay_ms.
            connection_retry=KazooRetry(
                max_tries=-1,
                delay=0.05,
                backoff=2,
                max_jitter=0.05,
                max_delay=cfg.reconnect_max_delay_ms / 1000,
            ),
        )
        self._bridge = KazooBridge(self._client, loop, cfg.request_timeout_ms / 1000)
        try:
            await self._bridge.run_blocking(self._client.start, cfg.connection_timeout_ms / 1000)
        except KazooTimeoutError:
            self._client = None
            raise ZooKeeperUnreachable(
                f"broker {self._node_id}: cannot reach ZooKeeper at {cfg.connect} within "
                f"{cfg.connection_timeout_ms} ms; is it running? (`twinbench` starts one "
                "itself; otherwise pass --zookeeper HOST:PORT of a running server)"
            ) from None
        self._session_id = self._client.client_id[0] if self._client.client_id else None
        self._bridge.add_state_listener(self._on_session_state)
        try:
            if cfg.data_path == "direct":
                self._direct = DirectSession(
                    cfg.endpoints(),
                    session_timeout_ms=cfg.session_timeout_ms,
                    connect_timeout_s=cfg.connection_timeout_ms / 1000,
                    request_timeout_s=cfg.request_timeout_ms / 1000,
                    reconnect_max_delay_s=cfg.reconnect_max_delay_ms / 1000,
                )
                await self._direct.start()
            for root in (self.paths.root, *self.paths.roots):
                await self.ensure_path(root)
            await self._load_cluster_id()
            await self._register_broker()
            self._connected = True
            await self.resync()
        except BaseException:
            await self.close()
            raise

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._connected = False
        await self._resign("closing")
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(BaseException):
                await task
        for _, fut in self._waiters:
            if not fut.done():
                fut.cancel()
        self._waiters.clear()
        direct, self._direct = self._direct, None
        if direct is not None:
            await direct.close()
        client, self._client = self._client, None
        if client is not None and self._bridge is not None:
            # stop() ends the session: ZooKeeper deletes our ephemerals at once, so the others
            # see this broker leave now rather than a session timeout later.
            with contextlib.suppress(Exception):
                await self._bridge.run_blocking(client.stop)
            with contextlib.suppress(Exception):
                await self._bridge.run_blocking(client.close)

    # ============================================================================================
    # metadata: cache, view, subscription
    # ============================================================================================
    def cluster(self) -> ClusterView:
        return self._view

    def subscribe(self, listener: Callable[[ClusterView], None]) -> None:
        self._listeners.append(listener)

    # --- ControllerContext ------------------------------------------------------------------
    def live_broker_ids(self) -> frozenset[int]:
        return frozenset(self._brokers)

    def assignments(self) -> Mapping[str, Mapping[int, tuple[int, ...]]]:
        return self._assignments

    def cached_state(self, tp: TopicPartition) -> CachedState | None:
        return self._states.get(tp)

    def apply_state(self, tp: TopicPartition, entry: CachedState) -> None:
        old = self._states.get(tp)
        if old is not None and entry.mzxid != -1 and entry.mzxid < old.mzxid:
            return  # a late answer to an older read
        if old == entry:
            return
        self._states[tp] = entry
        self._changed()

    def controller_fenced(self, controller: Controller) -> None:
        if self._controller is controller:
            self._controller = None

    def _changed(self) -> None:
        """Rebuild the snapshot and tell listeners, waiters and the controller."""
        topics: dict[str, TopicInfo] = {}
        for name, assignment in self._assignments.items():
            parts = []
            for p in range(max(assignment, default=-1) + 1):
                replicas = assignment.get(p, ())
                cached = self._states.get(TopicPartition(name, p))
                if cached is None:
                    parts.append(PartitionState(name, p, NO_LEADER, -1, replicas, ()))
                else:
                    s = cached.state
                    parts.append(PartitionState(name, p, s.leader, s.leader_epoch, replicas, s.isr))
            topics[name] = TopicInfo(name, tuple(parts), dict(self._topic_configs.get(name, {})))
        brokers = tuple(self._brokers[i] for i in sorted(self._brokers))
        self._view = ClusterView(brokers, self._controller_id, topics, self._cluster_id)
        for listener in list(self._listeners):
            try:
                listener(self._view)
            except Exception:
                log.exception("cluster listener failed")
        for entry in list(self._waiters):
            predicate, fut = entry
            if fut.done():
                self._waiters.remove(entry)
            elif predicate(self._view):
                fut.set_result(None)
                self._waiters.remove(entry)
        if self._controller is not None:
            self._controller.notify()

    async def _wait_for(self, predicate: Callable[[ClusterView], bool], timeout_s: float) -> bool:
        if predicate(self._view):
            return True
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append((predicate, fut))
        try:
            await asyncio.wait_for(fut, timeout_s)
            return True
        except TimeoutError:
            return False

    # --- watch plumbing -----------------------------------------------------------------------
    @property
    def bridge(self) -> KazooBridge:
        if self._bridge is None:
            raise CoordinatorNotAvailable("the ZooKeeper coordinator is not started")
        return self._bridge

    def _spawn(self, coro: Coroutine[Any, Any, Any], what: str) -> None:
        if self._closed:
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
        if isinstance(exc, _UNAVAILABLE):
            # ZooKeeper went away mid-read; the resync after reconnection repairs the cache.
            log.info("%s: ZooKeeper unavailable (%s)", task.get_name(), type(exc).__name__)
        else:
            log.error("%s failed", task.get_name(), exc_info=exc)

    def _on_watch(self, event: WatchedEvent) -> None:
        """Every watch this coordinator arms lands here (on the loop), dispatched by path."""
        path = event.path
        p = self.paths
        if path == p.broker_ids:
            self._spawn(self._refresh_brokers(), "zk-refresh-brokers")
        elif path == p.controller:
            self._spawn(self._refresh_controller(), "zk-refresh-controller")
        elif path == p.topics:
            self._spawn(self._refresh_topics(all_topics=False), "zk-refresh-topics")
        elif (tp := p.match_state(path)) is not None:
            self._spawn(self._refresh_state(tp), f"zk-refresh-state-{tp.topic}-{tp.partition}")
        elif (topic := p.match_topic(path)) is not None:
            self._spawn(self._refresh_topic(topic), f"zk-refresh-topic-{topic}")

    @property
    def _watch(self) -> Callable[[WatchedEvent], None]:
        return self.bridge.watcher(self._on_watch)

    async def resync(self) -> None:
        """Re-read brokers, controller, topics and states, re-arming every watch."""
        await asyncio.gather(
            self._refresh_brokers(),
            self._refresh_controller(),
            self._refresh_topics(all_topics=True),
        )

    # --- readers --------------------------------------------------------------------------------
    async def _refresh_brokers(self) -> None:
        b = self.bridge
        children, stat = await b.call(
            "get_children", self.paths.broker_ids, watch=self._watch, include_data=True
        )

        async def one(child: str) -> BrokerInfo | None:
            try:
                data, _ = await b.call("get", self.paths.broker(int(child)))
            except NoNodeError:
                return None  # left between the two reads; the next child event says so
            return fmt.decode_broker(int(child), data)

        infos = await asyncio.gather(*(one(c) for c in children if c.isdigit()))
        if stat.pzxid < self._brokers_pzxid:
            return
        self._brokers_pzxid = stat.pzxid
        brokers = {i.node_id: i for i in infos if i is not None}
        if brokers != self._brokers:
            self._brokers = brokers
            self._changed()

    async def _refresh_controller(self) -> None:
        b = self.bridge
        stat = await b.call("exists", self.paths.controller, watch=self._watch)
        if stat is None:
            self._set_controller_id(NO_LEADER)
            await self._elect()
            return
        try:
            data, stat = await b.call("get", self.paths.controller)
        except NoNodeError:
            return  # deleted between the calls; the exists watch fires for that
        cid = fmt.decode_controller(data)
        self._set_controller_id(cid)
        if cid == self._node_id and stat.ephemeralOwner == self._session_id:
            # Ours (just won, or kept through a suspension): take office if not yet in it.
            await self._become_controller()
        elif self._controller is not None:
            await self._resign(f"broker {cid} is the controller")

    def _set_controller_id(self, cid: int) -> None:
        if cid != self._controller_id:
            self._controller_id = cid
            self._changed()

    async def _refresh_topics(self, *, all_topics: bool) -> None:
        children, stat = await self.bridge.call(
            "get_children", self.paths.topics, watch=self._watch, include_data=True
        )
        if stat.pzxid < self._topics_pzxid:
            return
        self._topics_pzxid = stat.pzxid
        names = set(children)
        gone = set(self._assignments) - names
        for topic in gone:
            self._assignments.pop(topic, None)
            self._topic_configs.pop(topic, None)
            for tp in [tp for tp in self._states if tp.topic == topic]:
                del self._states[tp]
        todo = names if all_topics else names - set(self._assignments)
        await asyncio.gather(*(self._refresh_topic(t) for t in sorted(todo)))
        if gone:
            self._changed()

    async def _refresh_topic(self, topic: str) -> None:
        b = self.bridge
        try:
            data, stat = await b.call("get", self.paths.topic(topic), watch=self._watch)
        except NoNodeError:
            return
        try:
            cfg_data, _ = await b.call("get", self.paths.topic_config(topic))
            configs = fmt.decode_topic_config(cfg_data)
        except NoNodeError:
            configs = {}
        if stat.mzxid < self._assignment_mzxid.get(topic, -1):
            return
        self._assignment_mzxid[topic] = stat.mzxid
        self._assignments[topic] = dict(fmt.decode_assignment(data))
        self._topic_configs[topic] = configs
        self._changed()
        await asyncio.gather(
            *(self._refresh_state(TopicPartition(topic, p)) for p in self._assignments[topic])
        )

    async def _refresh_state(self, tp: TopicPartition) -> None:
        b = self.bridge
        path = self.paths.partition_state(tp.topic, tp.partition)
        while True:
            try:
                data, stat = await b.call("get", path, watch=self._watch)
            except NoNodeError:
                # Not written by the controller yet: an exists watch fires on its creation.
                if await b.call("exists", path, watch=self._watch) is None:
                    return
                continue
            self.apply_state(tp, CachedState(LeaderAndIsr.decode(data), stat.version, stat.mzxid))
            return

    # --- election -------------------------------------------------------------------------------
    async def _elect(self) -> None:
        if not self._connected:
            return
        # NodeExists: somebody else won; _refresh_controller reads who.
        with contextlib.suppress(NodeExistsError):
            await self.bridge.call(
                "create",
                self.paths.controller,
                fmt.encode_controller(self._node_id),
                ephemeral=True,
            )
        await self._refresh_controller()

    async def _become_controller(self) -> None:
        if self._controller is not None or self._becoming_controller or not self._connected:
            return
        self._becoming_controller = True
        try:
            epoch, version = await self._bump_controller_epoch()
            if not self._connected or self._closed:
                return
            self._controller = Controller(self, self.bridge, self.paths, epoch, version)
            self._stats["controller_elections_won"] += 1
            log.info("broker %d is the controller (epoch %d)", self._node_id, epoch)
            self._controller.start()
        finally:
            self._becoming_controller = False

    async def _bump_controller_epoch(self) -> tuple[int, int]:
        """Compare-and-set ``/controller_epoch`` to previous + 1; returns (epoch, zk version)."""
        b = self.bridge
        path = self.paths.controller_epoch
        while True:
            try:
                data, stat = await b.call("get", path)
            except NoNodeError:
                try:
                    await b.call("create", path, fmt.encode_epoch(1))
                    return 1, 0
                except NodeExistsError:
                    continue
            epoch = fmt.decode_epoch(data) + 1
            try:
                new = await b.call("set", path, fmt.encode_epoch(epoch), version=stat.version)
                return epoch, new.version
            except BadVersionError:
                continue

    async def _resign(self, why: str) -> None:
        controller, self._controller = self._controller, None
        if controller is not None:
            log.info("broker %d stops acting as controller: %s", self._node_id, why)
            await controller.stop()

    # --- session --------------------------------------------------------------------------------
    def _on_session_state(self, state: KazooState) -> None:
        if self._closed:
            return
        if state == KazooState.SUSPENDED:
            self._stats["zk_session_suspended"] += 1
            self._connected = False
            self._spawn(self._resign("ZooKeeper connection suspended"), "zk-resign")
        elif state == KazooState.LOST:
            self._stats["zk_session_lost"] += 1
            self._connected = False
            self._spawn(self._resign("ZooKeeper session lost"), "zk-resign")
        elif state == KazooState.CONNECTED:
            self._spawn(self._on_reconnected(), "zk-reconnected")

    async def _on_reconnected(self) -> None:
        async with self._reconnect_lock:
            client = self._client
            if client is None or self._closed or not client.connected:
                return
            self._stats["zk_reconnects"] += 1
            session = client.client_id[0] if client.client_id else None
            if session != self._session_id:
                # A new session: every ephemeral we owned is gone. Re-register before we
                # tell the broker core it may use the coordinator again. The session id is
                # recorded only once all of it succeeded, so a failure here is retried on the
                # next CONNECTED instead of being forgotten.
                log.warning("broker %d: new ZooKeeper session, re-registering", self._node_id)
                await self._register_broker(session)
                await self._restore_group_registrations()
                self._session_id = session
            self._connected = True
            await self.resync()

    async def _register_broker(self, session: int | None = None) -> None:
        """Create ephemeral /brokers/ids/<id>, waiting out a previous session's leftover."""
        session = self._session_id if session is None else session
        assert self._me is not None
        b = self.bridge
        path = self.paths.broker(self._node_id)
        data = fmt.encode_broker(self._me)
        # An old session of ours (a crashed process, or this one before LOST) may still hold
        # the node until ZooKeeper expires it: wait that long, like Kafka does, then give up.
        deadline = time.monotonic() + 2 * self.config.session_timeout_ms / 1000
        delay = 0.05
        while True:
            try:
                await b.call("create", path, data, ephemeral=True)
                return
            except NodeExistsError:
                stat = await b.call("exists", path)
                if stat is not None and stat.ephemeralOwner == session:
                    return
            except (BridgeTimeout, ConnectionLoss):
                # A slow or briefly unreachable ZooKeeper (busy expiring sessions, a loaded
                # host): ask again until the deadline rather than fail the broker's start.
                pass
            if time.monotonic() > deadline:
                raise UserError(
                    f"broker id {self._node_id} is registered in ZooKeeper by another live "
                    "session: is a second broker running with the same node id?"
                )
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.5)

    async def _load_cluster_id(self) -> None:
        b = self.bridge
        try:
            data, _ = await b.call("get", self.paths.cluster_id)
        except NoNodeError:
            await self.ensure_path(self.paths.cluster_id.rsplit("/", 1)[0])
            new_id = uuid.uuid4().hex[:22]
            try:
                await b.call("create", self.paths.cluster_id, fmt.encode_cluster_id(new_id))
                data = fmt.encode_cluster_id(new_id)
            except NodeExistsError:
                data, _ = await b.call("get", self.paths.cluster_id)
        self._cluster_id = fmt.decode_cluster_id(data)
        self._changed()

    async def ensure_path(self, path: str) -> None:
        """Create a persistent path and its parents if missing (remembered once done)."""
        if path in self._ensured or path == "/":
            return
        try:
            await self.bridge.call("create", path, b"")
        except NodeExistsError:
            pass
        except NoNodeError:
            await self.ensure_path(path.rsplit("/", 1)[0] or "/")
            with contextlib.suppress(NodeExistsError):
                await self.bridge.call("create", path, b"")
        self._ensured.add(path)

    # ============================================================================================
    # metadata: per-request reads and topic creation
    # ============================================================================================
    async def partition_state(
        self, topic: str, partition: int, *, fresh: bool
    ) -> PartitionState | None:
        tp = TopicPartition(topic, partition)
        if fresh and self._connected:
            try:
                return await self._fresh_partition_state(tp)
            except _UNAVAILABLE:
                pass  # keep serving from the cache while ZooKeeper is away
        info = self._view.topics.get(topic)
        if info is None or not 0 <= partition < len(info.partitions):
            return None
        return info.partitions[partition]

    # --- the data path: the direct session when it is up, kazoo otherwise ---------------------
    async def _data(self, op: str, path: str, *args: bytes) -> Any:
        """A data-path ``get`` or ``set``: through the direct session when it is up, else
        kazoo. One the direct session loses mid-flight is asked again through kazoo; both are
        idempotent (a read, an unconditional setData of the same bytes)."""
        direct = self._direct
        if direct is not None and direct.connected:
            self.bridge.count(op, direct=True)
            with contextlib.suppress(ConnectionLoss):
                return await getattr(direct, op)(path, *args)
        return await self.bridge.call(op, path, *args)

    async def _fresh_partition_state(self, tp: TopicPartition) -> PartitionState | None:
        """The ``per_request`` policy: one getData on the state znode per produce/fetch."""
        try:
            data, stat = await self._data("get", self.paths.partition_state(tp.topic, tp.partition))
        except NoNodeError:
            data, stat = None, None
        replicas = self._assignments.get(tp.topic, {}).get(tp.partition)
        if replicas is None:
            try:
                adata, _ = await self._data("get", self.paths.topic(tp.topic))
            except NoNodeError:
                return None
            replicas = fmt.decode_assignment(adata).get(tp.partition)
            if replicas is None:
                return None
        if data is None or stat is None:
            return PartitionState(tp.topic, tp.partition, NO_LEADER, -1, replicas, ())
        cached = self._states.get(tp)
        if cached is not None and cached.mzxid == stat.mzxid:
            # The znode has not changed since we last decoded it (the usual case: one read per
            # request, one leader change per failure); its zxid says so, the JSON need not.
            state = cached.state
        else:
            state = LeaderAndIsr.decode(data)
            if tp.topic in self._assignments:
                self.apply_state(tp, CachedState(state, stat.version, stat.mzxid))
        return PartitionState(
            tp.topic, tp.partition, state.leader, state.leader_epoch, replicas, state.isr
        )

    async def create_topic(
        self,
        name: str,
        num_partitions: int,
        replication_factor: int,
        configs: Mapping[str, str] | None = None,
        *,
        auto: bool = False,
    ) -> TopicInfo:
        validate_topic_name(name)
        replication_factor = validate_replication_factor(replication_factor)
        if name in self._assignments:
            raise TopicAlreadyExists(f"topic {name!r} already exists")
        if not self._connected:
            raise NotController("ZooKeeper is unreachable; cannot create topics now")
        b = self.bridge
        # Like Kafka's AdminUtils, read the live brokers fresh rather than from the cache: a
        # broker that registered a moment ago must get its share of the partitions.
        try:
            live = await b.call("get_children", self.paths.broker_ids)
        except _UNAVAILABLE as exc:
            raise NotController(f"ZooKeeper unavailable: {exc}") from exc
        assignment = assign_replicas(
            num_partitions, replication_factor, [int(i) for i in live if i.isdigit()]
        )
        txn = b.transaction()
        # Kafka writes the config first, then the assignment; one multi makes it all-or-nothing.
        if configs:
            txn.create(self.paths.topic_config(name), fmt.encode_topic_config(dict(configs)))
        txn.create(self.paths.topic(name), fmt.encode_assignment(assignment))
        try:
            results = await b.commit(txn)
        except _UNAVAILABLE as exc:
            raise NotController(f"ZooKeeper unavailable: {exc}") from exc
        failed = [r for r in results if isinstance(r, Exception)]
        if failed:
            if isinstance(results[-1], NodeExistsError):
                raise TopicAlreadyExists(f"topic {name!r} already exists")
            if configs and isinstance(results[0], NodeExistsError):
                raise TopicAlreadyExists(f"topic {name!r} is being created (config exists)")
            raise NotController(f"creating {name!r} failed: {failed[0]!r}")

        def ready(view: ClusterView) -> bool:
            info = view.topics.get(name)
            return info is not None and all(p.leader != NO_LEADER for p in info.partitions)

        if not await self._wait_for(ready, self.config.create_topic_timeout_ms / 1000):
            raise RequestTimedOut(
                f"topic {name!r} was created but no leaders were elected within "
                f"{self.config.create_topic_timeout_ms} ms (is a controller running?)"
            )
        return self._view.topics[name]

    # ============================================================================================
    # groups
    # ============================================================================================
    def group_coordinator(self, group_id: str) -> BrokerInfo:
        brokers = self._view.brokers
        if not brokers:
            raise CoordinatorNotAvailable("no live brokers known")
        # crc32, not hash(): every broker must compute the same answer (str hashes are salted).
        return brokers[zlib.crc32(group_id.encode("utf-8")) % len(brokers)]

    def _require_session(self) -> KazooBridge:
        if not self._connected or self._closed:
            raise CoordinatorNotAvailable("ZooKeeper session is not connected")
        return self.bridge

    async def _group_op(self, coro: Awaitable[Any]) -> Any:
        try:
            return await coro
        except KafkaError:
            raise
        except _UNAVAILABLE as exc:
            raise CoordinatorNotAvailable(f"ZooKeeper: {type(exc).__name__}") from exc

    async def register_member(self, group_id: str, member: MemberRecord) -> None:
        self._require_session()
        await self._group_op(self._write_member(group_id, member))
        self._my_members.setdefault(group_id, {})[member.member_id] = member

    async def _write_member(self, group_id: str, member: MemberRecord) -> None:
        b = self.bridge
        path = self.paths.member(group_id, member.member_id)
        data = fmt.encode_member(member)
        await self.ensure_path(self.paths.member_ids(group_id))
        try:
            await b.call("create", path, data, ephemeral=True)
        except NodeExistsError:
            await b.call("set", path, data)

    async def unregister_member(self, group_id: str, member_id: str) -> None:
        b = self._require_session()
        self._my_members.get(group_id, {}).pop(member_id, None)

        async def delete() -> None:
            with contextlib.suppress(NoNodeError):  # absent members are fine
                await b.call("delete", self.paths.member(group_id, member_id))

        await self._group_op(delete())

    async def record_owners(self, group_id: str, owners: Mapping[TopicPartition, str]) -> None:
        self._require_session()
        owners = dict(owners)
        await self._group_op(self._write_owners(group_id, owners))
        self._my_owners[group_id] = owners

    async def _write_owners(self, group_id: str, owners: dict[TopicPartition, str]) -> None:
        """Replace the ownership registry in one multi: delete every current owner znode,
        create the new ones (ephemeral, so ownership dies with this broker's session)."""
        b = self.bridge
        existing: list[str] = []
        try:
            topics = await b.call("get_children", self.paths.owners(group_id))
        except NoNodeError:
            topics = []
        for topic in topics:
            with contextlib.suppress(NoNodeError):
                for p in await b.call("get_children", self.paths.owners_topic(group_id, topic)):
                    existing.append(f"{self.paths.owners_topic(group_id, topic)}/{p}")
        for topic in {tp.topic for tp in owners}:
            await self.ensure_path(self.paths.owners_topic(group_id, topic))
        if not existing and not owners:
            return
        txn = b.transaction()
        for path in existing:
            txn.delete(path)
        for tp, member in sorted(owners.items()):
            txn.create(self.paths.owner(group_id, tp), fmt.encode_owner(member), ephemeral=True)
        results = await b.commit(txn)
        failed = [r for r in results if isinstance(r, Exception)]
        if failed:
            # Another writer changed the registry between our read and the multi.
            raise CoordinatorNotAvailable(f"owner registry of {group_id!r} changed: {failed[0]!r}")

    async def commit_offsets(
        self, group_id: str, offsets: Mapping[TopicPartition, OffsetAndMetadata]
    ) -> None:
        self._require_session()
        if offsets:
            await self._group_op(
                asyncio.gather(
                    *(self._write_offset(group_id, tp, om) for tp, om in offsets.items())
                )
            )

    async def _write_offset(self, group_id: str, tp: TopicPartition, om: OffsetAndMetadata) -> None:
        """Kafka 0.8.2's updatePersistentPath: setData, and only when the node does not exist
        yet, create its parents and the node. Steady state: one request per partition."""
        b = self.bridge
        path = self.paths.offset(group_id, tp)
        data = fmt.encode_offset(om.offset, om.metadata, om.leader_epoch)
        try:
            await self._data("set", path, data)
        except NoNodeError:
            await self.ensure_path(self.paths.offsets_topic(group_id, tp.topic))
            try:
                await b.call("create", path, data)
            except NodeExistsError:
                await b.call("set", path, data)

    async def fetch_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition] | None
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        self._require_session()
        return await self._group_op(self._read_offsets(group_id, partitions))

    async def _read_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition] | None
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        b = self.bridge
        if partitions is None:
            wanted: list[TopicPartition] = []
            try:
                topics = await b.call("get_children", self.paths.offsets(group_id))
            except NoNodeError:
                topics = []
            for topic in topics:
                with contextlib.suppress(NoNodeError):
                    children = await b.call(
                        "get_children", self.paths.offsets_topic(group_id, topic)
                    )
                    wanted += [TopicPartition(topic, int(c)) for c in children if c.isdigit()]
        else:
            wanted = list(partitions)

        async def one(tp: TopicPartition) -> tuple[TopicPartition, OffsetAndMetadata] | None:
            try:
                data, _ = await self._data("get", self.paths.offset(group_id, tp))
            except NoNodeError:
                return None
            offset, metadata, epoch = fmt.decode_offset(data)
            return tp, OffsetAndMetadata(offset, metadata, epoch)

        found = await asyncio.gather(*(one(tp) for tp in wanted))
        return dict(r for r in found if r is not None)

    async def _restore_group_registrations(self) -> None:
        """After a session loss, re-create the ephemerals this broker had registered."""
        for group_id, members in list(self._my_members.items()):
            for member in list(members.values()):
                await self._write_member(group_id, member)
        for group_id, owners in list(self._my_owners.items()):
            await self._write_owners(group_id, owners)

    # ============================================================================================
    # misc
    # ============================================================================================
    async def allocate_producer_id(self) -> int:
        self._require_session()
        async with self._pid_lock:
            if self._pid_next > self._pid_end:
                await self._group_op(self._claim_producer_id_block())
            pid = self._pid_next
            self._pid_next += 1
            return pid

    async def _claim_producer_id_block(self) -> None:
        """Kafka's ProducerIdManager: compare-and-set /latest_producer_id_block to the next
        block; a lost race (BadVersion / NodeExists) just retries with the newer value."""
        b = self.bridge
        path = self.paths.producer_id_block
        size = self.config.producer_id_block_size
        while True:
            try:
                data, stat = await b.call("get", path)
            except NoNodeError:
                try:
                    await b.call(
                        "create", path, fmt.encode_producer_id_block(self._node_id, 0, size - 1)
                    )
                except NodeExistsError:
                    continue
                self._pid_next, self._pid_end = 0, size - 1
                return
            _, end = fmt.decode_producer_id_block(data)
            start = end + 1
            block = fmt.encode_producer_id_block(self._node_id, start, start + size - 1)
            try:
                await b.call("set", path, block, version=stat.version)
            except BadVersionError:
                continue
            self._pid_next, self._pid_end = start, start + size - 1
            return

    def counters(self) -> ZkCounters:
        out = dict(self._stats)
        if self._bridge is not None:
            out |= self._bridge.counters()
        if self._direct is not None:
            out |= self._direct.stats
        snapshot = ZkCounters.of(out, is_controller=1.0 if self._controller is not None else 0.0)
        snapshot.coordination_ops = snapshot.zk_requests
        return snapshot
