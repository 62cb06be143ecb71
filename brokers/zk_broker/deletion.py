"""Topic deletion on the zk broker: Kafka 2.8's flow through ``/admin/delete_topics``.

The broker a client asks (``request_deletion``) only writes the marker
``/admin/delete_topics/<t>`` (Kafka's AdminZkClient.deleteTopic) and waits, bounded, until its
own view no longer shows the topic. The controller watches the markers (``TopicDeletions``,
Kafka's TopicDeletionManager) and, for each topic marked:

* leaves it alone while a broker holding one of its replicas is down (Kafka calls the topic
  "ineligible"): that broker could not drop its partitions now and would serve them again
  when it returns; the deletion resumes when the broker is back (a broker change marks the
  controller dirty), and a DeleteTopics waiting meanwhile times out with REQUEST_TIMED_OUT;
* otherwise removes the topic's znodes (partition states, assignment, configs) in one multi
  fenced by the controller epoch, like every controller write; every broker's cache then sees
  the topic gone from ``/brokers/topics`` and its deletion listeners drop the partitions'
  files (``cache.py``: a deletion event on positive evidence only);
* removes the offsets committed for the topic (``/consumers/<g>/offsets/<t>`` of every group),
  then the marker.

Kafka's controller also waits for each replica's StopReplica acknowledgement before it removes
the znodes; brokers here have no controller channel, so each drops its partitions when it sees
the znodes go. So a broker whose cache never saw the topic go keeps the partitions' files: one
that crashes between the znodes' removal and its cache seeing it, or one that was down when the
deletion was asked and whose first read of ``/brokers/topics`` after it registered again comes
after the controller (waiting for exactly that registration) removed the topic. Stray files
are never served, except as a new topic of the same name created before the broker deletes
them (Kafka 2.8 closes this with StopReplica acknowledgements and topic ids in
``partition.metadata``; neither exists here yet).
While a topic is marked, its partitions get no leader changes and a creation of its name fails
with TOPIC_ALREADY_EXISTS, as in Kafka.

The controller reads the markers only when their watch fires (and once per election), so a
cluster that deletes nothing pays nothing in the steady state; ``/admin/delete_topics`` itself
is created by the first deletion.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable

from kazoo.exceptions import (
    BadVersionError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    RolledBackError,
)
from kazoo.protocol.states import WatchedEvent

from brokers.core.errors import NotController, RequestTimedOut, UnknownTopicOrPartition
from brokers.zk_broker import paths as fmt
from brokers.zk_broker.bridge import KazooBridge
from brokers.zk_broker.cache import ControllerContext, MetadataCache
from brokers.zk_broker.paths import ZkPaths
from brokers.zk_broker.session import UNAVAILABLE, ZkSession

log = logging.getLogger(__name__)



class _Fenced(Exception):
    """The controller-epoch check of our multi failed: a newer controller exists."""


async def request_deletion(
    session: ZkSession, paths: ZkPaths, cache: MetadataCache, name: str, timeout_ms: int
) -> None:
    """Mark ``name`` for deletion and wait until this broker's view no longer shows it."""
    if not session.connected:
        raise NotController("ZooKeeper is unreachable; cannot delete topics now")
    b = session.bridge
    try:
        stat = await b.call("exists", paths.topic(name))
        if stat is None:
            raise UnknownTopicOrPartition(f"unknown topic {name!r}")
        # Already marked: wait for that deletion, as Kafka does.
        with contextlib.suppress(NodeExistsError):
            await b.call("create", paths.delete_topic(name), fmt.encode_marker(stat.czxid),
                         makepath=True)
    except UNAVAILABLE as exc:
        raise NotController(f"ZooKeeper unavailable: {exc}") from exc
    if not await cache.wait_for(lambda view: name not in view.topics
                                or cache.topic_czxid(name) != stat.czxid, timeout_ms / 1000):
        raise RequestTimedOut(f"topic {name!r} is marked for deletion but was not deleted within "
                              f"{timeout_ms} ms (is a broker holding one of its replicas down?)")


class TopicDeletions:
    """The controller's deletion duty; one per controller term."""

    def __init__(self, bridge: KazooBridge, paths: ZkPaths, notify: Callable[[], None]) -> None:
        self._bridge = bridge
        self._paths = paths
        # Marks the controller dirty: a marker appeared or went.
        self._notify = notify
        self._marked: set[str] = set()
        self._stale = True  # the markers must be read (first pass, or their watch fired)
        # Topics whose znodes we removed while the cache may still show them (by the czxid
        # of the removed znode): never give their partitions state again (that would
        # re-create the topic's path); a new topic of the name is not blocked.
        self._removed: dict[str, int | None] = {}
        self.deleted = 0  # topics deleted while in office (for logs)

    def _on_watch(self, event: WatchedEvent) -> None:
        self._stale = True
        self._notify()

    def blocked(self, ctx: ControllerContext) -> set[str]:
        """Topics the partition reconciliation must leave alone."""
        self._removed = {t: z for t, z in self._removed.items()
                         if t in ctx.assignments() and ctx.topic_czxid(t) == z}
        return self._marked | set(self._removed)

    async def run(self, ctx: ControllerContext, fence_version: int) -> bool:
        """Delete every eligible marked topic; False when a newer controller fenced us."""
        if self._stale:
            self._stale = False
            self._marked = set(await self._read_markers())
        live = ctx.live_broker_ids()
        for topic in sorted(self._marked):
            assignment = ctx.assignments().get(topic)
            try:
                data, _ = await self._bridge.call("get", self._paths.delete_topic(topic))
            except NoNodeError:
                self._marked.discard(topic)
                continue
            if assignment is not None:
                replicas = {b for reps in assignment.values() for b in reps}
                if not replicas <= live:
                    log.info("deletion of %r waits for broker(s) %s", topic,
                             sorted(replicas - live))
                    continue
                try:
                    removed = await self._remove_topic(topic, fmt.decode_marker(data),
                                                       fence_version)
                except _Fenced:
                    return False
                if removed is not None:
                    self._removed[topic] = removed
                    self.deleted += 1
                    log.info("controller: topic %r deleted", topic)
                    await self._remove_offsets(topic)
            else:
                await self._remove_offsets(topic)  # gone already: perhaps not its offsets
            with contextlib.suppress(NoNodeError):
                await self._bridge.call("delete", self._paths.delete_topic(topic))
            self._marked.discard(topic)
        return True

    async def _read_markers(self) -> list[str]:
        b = self._bridge
        watch = b.watcher(self._on_watch)
        while True:
            try:
                return list(await b.call("get_children", self._paths.delete_topics, watch=watch))
            except NoNodeError:
                # No deletion ever: the first one creates the parent, and this watch fires.
                if await b.call("exists", self._paths.delete_topics, watch=watch) is None:
                    return []

    async def _remove_topic(
        self, topic: str, marked: int | None, fence_version: int
    ) -> int | None:
        """One fenced multi removing the topic's znodes, deepest first, if the marker names
        this topic znode (``marked``: its czxid; None names any: Kafka's own tools write an
        empty marker), so a marker outliving its topic never deletes a new one of the name.
        Returns the removed znode's czxid, None if nothing was removed; raises _Fenced."""
        b = self._bridge
        p = self._paths
        stat = await b.call("exists", p.topic(topic))
        if stat is None or (marked is not None and stat.czxid != marked):
            return None
        doomed: list[str] = []
        for part in await self._children(p.topic(topic) + "/partitions"):
            part_path = f"{p.topic(topic)}/partitions/{part}"
            doomed += [f"{part_path}/{c}" for c in await self._children(part_path)]
            doomed.append(part_path)
        if await b.call("exists", p.topic(topic) + "/partitions") is not None:
            doomed.append(p.topic(topic) + "/partitions")
        doomed.append(p.topic(topic))
        if await b.call("exists", p.topic_config(topic)) is not None:
            doomed.append(p.topic_config(topic))
        txn = b.transaction()
        txn.check(p.controller_epoch, fence_version)
        txn.check(p.topic(topic), stat.version)
        for path in doomed:
            txn.delete(path)
        results = await b.commit(txn)
        if isinstance(results[0], BadVersionError):
            raise _Fenced()
        failed = [r for r in results[1:] if isinstance(r, Exception)
                  and not isinstance(r, RolledBackError)]
        if failed:
            # Changed under us (a partition added meanwhile): read again on the next pass.
            self._stale = True
            self._notify()
            raise RuntimeError(f"deleting topic {topic!r}: {failed[0]!r}; will retry")
        return int(stat.czxid)

    async def _remove_offsets(self, topic: str) -> None:
        for group in await self._children(self._paths.consumers):
            path = f"{self._paths.consumers}/{group}/offsets/{topic}"
            for part in await self._children(path):
                with contextlib.suppress(NoNodeError):
                    await self._bridge.call("delete", f"{path}/{part}")
            # Gone already; or a commit raced in: that offset stays, harmlessly.
            with contextlib.suppress(NoNodeError, NotEmptyError):
                await self._bridge.call("delete", path)

    async def _children(self, path: str) -> list[str]:
        try:
            return list(await self._bridge.call("get_children", path))
        except NoNodeError:
            return []
