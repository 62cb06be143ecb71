"""The controller: the one broker that writes partition leadership into ZooKeeper.

Election is Kafka's: the first broker to create the ephemeral ``/controller`` wins, bumps the
persistent ``/controller_epoch`` and becomes the controller until its session ends.
``election.py`` runs the election; this module holds what the winner does.

Duties (Kafka 0.8's):

* on election: read the world (brokers, topics, partition states; done by the cache's
  resync), then reconcile;
* topics: any broker may write ``/brokers/topics/<t>`` (as Kafka 0.8's admin tools did); the
  controller sees it through its watch and creates each partition's state znode;
* topics marked for deletion (``/admin/delete_topics``): removed once every broker holding a
  replica is live (``deletion.py``); their partitions get no leader changes meanwhile;
* brokers leaving/joining: a partition whose leader died gets the first live replica of its
  ISR as leader; a dead broker leaves every ISR at once. With no live ISR member the partition
  has no leader (-1, clients get LEADER_NOT_AVAILABLE) until one re-registers (unclean election
  is off). Every leader change bumps ``leader_epoch``. The leaders themselves shrink and expand
  their ISRs between elections (``isr.py``); every write to a state znode is conditional on the
  version its writer read, so the controller and a leader never overwrite each other.

The controller is level-triggered: ``reconcile()`` compares what every partition's state *is*
with what it *should be* given the live brokers, and writes only the differences. Any change the
cache's watches report just marks it dirty. That is simpler and more robust than reacting
to individual events, and repeated triggers cost nothing but a pass over an in-memory table.

Writes are fenced the way Kafka 2.x fences them: every write is a multi that first checks the
``/controller_epoch`` znode version this controller set when elected. If a newer controller has
been elected since (our session was suspended, say), the check fails and we resign instead of
overwriting its decisions.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError, RolledBackError

from brokers.core.coordinator import TopicPartition
from brokers.core.placement import Leadership, next_leadership
from brokers.zk_broker.bridge import KazooBridge
from brokers.zk_broker.cache import CachedState, ControllerContext
from brokers.zk_broker.deletion import TopicDeletions
from brokers.zk_broker.paths import LeaderAndIsr, ZkPaths

log = logging.getLogger(__name__)


# --- pure decisions (unit-tested without ZooKeeper) ---------------------------------------------
def next_partition_state(
    replicas: tuple[int, ...],
    live: set[int] | frozenset[int],
    current: LeaderAndIsr | None,
    controller_epoch: int,
    *,
    unclean: bool = False,
) -> LeaderAndIsr | None:
    """What a partition's state znode should become; None when it is already right. The rule
    is the one every controller shares (``brokers.core.placement.next_leadership``); the znode
    also records the epoch of the controller that wrote it."""
    now = None if current is None else Leadership(current.leader, current.leader_epoch,
                                                  current.isr)
    target = next_leadership(replicas, live, now, unclean=unclean)
    if target is None:
        return None
    return LeaderAndIsr(target.leader, target.leader_epoch, target.isr, controller_epoch)


class Controller:
    """Active while this broker holds /controller; one reconcile loop task."""

    def __init__(
        self,
        ctx: ControllerContext,
        bridge: KazooBridge,
        paths: ZkPaths,
        epoch: int,
        epoch_zk_version: int,
        on_fenced: Callable[[Controller], None],
        unclean: bool = False,
    ) -> None:
        self.ctx = ctx
        # unclean.leader.election.enable (next_partition_state).
        self.unclean = unclean
        self.bridge = bridge
        self.paths = paths
        self.epoch = epoch
        self.epoch_zk_version = epoch_zk_version
        # Told (once its loop has ended) that a newer controller fenced this one's writes.
        self._on_fenced = on_fenced
        self._dirty = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._stopped = False  # set by stop(); a pass in progress must not write any more
        self.writes = 0  # state znodes written while in office (for counters/logs)
        self.deletions = TopicDeletions(bridge, paths, self.notify)

    def start(self) -> None:
        self._dirty.set()
        self._task = asyncio.get_running_loop().create_task(
            self._run(), name=f"zk-controller-epoch-{self.epoch}"
        )

    def notify(self) -> None:
        """Something in the cache changed: reconcile soon (coalesces bursts)."""
        self._dirty.set()

    async def stop(self) -> None:
        self._stopped = True
        task, self._task = self._task, None
        if task is not None and task is not asyncio.current_task():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    @property
    def active(self) -> bool:
        return self._task is not None

    async def _run(self) -> None:
        # Read the world first: the cache may lag behind what a previous controller wrote.
        first = True
        while not self._stopped:
            await self._dirty.wait()
            self._dirty.clear()
            try:
                if first:
                    await self.ctx.resync()
                    first = False
                await self.reconcile()
            except _Fenced:
                log.warning("controller epoch %d fenced by a newer controller", self.epoch)
                self._task = None
                self._on_fenced(self)
                return
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                # Connection trouble: the coordinator resigns us on SUSPENDED/LOST; anything
                # else we retry on the next change, after a short back-off.
                log.warning("controller reconcile failed (%s); will retry", exc)
                await asyncio.sleep(0.2)
                self._dirty.set()

    async def reconcile(self) -> None:
        if self._stopped:
            return
        if not await self.deletions.run(self.ctx, self.epoch_zk_version):
            raise _Fenced()
        blocked = self.deletions.blocked(self.ctx)
        live = self.ctx.live_broker_ids()
        writes = []
        for topic, assignment in self.ctx.assignments().items():
            if topic in blocked:
                continue
            for partition, replicas in assignment.items():
                tp = TopicPartition(topic, partition)
                cached = self.ctx.cached_state(tp)
                target = next_partition_state(
                    replicas, live, cached.state if cached else None, self.epoch,
                    unclean=self.unclean,
                )
                if target is not None:
                    writes.append(self._write(tp, cached, target))
        if writes:
            results = await asyncio.gather(*writes, return_exceptions=True)
            for r in results:
                if isinstance(r, BaseException):
                    raise r

    async def _write(
        self, tp: TopicPartition, cached: CachedState | None, target: LeaderAndIsr
    ) -> None:
        path = self.paths.partition_state(tp.topic, tp.partition)
        txn = self.bridge.transaction()
        txn.check(self.paths.controller_epoch, self.epoch_zk_version)
        if cached is None:
            await self.ctx.ensure_path(self.paths.partition(tp.topic, tp.partition))
            txn.create(path, target.encode())
        else:
            txn.set_data(path, target.encode(), version=cached.version)
        results = await self.bridge.commit(txn)
        check, op = results[0], results[1]
        if isinstance(check, Exception) and not isinstance(check, RolledBackError):
            raise _Fenced()  # (rolled back: the check held, the write failed)
        if isinstance(op, (NodeExistsError, BadVersionError, NoNodeError)):
            # Our cache was behind: the watch-driven refresh will bring the real state and
            # mark us dirty again; nothing is lost by skipping this write.
            log.debug("state of %s changed under us (%s); will re-read", tp, type(op).__name__)
            return
        if isinstance(op, Exception):
            raise op
        self.writes += 1
        # Update the cache now so the next pass does not write the same thing again before the
        # watch event arrives (the read it triggers carries the authoritative version).
        version = 0 if cached is None else _stat_version(op)
        self.ctx.apply_state(tp, CachedState(target, version, _stat_mzxid(op)))
        log.info(
            "controller %d: %s-%d leader=%d epoch=%d",
            self.epoch,
            tp.topic,
            tp.partition,
            target.leader,
            target.leader_epoch,
        )


class _Fenced(Exception):
    """The /controller_epoch check failed: a newer controller exists."""


def _stat_version(result: Any) -> int:
    return int(getattr(result, "version", 0))


def _stat_mzxid(result: Any) -> int:
    # A create in a multi returns the path, not a stat: -1 lets the next real read win.
    return int(getattr(result, "mzxid", -1))
