"""SharedDirCoordinator: the single-node coordinator's tables, plus a directory every broker of
the cluster shares for what must be agreed on (members, topics)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import zlib
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

from brokers.core.coordinator import (
    BrokerInfo,
    ClusterView,
    ConfigChange,
    PartitionState,
    TopicInfo,
    validate_replication_factor,
)
from brokers.core.datadir import DataDir
from brokers.core.errors import (
    CoordinatorNotAvailable,
    InvalidPartitions,
    InvalidRequest,
    TopicAlreadyExists,
    UnknownTopicOrPartition,
)
from brokers.core.local_coordinator import LocalCoordinator

# How often every broker reads the shared directory for members and topics.
SCAN_INTERVAL_S = 0.05
# Producer ids: node i hands out i, i + STRIPE, i + 2 STRIPE ... (unique across the cluster).
STRIPE = 64


class SharedDirCoordinator(LocalCoordinator):
    def __init__(self, node_id: int, state_dir: Path, shared: Path, *,
                 datadir: DataDir | None = None) -> None:
        super().__init__(node_id, state_dir, datadir=datadir)
        self._shared = shared
        (shared / "members").mkdir(parents=True, exist_ok=True)
        (shared / "topics").mkdir(parents=True, exist_ok=True)
        self._peers: tuple[BrokerInfo, ...] = ()
        self._scanner: asyncio.Task[None] | None = None
        self._pids = 0

    @property
    def view_is_store(self) -> bool:
        return False  # the directory is the store; the view is the last scan of it

    async def start(self, me: BrokerInfo) -> None:
        self._me = me
        record = {"host": me.host, "port": me.port}
        path = self._shared / "members" / f"{me.node_id}.json"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(record), encoding="utf-8")
        os.replace(tmp, path)  # a reader sees the whole record or none
        self._counters.coordination_writes += 1
        self._scan()
        self._scanner = asyncio.get_running_loop().create_task(self._scan_forever())

    async def close(self) -> None:
        if self._scanner is not None:
            self._scanner.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._scanner
        await super().close()

    async def _scan_forever(self) -> None:
        while True:
            await asyncio.sleep(SCAN_INTERVAL_S)
            self._scan()

    def _scan(self) -> None:
        """Read members and topics; publish a new view when they changed."""
        self._counters.coordination_reads += 1
        members = []
        for f in sorted((self._shared / "members").glob("*.json")):
            with contextlib.suppress(OSError, ValueError):
                record = json.loads(f.read_text("utf-8"))
                members.append(BrokerInfo(int(f.stem), record["host"], int(record["port"])))
        members.sort(key=lambda b: b.node_id)
        topics = {}
        for f in (self._shared / "topics").glob("*.json"):
            with contextlib.suppress(OSError, ValueError):
                spec = json.loads(f.read_text("utf-8"))
                topics[f.stem] = (int(spec["partitions"]), dict(spec.get("configs", {})))
        ids = tuple(m.node_id for m in members)
        self._peers = tuple(members)
        new = {name: self._placed(name, n, configs, ids) for name, (n, configs) in topics.items()}
        if new != self._topics or self._view.brokers != self._peers:
            self._topics = new
            self._publish()

    @staticmethod
    def _placed(name: str, partitions: int, configs: Mapping[str, str], ids: tuple[int, ...]
                ) -> TopicInfo:
        """Partition p is led by the member at (crc32(name) + p) mod members, alone."""
        first = zlib.crc32(name.encode())
        states = tuple(
            PartitionState(name, p, ids[(first + p) % len(ids)], 0,
                           (ids[(first + p) % len(ids)],), (ids[(first + p) % len(ids)],))
            for p in range(partitions)) if ids else ()
        return TopicInfo(name, states, MappingProxyType(dict(configs)))

    def _publish(self) -> None:
        assert self._me is not None, "start() first"
        self._view = ClusterView(
            brokers=self._peers or (self._me,),
            controller_id=min((m.node_id for m in self._peers), default=self._me.node_id),
            topics=MappingProxyType(dict(self._topics)))
        for listener in self._listeners:
            listener(self._view)

    async def partition_state(self, topic: str, partition: int, *, fresh: bool
                              ) -> PartitionState | None:
        if fresh:
            self._scan()
        return self._view.partition(topic, partition)

    async def create_topic(self, name: str, num_partitions: int, replication_factor: int,
                           configs: Mapping[str, str] | None = None, *, auto: bool = False
                           ) -> TopicInfo:
        if num_partitions < 1:
            raise InvalidPartitions(f"{num_partitions} partitions requested")
        validate_replication_factor(replication_factor)
        if replication_factor > 1:
            raise InvalidRequest("shared-dir does not replicate (replication factor 1 only)")
        path = self._shared / "topics" / f"{name}.json"
        spec = json.dumps({"partitions": num_partitions, "configs": dict(configs or {})})
        try:
            # O_EXCL: of all brokers creating the name at once, exactly one succeeds.
            fd = os.open(path.with_suffix(".new"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            raise TopicAlreadyExists(f"topic {name!r} is being created") from None
        with os.fdopen(fd, "w") as f:
            f.write(spec)
        try:
            os.link(path.with_suffix(".new"), path)
        except FileExistsError:
            raise TopicAlreadyExists(f"topic {name!r} already exists") from None
        finally:
            path.with_suffix(".new").unlink()
        self._counters.coordination_writes += 1
        self._scan()
        return self._topics[name]

    async def create_partitions(self, topic: str, total: int) -> TopicInfo:
        raise InvalidRequest("shared-dir cannot add partitions")

    async def alter_topic_configs(self, topic: str, change: ConfigChange) -> TopicInfo:
        raise InvalidRequest("shared-dir cannot alter topic configs")

    async def delete_topic(self, topic: str) -> None:
        if topic not in self._topics:
            raise UnknownTopicOrPartition(f"unknown topic {topic!r}")
        for listener in list(self._deletion_listeners):
            listener(topic)
        with contextlib.suppress(FileNotFoundError):
            (self._shared / "topics" / f"{topic}.json").unlink()
        self._counters.coordination_writes += 1
        self._scan()

    def group_coordinator(self, group_id: str) -> BrokerInfo:
        if not self._peers:
            raise CoordinatorNotAvailable("no member known yet")
        return self._peers[zlib.crc32(group_id.encode()) % len(self._peers)]

    def coordination_epoch(self, group_id: str) -> int:
        return len(self._peers)  # the peers only grow here

    async def allocate_producer_id(self) -> int:
        pid = self._pids * STRIPE + self.node_id
        self._pids += 1
        return pid
