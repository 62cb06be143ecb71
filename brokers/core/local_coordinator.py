"""LocalCoordinator: a one-broker cluster whose coordination tables live in the broker.

The baseline the two twins are compared against, and what `twinbench broker` runs. There is no
peer to disagree with, so every "fresh" read is the cache and every write is local; state that
must survive a restart (topics, committed offsets, the producer-id high-water mark) lives in
``<data_dir>/coordinator/``. Committed offsets are fsynced before the commit is acknowledged
when ``fsync_offsets`` is set (`twinbench broker` sets it under ``--flush every_batch``).

A failed write or fsync of that state takes the data directory offline (``DataDir.fail``: the
broker halts) and is never retried; commits meanwhile get KAFKA_STORAGE_ERROR.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from brokers.core.coordinator import (
    Assignment,
    BrokerInfo,
    ClusterView,
    ConfigChange,
    OffsetAndMetadata,
    PartitionState,
    TopicInfo,
    TopicPartition,
    validate_replication_factor,
)
from brokers.core.counters import CoordinatorCounters, total
from brokers.core.datadir import DataDir
from brokers.core.errors import (
    CoordinatorNotAvailable,
    InvalidPartitions,
    NotCoordinator,
    TopicAlreadyExists,
    UnknownTopicOrPartition,
)
from brokers.core.group_registry import GroupRegistry
from brokers.core.local_state import JsonDocument, JsonJournal


@dataclass(kw_only=True)
class LocalCounters(CoordinatorCounters):
    """The single node's counters; ``coordination_ops`` is reads + writes."""

    coordination_writes: int = total("writes of its tables: topic creations, offset commits")
    coordination_reads: int = total("reads of its offset table (OffsetFetch)")


# Producer ids are handed out in blocks; only the block's end is persisted, so a restart skips
# the unused rest of a block instead of ever reissuing an id.
PRODUCER_ID_BLOCK = 1000


class LocalCoordinator(GroupRegistry):
    def __init__(
        self, node_id: int, state_dir: Path, *, fsync_offsets: bool = False,
        datadir: DataDir | None = None,
    ) -> None:
        super().__init__()
        self._node_id = node_id
        # Where write failures are reported; alone (tests), a private one for the state dir.
        self._datadir = datadir if datadir is not None else DataDir(state_dir)
        state_dir.mkdir(parents=True, exist_ok=True)
        self._topics_doc = JsonDocument(state_dir / "topics.json")
        self._pid_doc = JsonDocument(state_dir / "producer_ids.json")
        self._offsets_journal = JsonJournal(state_dir / "offsets.jsonl", fsync=fsync_offsets)
        # Transaction records (brokers/core/transactions): the last line per id wins; fsynced
        # like the offsets, as the decision to commit must survive what the offsets survive.
        self._txn_journal = JsonJournal(state_dir / "transactions.jsonl", fsync=fsync_offsets)
        self._txns: dict[str, tuple[bytes, int]] = {
            e["id"]: (e["record"].encode(), int(e["version"]))
            for e in self._txn_journal.entries}
        self._txn_journal.rewrite([{"id": t, "record": r.decode(), "version": v}
                                   for t, (r, v) in sorted(self._txns.items())])
        self._me: BrokerInfo | None = None
        self._topics: dict[str, TopicInfo] = {}
        self._offsets: dict[str, dict[TopicPartition, OffsetAndMetadata]] = {}
        self._listeners: list[Callable[[ClusterView], None]] = []
        self._deletion_listeners: list[Callable[[str], None]] = []
        self._next_pid = 0
        self._pid_block_end = 0
        self._view = ClusterView(brokers=(), controller_id=-1, topics=MappingProxyType({}))
        self._counters = LocalCounters()
        for entry in self._offsets_journal.entries:
            tp = TopicPartition(entry["topic"], entry["partition"])
            if entry.get("deleted"):
                self._offsets.get(entry["group"], {}).pop(tp, None)
                continue
            self._offsets.setdefault(entry["group"], {})[tp] = OffsetAndMetadata(
                entry["offset"], entry.get("metadata"), entry.get("leader_epoch", -1),
                entry.get("ts", -1),
            )

    @property
    def node_id(self) -> int:
        return self._node_id

    @property
    def view_is_store(self) -> bool:
        return True  # one node: the view is the only copy there is

    async def start(self, me: BrokerInfo) -> None:
        self._me = me
        for name, spec in self._topics_doc.load({}).items():
            self._topics[name] = self._topic_info(name, spec["partitions"], spec.get("configs", {}))
        self._publish()

    async def close(self) -> None:
        self._offsets_journal.close()
        self._txn_journal.close()

    def _topic_info(self, name: str, partitions: int, configs: Mapping[str, str]) -> TopicInfo:
        states = tuple(
            PartitionState(name, p, self._node_id, 0, (self._node_id,), (self._node_id,))
            for p in range(partitions)
        )
        return TopicInfo(name, states, MappingProxyType(dict(configs)))

    def _publish(self) -> None:
        assert self._me is not None, "start() first"
        self._view = ClusterView(
            brokers=(self._me,),
            controller_id=self._node_id,
            topics=MappingProxyType(dict(self._topics)),
        )
        for listener in self._listeners:
            listener(self._view)

    # --- metadata ---------------------------------------------------------------------------
    def cluster(self) -> ClusterView:
        return self._view

    async def partition_state(
        self, topic: str, partition: int, *, fresh: bool
    ) -> PartitionState | None:
        return self._view.partition(topic, partition)

    async def create_topic(
        self,
        name: str,
        num_partitions: int,
        replication_factor: int,
        configs: Mapping[str, str] | None = None,
        *,
        auto: bool = False,
    ) -> TopicInfo:
        if name in self._topics:
            raise TopicAlreadyExists(f"topic {name!r} already exists")
        if num_partitions < 1:
            raise InvalidPartitions(f"{num_partitions} partitions requested")
        validate_replication_factor(replication_factor)
        self._store_topic(self._topic_info(name, num_partitions, configs or {}))
        return self._topics[name]

    async def create_topic_assigned(
        self, name: str, assignment: Assignment, configs: Mapping[str, str] | None = None
    ) -> TopicInfo:
        # One node: the only assignment that passes validation puts everything here.
        return await self.create_topic(name, len(assignment), 1, configs)

    async def create_partitions(self, topic: str, total: int) -> TopicInfo:
        info = self._topics.get(topic)
        if info is None:
            raise UnknownTopicOrPartition(f"unknown topic {topic!r}")
        if total <= len(info.partitions):
            raise InvalidPartitions(f"topic {topic!r} has {len(info.partitions)} partitions; "
                                    f"{total} would not add any")
        self._store_topic(self._topic_info(topic, total, info.configs))
        return self._topics[topic]

    async def alter_topic_configs(self, topic: str, change: ConfigChange) -> TopicInfo:
        info = self._topics.get(topic)
        if info is None:
            raise UnknownTopicOrPartition(f"unknown topic {topic!r}")
        self._store_topic(self._topic_info(topic, len(info.partitions), change(info.configs)))
        return self._topics[topic]

    async def delete_topic(self, topic: str) -> None:
        """The data goes first (the deletion event), then the table: a crash in between
        brings the topic back empty, never a new topic of the name with old data."""
        if topic not in self._topics:
            raise UnknownTopicOrPartition(f"unknown topic {topic!r}")
        for listener in list(self._deletion_listeners):
            listener(topic)
        for group in list(self._offsets):
            gone = [tp for tp in self._offsets[group] if tp.topic == topic]
            if gone:
                await self.delete_offsets(group, gone)
        self._store_topic(None, without=topic)

    def on_topic_deleted(self, listener: Callable[[str], None]) -> None:
        self._deletion_listeners.append(listener)

    def _store_topic(self, info: TopicInfo | None, *, without: str = "") -> None:
        """Write the topic table with ``info`` in it (or ``without`` a topic), then publish
        it."""
        self._datadir.check()
        topics = dict(self._topics)
        if info is not None:
            topics[info.name] = info
        topics.pop(without, None)
        self._counters.coordination_writes += 1
        self._write(self._topics_doc.store, {
            t.name: {"partitions": len(t.partitions), "configs": dict(t.configs)}
            for t in topics.values()
        })
        self._topics = topics
        self._publish()

    def subscribe(self, listener: Callable[[ClusterView], None]) -> None:
        self._listeners.append(listener)

    # --- groups -----------------------------------------------------------------------------
    def group_coordinator(self, group_id: str) -> BrokerInfo:
        if self._me is None:
            raise CoordinatorNotAvailable("broker not started")
        return self._me

    def coordination_epoch(self, group_id: str) -> int:
        return 0  # one broker coordinates every group, always

    async def commit_offsets(
        self, group_id: str, offsets: Mapping[TopicPartition, OffsetAndMetadata]
    ) -> None:
        self._datadir.check()
        self._counters.coordination_writes += 1
        # Written (and fsynced, if asked) before the table changes: a failed commit leaves
        # neither the file nor what OffsetFetch answers claiming it.
        self._write(self._offsets_journal.append, [
            {
                "group": group_id, "topic": tp.topic, "partition": tp.partition,
                "offset": om.offset, "metadata": om.metadata,
                "leader_epoch": om.leader_epoch, "ts": om.commit_timestamp_ms,
            }
            for tp, om in offsets.items()
        ])
        self._offsets.setdefault(group_id, {}).update(offsets)

    async def fetch_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition] | None
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        self._counters.coordination_reads += 1
        table = self._offsets.get(group_id, {})
        if partitions is None:
            return dict(table)
        return {tp: table[tp] for tp in partitions if tp in table}

    async def delete_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition] | None
    ) -> None:
        table = self._offsets.get(group_id, {})
        gone = [tp for tp in (table if partitions is None else partitions) if tp in table]
        if not gone:
            return
        self._datadir.check()
        self._counters.coordination_writes += 1
        self._write(self._offsets_journal.append, [
            {"group": group_id, "topic": tp.topic, "partition": tp.partition, "deleted": True}
            for tp in gone])
        for tp in gone:
            del table[tp]
        if not table:
            self._offsets.pop(group_id, None)

    # --- misc -------------------------------------------------------------------------------
    def _write(self, store: Callable[[Any], None], value: Any) -> None:
        """One write of durable state; a failure takes the data directory offline."""
        try:
            store(value)
        except OSError as exc:
            raise self._datadir.fail(f"writing {self._offsets_journal.path.parent}", exc) from exc

    async def allocate_producer_id(self) -> int:
        if self._next_pid >= self._pid_block_end:
            self._datadir.check()
            start = int(self._pid_doc.load({"next_block": 0})["next_block"])
            self._write(self._pid_doc.store, {"next_block": start + PRODUCER_ID_BLOCK})
            self._next_pid, self._pid_block_end = start, start + PRODUCER_ID_BLOCK
        pid = self._next_pid
        self._next_pid += 1
        return pid

    # --- transactions (brokers.core.transactions.coordinator.TransactionStore) ----------------
    async def read_transaction(self, transactional_id: str) -> tuple[bytes | None, int]:
        self._counters.coordination_reads += 1
        return self._txns.get(transactional_id, (None, -1))

    async def write_transaction(self, transactional_id: str, record: bytes,
                                version: int) -> int:
        self._datadir.check()
        stored = self._txns.get(transactional_id, (None, -1))[1]
        if stored != version:
            raise NotCoordinator(f"transactional id {transactional_id!r} was written since "
                                 f"version {version} (now {stored})")
        self._counters.coordination_writes += 1
        self._write(self._txn_journal.append, [
            {"id": transactional_id, "record": record.decode(), "version": version + 1}])
        self._txns[transactional_id] = (record, version + 1)
        return version + 1

    async def list_transactions(self) -> list[str]:
        return sorted(self._txns)

    def counters(self) -> LocalCounters:
        c = self._counters
        return dataclasses.replace(
            c, coordination_ops=c.coordination_reads + c.coordination_writes)

