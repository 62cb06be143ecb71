"""ProducerIds: producer ids unique across the cluster, claimed from ZooKeeper in blocks.

Kafka's ProducerIdManager: ``/latest_producer_id_block`` names the last block any broker
claimed; a broker claims the next one with a compare-and-set and hands its ids out locally, so
ZooKeeper sees one write per ``producer_id_block_size`` ids. A lost race (BadVersion, or
NodeExists for the very first block) just retries with the newer value.
"""

from __future__ import annotations

import asyncio

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from brokers.zk_broker import paths as fmt
from brokers.zk_broker.paths import ZkPaths
from brokers.zk_broker.session import ZkSession


class ProducerIds:
    """This broker's current block of producer ids."""

    def __init__(self, session: ZkSession, paths: ZkPaths, node_id: int, block_size: int) -> None:
        self._session = session
        self._paths = paths
        self._node_id = node_id
        self._block_size = block_size
        self._lock = asyncio.Lock()
        self._next = 0
        self._end = -1  # inclusive; next < end+1 means the block has ids left

    async def allocate(self) -> int:
        self._session.require()
        async with self._lock:
            if self._next > self._end:
                await self._session.retriable(self._claim_block())
            pid = self._next
            self._next += 1
            return pid

    async def _claim_block(self) -> None:
        """Compare-and-set /latest_producer_id_block to the block after the one it names."""
        b = self._session.bridge
        path = self._paths.producer_id_block
        size = self._block_size
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
                self._next, self._end = 0, size - 1
                return
            _, end = fmt.decode_producer_id_block(data)
            start = end + 1
            block = fmt.encode_producer_id_block(self._node_id, start, start + size - 1)
            try:
                await b.call("set", path, block, version=stat.version)
            except BadVersionError:
                continue
            self._next, self._end = start, start + size - 1
            return
