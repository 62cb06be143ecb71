"""GroupZnodes: the Kafka paper's three consumer registries, kept in ZooKeeper.

Under ``/consumers/<group>`` (znode formats in ``paths.py``):

* ``ids/<member>``: the membership registry, one ephemeral per member (it dies with the session
  of the broker that registered it);
* ``owners/<topic>/<partition>``: the ownership registry, which member consumes a partition,
  replaced as a whole after every rebalance (ephemeral too);
* ``offsets/<topic>/<partition>``: committed offsets, written on every commit and read on every
  fetch, as Kafka 0.8.2 did with offsets.storage=zookeeper; deleted (DeleteGroups,
  OffsetDelete) in order after the writes queued on them;
* ``generation``: the group's fence. Every rebalance this broker completes bumps its version in
  the same multi that replaces the owners, before any member hears its assignment; every
  commit this broker makes for the group checks, in one multi with its setData, that the
  version is still the one its generation bumped.

Why the fence: which broker coordinates a group is a hash over the live brokers each broker's
cache lists, and caches learn of a broker's arrival or departure at different moments. For
that window two brokers can both take themselves for the coordinator: a member still on the
old one commits there while the group, rebalanced on the new one, has handed the partition to
another member, who has already read the committed offset. Without a fence that commit is
acknowledged and then ignored: the new owner consumes below it (the nemesis found exactly that,
seed 815891111 of the zk contract sample). Kafka from 0.9 on is fenced by the leadership of the
offsets topic's partition; ZooKeeper-era brokers fence their controller the same way this does
(a multi checking a znode version, Kafka 2.x's /controller_epoch). The same check closes the
in-process window too: a commit checked against generation N whose write reaches ZooKeeper
after generation N+1 was recorded fails instead of landing under the new owner. A fenced commit
fails with ILLEGAL_GENERATION; the member rejoins, and whichever broker then completes a
rebalance holds the fence.

Commits of one group and partition reach ZooKeeper in the order they arrived. A session's
requests are applied in order, so once the offset znode exists, issuing each setData at once
keeps the order. Before that, a setData fails with NoNode and the write is retried as a create
after a few round trips; writes that arrived later must not overtake it, so while a znode is
not known to exist, or a write to it is on that slow path, further writes to it queue behind
one lock per znode, in arrival order (asyncio.Lock wakes waiters first come, first served).

The registry remembers the ephemerals this broker registered: after a session loss ZooKeeper
has deleted them, and ``restore()`` re-creates them on the new session. While the session is not
usable every call raises CoordinatorNotAvailable (retriable) rather than pretending to store.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterable, Mapping
from typing import Any

from kazoo.exceptions import (
    BadVersionError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    RolledBackError,
    RuntimeInconsistency,
)

from brokers.core.coordinator import MemberRecord, OffsetAndMetadata, TopicPartition
from brokers.core.errors import CoordinatorNotAvailable, IllegalGeneration
from brokers.zk_broker import paths as fmt
from brokers.zk_broker.paths import ZkPaths
from brokers.zk_broker.session import ZkSession


class GroupZnodes:
    """Members, owners and offsets of the groups this broker coordinates, as znodes.

    (The in-memory counterpart the other coordinators inherit is
    ``brokers.core.group_registry.GroupRegistry``.)"""

    def __init__(self, session: ZkSession, paths: ZkPaths) -> None:
        self._session = session
        self._paths = paths
        # What this broker registered, to restore after a session loss.
        self._my_members: dict[str, dict[str, MemberRecord]] = {}
        self._my_owners: dict[str, dict[TopicPartition, str]] = {}
        # Offset znodes known to exist: their commits go straight out as one setData.
        self._offset_nodes: set[str] = set()
        # Offset znodes with writes queued on their lock: (lock, writes queued or running).
        self._offset_queues: dict[str, tuple[asyncio.Lock, int]] = {}
        # Per group, the version of its generation znode this broker's last rebalance set:
        # what this broker's commits for the group check (absent: it completed none).
        self._fences: dict[str, int] = {}

    # --- membership ----------------------------------------------------------------------------
    async def register_member(self, group_id: str, member: MemberRecord) -> None:
        self._session.require()
        await self._session.retriable(self._write_member(group_id, member))
        self._my_members.setdefault(group_id, {})[member.member_id] = member

    async def _write_member(self, group_id: str, member: MemberRecord) -> None:
        b = self._session.bridge
        path = self._paths.member(group_id, member.member_id)
        data = fmt.encode_member(member)
        await self._session.ensure_path(self._paths.member_ids(group_id))
        try:
            await b.call("create", path, data, ephemeral=True)
        except NodeExistsError:
            await b.call("set", path, data)

    async def unregister_member(self, group_id: str, member_id: str) -> None:
        b = self._session.require()
        self._my_members.get(group_id, {}).pop(member_id, None)

        async def delete() -> None:
            with contextlib.suppress(NoNodeError):  # absent members are fine
                await b.call("delete", self._paths.member(group_id, member_id))

        await self._session.retriable(delete())

    # --- ownership -----------------------------------------------------------------------------
    async def record_owners(self, group_id: str, owners: Mapping[TopicPartition, str]) -> None:
        self._session.require()
        owners = dict(owners)
        await self._session.retriable(self._write_owners(group_id, owners, bump=True))
        self._my_owners[group_id] = owners

    async def _write_owners(self, group_id: str, owners: dict[TopicPartition, str], *,
                            bump: bool) -> None:
        """Replace the ownership registry in one multi: delete every current owner znode,
        create the new ones (ephemeral, so ownership dies with this broker's session), and
        with ``bump`` take the group's fence (a new generation)."""
        b = self._session.bridge
        p = self._paths
        existing: list[str] = []
        try:
            topics = await b.call("get_children", p.owners(group_id))
        except NoNodeError:
            topics = []
        for topic in topics:
            with contextlib.suppress(NoNodeError):
                for part in await b.call("get_children", p.owners_topic(group_id, topic)):
                    existing.append(f"{p.owners_topic(group_id, topic)}/{part}")
        for topic in {tp.topic for tp in owners}:
            await self._session.ensure_path(p.owners_topic(group_id, topic))
        if bump and group_id not in self._fences:
            await self._session.ensure_path(p.group(group_id))
            with contextlib.suppress(NodeExistsError):
                await b.call("create", p.generation(group_id), b"")
        if not existing and not owners and not bump:
            return
        txn = b.transaction()
        for path in existing:
            txn.delete(path)
        for tp, member in sorted(owners.items()):
            txn.create(p.owner(group_id, tp), fmt.encode_owner(member), ephemeral=True)
        if bump:
            txn.set_data(p.generation(group_id), b"")
        results = await b.commit(txn)
        failed = [r for r in results if isinstance(r, Exception)]
        if failed:
            # Another writer changed the registry between our read and the multi.
            raise CoordinatorNotAvailable(f"owner registry of {group_id!r} changed: {failed[0]!r}")
        if bump:
            self._fences[group_id] = results[-1].version

    # --- offsets -------------------------------------------------------------------------------
    async def commit_offsets(
        self, group_id: str, offsets: Mapping[TopicPartition, OffsetAndMetadata]
    ) -> None:
        self._session.require()
        # Read before any await: the generation the group manager has just checked this
        # commit against is the last one this broker recorded.
        fence = self._fences.get(group_id)
        if offsets:
            await self._session.retriable(
                asyncio.gather(
                    *(self._write_offset(group_id, tp, om, fence) for tp, om in offsets.items())
                )
            )

    async def _write_offset(self, group_id: str, tp: TopicPartition, om: OffsetAndMetadata,
                            fence: int | None) -> None:
        """Kafka 0.8.2's updatePersistentPath: setData, and only when the node does not exist
        yet, create its parents and the node. Steady state: one request per partition, issued
        at once; in arrival order always (the module docstring says how). With a ``fence``
        each write is checked against the group's generation znode in the same multi."""
        path = self._paths.offset(group_id, tp)
        data = fmt.encode_offset(om.offset, om.metadata, om.leader_epoch)
        if path in self._offset_nodes and path not in self._offset_queues:
            try:
                await self._set_offset(group_id, path, data, fence)
                return
            except NoNodeError:
                # Deleted behind our back; writes issued after this one failed the same way
                # and queue up behind it in the order their replies came, which is theirs.
                self._offset_nodes.discard(path)
        async with self._queued(path):
            await self._upsert_offset(group_id, tp, path, data, fence)
            self._offset_nodes.add(path)

    async def _set_offset(self, group_id: str, path: str, data: bytes, fence: int | None
                          ) -> None:
        if fence is None:  # a group this broker never rebalanced (manual commits)
            await self._session.data("set", path, data)
        else:
            self._raise_failed(group_id, await self._session.checked_set(
                self._paths.generation(group_id), fence, path, data))

    @staticmethod
    def _raise_failed(group_id: str, results: list[Any]) -> None:
        """Raise for a failed fenced multi ``[check, write]``: the check's failure as
        ILLEGAL_GENERATION, the write's as kazoo's own error (NoNode: take the slow path)."""
        check, write = results
        if isinstance(check, (BadVersionError, NoNodeError)):
            raise IllegalGeneration(
                f"group {group_id!r} was rebalanced by another coordinator since this "
                "member's generation")
        if isinstance(write, Exception) and not isinstance(
                write, (RolledBackError, RuntimeInconsistency)):
            raise write
        if isinstance(check, Exception) or isinstance(write, Exception):
            raise CoordinatorNotAvailable(f"commit of {group_id!r} failed: {results!r}")

    @contextlib.asynccontextmanager
    async def _queued(self, path: str) -> AsyncIterator[None]:
        """Hold ``path``'s turn: writes that cannot go straight out wait here in arrival
        order; the queue is forgotten when its last waiter leaves."""
        lock, queued = self._offset_queues.get(path) or (asyncio.Lock(), 0)
        self._offset_queues[path] = (lock, queued + 1)
        try:
            async with lock:
                yield
        finally:
            lock, queued = self._offset_queues[path]
            if queued == 1:
                del self._offset_queues[path]
            else:
                self._offset_queues[path] = (lock, queued - 1)

    async def _upsert_offset(
        self, group_id: str, tp: TopicPartition, path: str, data: bytes, fence: int | None
    ) -> None:
        b = self._session.bridge
        try:
            await self._set_offset(group_id, path, data, fence)
        except NoNodeError:
            parent = self._paths.offsets_topic(group_id, tp.topic)
            for attempt in range(2):
                await self._session.ensure_path(parent)
                try:
                    if fence is None:
                        await b.call("create", path, data)
                    else:
                        txn = b.transaction()
                        txn.check(self._paths.generation(group_id), fence)
                        txn.create(path, data)
                        self._raise_failed(group_id, await b.commit(txn, counted_as="create"))
                    return
                except NodeExistsError:
                    await self._set_offset(group_id, path, data, fence)
                    return
                except NoNodeError:
                    # The parent went (another broker emptied and deleted it) after it was
                    # made: make it again, once.
                    if attempt:
                        raise
                    self._session.forget_paths(parent)

    async def delete_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition] | None
    ) -> None:
        """Delete offset znodes (DeleteGroups, OffsetDelete), each after the writes queued on
        it, then the group's emptied offset directories."""
        self._session.require()
        wanted = (list(partitions) if partitions is not None
                  else await self._session.retriable(self._committed_partitions(group_id)))
        await self._session.retriable(asyncio.gather(
            *(self._delete_offset(group_id, tp) for tp in wanted)))
        b = self._session.bridge
        topics = sorted({tp.topic for tp in wanted})
        for path in [*(self._paths.offsets_topic(group_id, t) for t in topics),
                     *([self._paths.offsets(group_id)] if partitions is None else [])]:
            with contextlib.suppress(NoNodeError, NotEmptyError):
                await b.call("delete", path)  # only if empty: a commit may have come since
                # Gone: the next commit under it must create it again, not trust the cache
                # of paths already made (a transaction's pending offsets come and go so).
                self._session.forget_paths(path)

    async def _delete_offset(self, group_id: str, tp: TopicPartition) -> None:
        path = self._paths.offset(group_id, tp)
        async with self._queued(path):
            self._offset_nodes.discard(path)
            with contextlib.suppress(NoNodeError):
                await self._session.bridge.call("delete", path)

    async def fetch_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition] | None
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        self._session.require()
        return await self._session.retriable(self._read_offsets(group_id, partitions))

    async def _read_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition] | None
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        wanted = (
            list(partitions) if partitions is not None
            else await self._committed_partitions(group_id)
        )

        async def one(tp: TopicPartition) -> tuple[TopicPartition, OffsetAndMetadata] | None:
            try:
                data, _ = await self._session.data("get", self._paths.offset(group_id, tp))
            except NoNodeError:
                return None
            offset, metadata, epoch = fmt.decode_offset(data)
            return tp, OffsetAndMetadata(offset, metadata, epoch)

        found = await asyncio.gather(*(one(tp) for tp in wanted))
        return dict(r for r in found if r is not None)

    async def _committed_partitions(self, group_id: str) -> list[TopicPartition]:
        """Every partition the group has an offset znode for."""
        b = self._session.bridge
        wanted: list[TopicPartition] = []
        try:
            topics = await b.call("get_children", self._paths.offsets(group_id))
        except NoNodeError:
            topics = []
        for topic in topics:
            with contextlib.suppress(NoNodeError):
                children = await b.call(
                    "get_children", self._paths.offsets_topic(group_id, topic)
                )
                wanted += [TopicPartition(topic, int(c)) for c in children if c.isdigit()]
        return wanted

    # --- after a session loss ------------------------------------------------------------------
    async def restore(self) -> None:
        """Re-create the ephemerals this broker had registered (a new session has none)."""
        for group_id, members in list(self._my_members.items()):
            for member in list(members.values()):
                await self._write_member(group_id, member)
        for group_id, owners in list(self._my_owners.items()):
            # The fence is not taken again: a broker that rebalanced the group meanwhile
            # holds it, and this broker's members must rejoin before committing.
            await self._write_owners(group_id, owners, bump=False)
