"""The single node's coordinator keeps what the admin APIs change across a restart: grown
topics, altered configs, deleted offsets (its state files in the data directory)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from brokers.core.coordinator import BrokerInfo, OffsetAndMetadata, TopicPartition
from brokers.core.errors import InvalidPartitions, UnknownTopicOrPartition
from brokers.core.local_coordinator import LocalCoordinator

pytestmark = pytest.mark.integration

ME = BrokerInfo(0, "127.0.0.1", 1)


def test_admin_changes_survive_a_restart(tmp_path: Path) -> None:
    async def scenario() -> None:
        c = LocalCoordinator(0, tmp_path)
        await c.start(ME)
        await c.create_topic("t", 1, 1, {"retention.ms": "1000"})
        await c.create_partitions("t", 3)
        with pytest.raises(InvalidPartitions):
            await c.create_partitions("t", 2)
        with pytest.raises(UnknownTopicOrPartition):
            await c.create_partitions("nope", 2)
        await c.alter_topic_configs("t", lambda cur: {**cur, "segment.bytes": "2048"})
        tp0, tp1 = TopicPartition("t", 0), TopicPartition("t", 1)
        await c.commit_offsets("g", {tp0: OffsetAndMetadata(5), tp1: OffsetAndMetadata(6)})
        await c.delete_offsets("g", [tp0])
        await c.commit_offsets("h", {tp0: OffsetAndMetadata(1)})
        await c.delete_offsets("h", None)
        await c.close()

        again = LocalCoordinator(0, tmp_path)
        await again.start(ME)
        info = again.cluster().topics["t"]
        assert len(info.partitions) == 3
        assert dict(info.configs) == {"retention.ms": "1000", "segment.bytes": "2048"}
        assert await again.fetch_offsets("g", None) == {tp1: OffsetAndMetadata(6, "")}
        assert await again.fetch_offsets("h", None) == {}
        await again.close()

    asyncio.run(scenario())
