"""The membership and ownership registries kept in the broker's own memory.

The Kafka paper kept these in ZooKeeper (``/consumers/<g>/ids`` and ``/owners``); the zk twin
still does. A coordinator whose group state lives in the coordinating broker (the single-node
broker, DSBS) keeps them here instead: the group state machine rebuilds them on the next
rebalance after a restart, so nothing is persisted.
"""

from __future__ import annotations

from collections.abc import Mapping

from brokers.core.coordinator import MemberRecord, TopicPartition


class GroupRegistry:
    def __init__(self) -> None:
        self._members: dict[str, dict[str, MemberRecord]] = {}
        self._owners: dict[str, dict[TopicPartition, str]] = {}

    async def register_member(self, group_id: str, member: MemberRecord) -> None:
        self._members.setdefault(group_id, {})[member.member_id] = member

    async def unregister_member(self, group_id: str, member_id: str) -> None:
        self._members.get(group_id, {}).pop(member_id, None)

    async def record_owners(self, group_id: str, owners: Mapping[TopicPartition, str]) -> None:
        self._owners[group_id] = dict(owners)

    def members(self, group_id: str) -> dict[str, MemberRecord]:
        return dict(self._members.get(group_id, {}))

    def owners(self, group_id: str) -> dict[TopicPartition, str]:
        return dict(self._owners.get(group_id, {}))
