"""Transaction records in ZooKeeper: the zk twin's ``TransactionStore``
(brokers/core/transactions/coordinator.py).

ZooKeeper-era Kafka did not keep transactions in ZooKeeper: its transaction coordinator wrote
them to the replicated ``__transaction_state`` topic, and ZooKeeper only chose that topic's
partition leaders (the coordinators). This twin has no internal topics (its committed offsets
are znodes too, Kafka 0.8's layout), so a transaction's record is one persistent znode,
``/twinbench/transactions/<id>``, and every write is a compare-and-set on the znode's version:
a create when the id is new, a versioned setData otherwise. A coordinator that lost the id to
another broker, and writes from a stale version, gets BadVersion (or NodeExists), which becomes
NOT_COORDINATOR: ZooKeeper's order decides, so no two coordinators can both move one
transaction on. Per transaction the cost is a handful of ZooKeeper writes, one per stored state
(ONGOING, PREPARE_*, COMPLETE_*), where Kafka appends the same states to its log.
"""

from __future__ import annotations

from urllib.parse import unquote

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from brokers.core.errors import NotCoordinator
from brokers.zk_broker.paths import ZkPaths
from brokers.zk_broker.session import ZkSession

NO_VERSION = -1


class TransactionZnodes:
    def __init__(self, session: ZkSession, paths: ZkPaths) -> None:
        self._session = session
        self._paths = paths

    async def read(self, transactional_id: str) -> tuple[bytes | None, int]:
        b = self._session.require()
        try:
            data, stat = await self._session.retriable(
                b.call("get", self._paths.transaction(transactional_id)))
        except NoNodeError:
            return None, NO_VERSION
        return bytes(data), stat.version

    async def write(self, transactional_id: str, record: bytes, version: int) -> int:
        b = self._session.require()
        path = self._paths.transaction(transactional_id)
        try:
            if version == NO_VERSION:
                await self._session.retriable(b.call("create", path, record, makepath=True))
                return 0
            stat = await self._session.retriable(b.call("set", path, record, version=version))
        except (BadVersionError, NodeExistsError, NoNodeError) as exc:
            raise NotCoordinator(
                f"transactional id {transactional_id!r} changed in ZooKeeper since version "
                f"{version} ({type(exc).__name__})") from None
        return int(stat.version)

    async def list(self) -> list[str]:
        b = self._session.require()
        try:
            children = await self._session.retriable(
                b.call("get_children", self._paths.transactions))
        except NoNodeError:
            return []
        return sorted(unquote(c) for c in children)
