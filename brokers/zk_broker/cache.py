"""MetadataCache: the zk broker's watch-fed copy of the cluster's metadata.

What it mirrors (znode formats in ``paths.py``): the live brokers (``/brokers/ids``), the
controller's id (``/controller``), each topic's assignment and configs (``/brokers/topics/<t>``,
``/config/topics/<t>``, each with a data watch, so altered configs reach every broker) and each
partition's state (``.../partitions/<p>/state``: leader, epoch, isr). From those it builds
the ``ClusterView`` snapshot the broker core reads on every request.

A watch event never carries data, so each one triggers a re-read that also re-arms the watch;
reads carry the znode's zxid and a late, older read never overwrites a newer one. After any
reconnection the coordinator calls ``resync()``, which re-reads the whole tree (watches armed by
reads that failed during the outage would otherwise be missing).

A topic's deletion is an event here (``on_topic_deleted``), and only on positive evidence: a
successful read of ``/brokers/topics`` without the topic, or a topic znode created after the one
we held (a new topic of the name: the old one was deleted meanwhile, its ``czxid`` says so).
The listeners run before the view without the topic is built, so no request sees the new
topic while the old one's data is still in place.

The cache only reads. What the controller's id means for this broker (run an election, take
office, resign) is the election's business (``election.py``), told through ``on_controller``;
the controller (``controller.py``) and its deletion duty see the cache as the
``ControllerContext`` defined here.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from kazoo.exceptions import NodeExistsError, NoNodeError
from kazoo.protocol.states import WatchedEvent

from brokers.core.coordinator import (
    NO_LEADER,
    BrokerInfo,
    ClusterView,
    PartitionState,
    TopicInfo,
    TopicPartition,
)
from brokers.zk_broker import paths as fmt
from brokers.zk_broker.paths import LeaderAndIsr, ZkPaths
from brokers.zk_broker.session import UNAVAILABLE, ZkSession

log = logging.getLogger(__name__)

# Runs a coroutine as a background task the coordinator owns (cancelled when it closes).
Spawn = Callable[[Coroutine[Any, Any, Any], str], None]
# Told what /controller holds after every read of it: None when the znode is absent, else
# (controller id, session id owning the ephemeral).
OnController = Callable[[tuple[int, int] | None], Awaitable[None]]


# --- the cache as the controller sees it ---------------------------------------------------------
# Defined here, below the controller and its deletion duty, which both read the cache through it.
@dataclass(frozen=True, slots=True)
class CachedState:
    state: LeaderAndIsr
    version: int  # znode version, for compare-and-set writes
    mzxid: int  # last-modified zxid, to discard stale reads that arrive late


class ControllerContext(Protocol):
    """The coordinator's metadata cache (``MetadataCache``), as the controller sees it."""

    def live_broker_ids(self) -> frozenset[int]: ...

    def assignments(self) -> Mapping[str, Mapping[int, tuple[int, ...]]]: ...

    def topic_czxid(self, name: str) -> int | None: ...

    def cached_state(self, tp: TopicPartition) -> CachedState | None: ...

    def apply_state(self, tp: TopicPartition, entry: CachedState) -> None: ...

    async def resync(self) -> None: ...

    async def ensure_path(self, path: str) -> None: ...


class MetadataCache:
    """The watch-fed tables and the view built from them; mutated only on the loop."""

    def __init__(
        self,
        session: ZkSession,
        paths: ZkPaths,
        *,
        spawn: Spawn,
        on_controller: OnController,
        on_change: Callable[[], None],
    ) -> None:
        self._session = session
        self._paths = paths
        self._spawn = spawn
        self._on_controller = on_controller
        # Called after every change, once listeners and waiters have seen the new view.
        self._on_change = on_change
        self._cluster_id = "twinbench"
        self._brokers: dict[int, BrokerInfo] = {}
        self._brokers_pzxid = -1
        self._controller_id = NO_LEADER
        self._topics_pzxid = -1
        self._assignments: dict[str, dict[int, tuple[int, ...]]] = {}
        self._assignment_mzxid: dict[str, int] = {}
        self._topic_configs: dict[str, dict[str, str]] = {}
        self._config_mzxid: dict[str, int] = {}  # of the last config read applied, per topic
        self._states: dict[TopicPartition, CachedState] = {}
        self._topic_czxid: dict[str, int] = {}  # which znode of the name we hold (creation)
        self._deletion_listeners: list[Callable[[str], None]] = []
        self._view = ClusterView((), NO_LEADER, {}, self._cluster_id)
        self._listeners: list[Callable[[ClusterView], None]] = []
        self._waiters: list[tuple[Callable[[ClusterView], bool], asyncio.Future[None]]] = []

    # --- the view ------------------------------------------------------------------------------
    @property
    def view(self) -> ClusterView:
        return self._view

    def has_topic(self, name: str) -> bool:
        return name in self._assignments

    def subscribe(self, listener: Callable[[ClusterView], None]) -> None:
        self._listeners.append(listener)

    def topic_czxid(self, name: str) -> int | None:
        """Which znode of the name the view shows (its creation zxid), None if none."""
        return self._topic_czxid.get(name)

    def on_topic_deleted(self, listener: Callable[[str], None]) -> None:
        self._deletion_listeners.append(listener)

    def _forget_topic(self, topic: str) -> None:
        """The topic we held was deleted: drop it and tell the deletion listeners."""
        self._assignments.pop(topic, None)
        self._assignment_mzxid.pop(topic, None)
        self._topic_configs.pop(topic, None)
        self._config_mzxid.pop(topic, None)
        self._topic_czxid.pop(topic, None)
        for tp in [tp for tp in self._states if tp.topic == topic]:
            del self._states[tp]
        self._session.forget_paths(self._paths.topic(topic))
        for listener in list(self._deletion_listeners):
            try:
                listener(topic)
            except Exception:
                log.exception("topic deletion listener failed")

    async def wait_for(self, predicate: Callable[[ClusterView], bool], timeout_s: float) -> bool:
        """True once the view satisfies ``predicate``; False after ``timeout_s``."""
        if predicate(self._view):
            return True
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append((predicate, fut))
        try:
            await asyncio.wait_for(fut, timeout_s)
            return True
        except TimeoutError:
            return False

    def cancel_waiters(self) -> None:
        for _, fut in self._waiters:
            if not fut.done():
                fut.cancel()
        self._waiters.clear()

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
        self._on_change()

    # --- ControllerContext ---------------------------------------------------------------------
    def live_broker_ids(self) -> frozenset[int]:
        return frozenset(self._brokers)

    @property
    def brokers_epoch(self) -> int:
        """The pzxid of ``/brokers/ids`` as last read: it changes with every registration and
        departure (-1 before the first read)."""
        return self._brokers_pzxid

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

    async def ensure_path(self, path: str) -> None:
        await self._session.ensure_path(path)

    # --- watches -------------------------------------------------------------------------------
    def _on_watch(self, event: WatchedEvent) -> None:
        """Every watch the cache arms lands here (on the loop), dispatched by path."""
        path = event.path
        p = self._paths
        if path is None:
            # A session event (connection state) on a watch, not a change of a znode: the
            # session's own handling re-syncs after a reconnect (resync), nothing to refresh.
            return
        if path == p.broker_ids:
            self._spawn(self._refresh_brokers(), "zk-refresh-brokers")
        elif path == p.controller:
            self._spawn(self.refresh_controller(), "zk-refresh-controller")
        elif path == p.topics:
            self._spawn(self._refresh_topics(all_topics=False), "zk-refresh-topics")
        elif (tp := p.match_state(path)) is not None:
            self._spawn(self._refresh_state(tp), f"zk-refresh-state-{tp.topic}-{tp.partition}")
        elif (topic := p.match_topic(path)) is not None:
            self._spawn(self._refresh_topic(topic), f"zk-refresh-topic-{topic}")
        elif (topic := p.match_topic_config(path)) is not None:
            self._spawn(self._refresh_config(topic), f"zk-refresh-config-{topic}")

    @property
    def _watch(self) -> Callable[[WatchedEvent], None]:
        return self._session.bridge.watcher(self._on_watch)

    async def resync(self) -> None:
        """Re-read brokers, controller, topics and states, re-arming every watch."""
        await asyncio.gather(
            self._refresh_brokers(),
            self.refresh_controller(),
            self._refresh_topics(all_topics=True),
        )

    # --- readers -------------------------------------------------------------------------------
    async def load_cluster_id(self) -> None:
        """Read the cluster id, or create one if this is the cluster's first broker."""
        b = self._session.bridge
        path = self._paths.cluster_id
        try:
            data, _ = await b.call("get", path)
        except NoNodeError:
            await self._session.ensure_path(path.rsplit("/", 1)[0])
            new_id = uuid.uuid4().hex[:22]
            try:
                await b.call("create", path, fmt.encode_cluster_id(new_id))
                data = fmt.encode_cluster_id(new_id)
            except NodeExistsError:
                data, _ = await b.call("get", path)
        self._cluster_id = fmt.decode_cluster_id(data)
        self._changed()

    async def _refresh_brokers(self) -> None:
        b = self._session.bridge
        children, stat = await b.call(
            "get_children", self._paths.broker_ids, watch=self._watch, include_data=True
        )

        async def one(child: str) -> BrokerInfo | None:
            try:
                data, _ = await b.call("get", self._paths.broker(int(child)))
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

    async def refresh_controller(self) -> None:
        """Read /controller (re-arming its watch) and tell ``on_controller`` what it holds."""
        b = self._session.bridge
        stat = await b.call("exists", self._paths.controller, watch=self._watch)
        if stat is None:
            self._set_controller_id(NO_LEADER)
            await self._on_controller(None)
            return
        try:
            data, stat = await b.call("get", self._paths.controller)
        except NoNodeError:
            return  # deleted between the calls; the exists watch fires for that
        cid = fmt.decode_controller(data)
        self._set_controller_id(cid)
        await self._on_controller((cid, stat.ephemeralOwner))

    def _set_controller_id(self, cid: int) -> None:
        if cid != self._controller_id:
            self._controller_id = cid
            self._changed()

    async def _refresh_topics(self, *, all_topics: bool) -> None:
        children, stat = await self._session.bridge.call(
            "get_children", self._paths.topics, watch=self._watch, include_data=True
        )
        if stat.pzxid < self._topics_pzxid:
            return
        self._topics_pzxid = stat.pzxid
        names = set(children)
        gone = set(self._assignments) - names
        for topic in sorted(gone):
            self._forget_topic(topic)
        todo = names if all_topics else names - set(self._assignments)
        await asyncio.gather(*(self._refresh_topic(t) for t in sorted(todo)))
        if gone:
            self._changed()

    async def _refresh_topic(self, topic: str) -> None:
        b = self._session.bridge
        try:
            data, stat = await b.call("get", self._paths.topic(topic), watch=self._watch)
        except NoNodeError:
            return
        configs = await self._read_config(topic)
        held = self._topic_czxid.get(topic)
        if held is not None and stat.czxid < held:
            return  # a late read of a topic since deleted
        if held is not None and stat.czxid != held:
            self._forget_topic(topic)  # deleted and created again since we read it
            configs = await self._read_config(topic)
        if stat.mzxid < self._assignment_mzxid.get(topic, -1):
            return
        self._topic_czxid[topic] = stat.czxid
        self._assignment_mzxid[topic] = stat.mzxid
        self._assignments[topic] = dict(fmt.decode_assignment(data))
        if configs is not None:
            self._topic_configs[topic] = configs[0]
            self._config_mzxid[topic] = configs[1]
        self._changed()
        await asyncio.gather(
            *(self._refresh_state(TopicPartition(topic, p)) for p in self._assignments[topic])
        )

    async def _read_config(self, topic: str) -> tuple[dict[str, str], int] | None:
        """(configs, mzxid) of ``/config/topics/<t>``, re-arming its watch: ({}, -1) while it
        is absent, and then one ``exists`` (whose watch fires on its creation) is all it costs;
        None if an equal or newer read came first."""
        b = self._session.bridge
        path = self._paths.topic_config(topic)
        configs: dict[str, str] = {}
        mzxid = -1
        while await b.call("exists", path, watch=self._watch) is not None:
            try:
                data, stat = await b.call("get", path, watch=self._watch)
            except NoNodeError:
                continue  # deleted between the calls: ask again
            configs, mzxid = fmt.decode_topic_config(data), stat.mzxid
            break
        if mzxid != -1 and mzxid < self._config_mzxid.get(topic, -1):
            return None
        return configs, mzxid

    async def _refresh_config(self, topic: str) -> None:
        got = await self._read_config(topic)
        if got is None or topic not in self._assignments:
            return
        if got[0] != self._topic_configs.get(topic):
            self._topic_configs[topic], self._config_mzxid[topic] = got
            self._changed()

    async def _refresh_state(self, tp: TopicPartition) -> None:
        b = self._session.bridge
        path = self._paths.partition_state(tp.topic, tp.partition)
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

    # --- per-request reads ---------------------------------------------------------------------
    async def partition_state(self, tp: TopicPartition, *, fresh: bool) -> PartitionState | None:
        """``fresh``: read the state znode now (while the session is usable); otherwise, or
        while ZooKeeper is away, answer from the view."""
        if fresh and self._session.connected:
            try:
                return await self._fresh_partition_state(tp)
            except UNAVAILABLE:
                pass  # keep serving from the cache while ZooKeeper is away
        return self._view.partition(tp.topic, tp.partition)

    async def _fresh_partition_state(self, tp: TopicPartition) -> PartitionState | None:
        """The ``per_request`` policy: one getData on the state znode per produce/fetch."""
        data_path = self._session.data
        try:
            data, stat = await data_path("get", self._paths.partition_state(tp.topic, tp.partition))
        except NoNodeError:
            data, stat = None, None
        replicas = self._assignments.get(tp.topic, {}).get(tp.partition)
        if replicas is None:
            try:
                adata, _ = await data_path("get", self._paths.topic(tp.topic))
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
