"""Election: which broker is the controller, and this broker taking or leaving the office.

Kafka's rule: the first broker to create the ephemeral ``/controller`` wins, bumps the persistent
``/controller_epoch`` (compare-and-set) and is the controller until its session ends. Every read
of ``/controller`` (``MetadataCache.refresh_controller``, re-armed by its watch) ends here:

* no znode: try to create it, then read again to learn who won;
* ours, owned by our current session (just won, or kept through a suspension): take office,
  i.e. start a ``Controller`` (``controller.py``) fenced by the epoch's znode version;
* somebody else's: resign if we were in office.

The coordinator also resigns us when the session is SUSPENDED or LOST: a controller that cannot
reach ZooKeeper must not keep deciding, and a newer one may already be elected.
"""

from __future__ import annotations

import contextlib
import logging

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from brokers.zk_broker import paths as fmt
from brokers.zk_broker.cache import MetadataCache
from brokers.zk_broker.controller import Controller
from brokers.zk_broker.paths import ZkPaths
from brokers.zk_broker.session import ZkSession

log = logging.getLogger(__name__)


class Election:
    """This broker's part in the controller election; all methods run on the loop."""

    def __init__(
        self, session: ZkSession, paths: ZkPaths, node_id: int, cache: MetadataCache,
        unclean: bool = False,
    ) -> None:
        self._session = session
        # What the controller this broker may become elects from (unclean.leader.election).
        self._unclean = unclean
        self._paths = paths
        self._node_id = node_id
        # Whose reads of /controller drive the election, and what the controller reconciles.
        self._cache = cache
        self._controller: Controller | None = None
        self._becoming_controller = False
        self.elections_won = 0

    @property
    def is_controller(self) -> bool:
        return self._controller is not None

    def notify(self) -> None:
        """The cache changed: the controller in office (if any) reconciles soon."""
        if self._controller is not None:
            self._controller.notify()

    async def on_controller(self, holder: tuple[int, int] | None) -> None:
        """What a read of /controller found: None (absent), else (id, owning session)."""
        if holder is None:
            await self._elect()
            return
        cid, owner = holder
        if cid == self._node_id and owner == self._session.id:
            # Ours (just won, or kept through a suspension): take office if not yet in it.
            await self._become_controller()
        elif self._controller is not None:
            await self.resign(f"broker {cid} is the controller")

    async def _elect(self) -> None:
        if not self._session.connected:
            return
        # NodeExists: somebody else won; refresh_controller reads who.
        with contextlib.suppress(NodeExistsError):
            await self._session.bridge.call(
                "create",
                self._paths.controller,
                fmt.encode_controller(self._node_id),
                ephemeral=True,
            )
        await self._cache.refresh_controller()

    async def _become_controller(self) -> None:
        session = self._session
        if self._controller is not None or self._becoming_controller or not session.connected:
            return
        self._becoming_controller = True
        try:
            epoch, version = await self._bump_controller_epoch()
            if not session.connected or session.closed:
                return
            self._controller = Controller(
                self._cache, session.bridge, self._paths, epoch, version, self._fenced,
                unclean=self._unclean,
            )
            self.elections_won += 1
            log.info("broker %d is the controller (epoch %d)", self._node_id, epoch)
            self._controller.start()
        finally:
            self._becoming_controller = False

    async def _bump_controller_epoch(self) -> tuple[int, int]:
        """Compare-and-set ``/controller_epoch`` to previous + 1; returns (epoch, zk version)."""
        b = self._session.bridge
        path = self._paths.controller_epoch
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

    def _fenced(self, controller: Controller) -> None:
        """A newer controller fenced ``controller``'s writes: it has already stopped."""
        if self._controller is controller:
            self._controller = None

    async def resign(self, why: str) -> None:
        controller, self._controller = self._controller, None
        if controller is not None:
            log.info("broker %d stops acting as controller: %s", self._node_id, why)
            await controller.stop()
