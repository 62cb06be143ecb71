"""Offsets committed inside a transaction (TxnOffsetCommit), held pending until its marker.

Kafka writes them to the group's offsets partition as transactional records, which only the
commit marker makes visible. Here the group's own offset table in the architecture's store
(``Coordinator.commit_offsets``) holds them under a pending key, ``txn:<producer id>:<topic>``
(':' is not a topic-name character, so no real partition's offset is ever taken for one): as
durable as any committed offset, written by the group's coordinator as its other offsets are
(so every architecture's fencing of offset writes applies), and found again by the group's next
coordinator if this one dies before the marker. The transaction coordinator's marker for the
group (``GROUP_MARKER_PREFIX``) makes the group's coordinator copy them to the real keys on
commit and delete them either way; a retried marker finds nothing left to do.

OffsetFetch never shows pending keys, and answers UNSTABLE_OFFSET_COMMIT for a partition with
a pending offset when the client asks for stable offsets only (KIP-447's require_stable).
"""

from __future__ import annotations

from collections.abc import Mapping

from brokers.core.coordinator import Coordinator, OffsetAndMetadata, TopicPartition
from brokers.core.errors import IllegalGeneration, InvalidGroupId, UnknownMemberId
from brokers.core.groups import GroupCoordinator

PENDING_PREFIX = "txn:"


def pending_key(producer_id: int, tp: TopicPartition) -> TopicPartition:
    return TopicPartition(f"{PENDING_PREFIX}{producer_id}:{tp.topic}", tp.partition)


def is_pending(tp: TopicPartition) -> bool:
    return tp.topic.startswith(PENDING_PREFIX)


def parse_pending(tp: TopicPartition) -> tuple[int, TopicPartition] | None:
    """(producer id, the real partition) of a pending key; None for a real partition's key."""
    if not tp.topic.startswith(PENDING_PREFIX):
        return None
    pid, _, topic = tp.topic[len(PENDING_PREFIX):].partition(":")
    try:
        return int(pid), TopicPartition(topic, tp.partition)
    except ValueError:
        return None


async def commit_pending(
    coordinator: Coordinator, groups: GroupCoordinator, group_id: str, producer_id: int,
    generation_id: int, member_id: str, offsets: Mapping[TopicPartition, OffsetAndMetadata],
) -> None:
    """Store a transaction's offsets pending. A consumer's group metadata (TxnOffsetCommit v3+)
    is checked as OffsetCommit checks it; without it (generation -1) the commit is taken as
    Kafka takes it, whatever the group's members."""
    if not group_id:
        raise InvalidGroupId("empty group id")
    if generation_id >= 0 or member_id:
        _state, generation, members = groups.describe(group_id)
        if member_id not in members:
            raise UnknownMemberId(f"{member_id!r} is not a member of group {group_id!r}")
        if generation_id != generation:
            raise IllegalGeneration(f"generation {generation_id} != {generation}")
    await coordinator.commit_offsets(
        group_id, {pending_key(producer_id, tp): om for tp, om in offsets.items()})


async def complete_pending(coordinator: Coordinator, group_id: str, producer_id: int,
                           commit: bool) -> int:
    """The marker for ``group_id``: commit (or drop) ``producer_id``'s pending offsets; returns
    how many there were."""
    stored = await coordinator.fetch_offsets(group_id, None)
    mine: dict[TopicPartition, tuple[TopicPartition, OffsetAndMetadata]] = {}
    for key, om in stored.items():
        parsed = parse_pending(key)
        if parsed is not None and parsed[0] == producer_id:
            mine[key] = (parsed[1], om)
    if not mine:
        return 0
    if commit:
        await coordinator.commit_offsets(group_id, dict(mine.values()))
    await coordinator.delete_offsets(group_id, list(mine))
    return len(mine)
