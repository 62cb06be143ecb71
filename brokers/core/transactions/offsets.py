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

Pending keys are per producer id, and a producer's transactions follow one another, so a
marker that arrives late (a predecessor coordinator's, or a copy held in a one-way cut) would
end the *next* transaction's offsets: commit offsets that transaction later aborts, or drop
ones it commits (its records copied again after a rewind). So the group remembers, under
``txn:done:<producer id>``, the number of the last transaction whose marker it applied (the
marker carries it: ``partition.py``), written after that marker's work, and a marker numbered
at or below it is a repeat that changes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping

from brokers.core.coordinator import Coordinator, OffsetAndMetadata, TopicPartition
from brokers.core.errors import IllegalGeneration, InvalidGroupId, UnknownMemberId
from brokers.core.groups import GroupCoordinator

PENDING_PREFIX = "txn:"
# The last transaction a producer's group marker applied: a key in the pending namespace (never
# shown), which ``parse_pending`` does not take for a pending offset.
DONE_PREFIX = PENDING_PREFIX + "done:"


def done_key(producer_id: int) -> TopicPartition:
    return TopicPartition(f"{DONE_PREFIX}{producer_id}", 0)


def is_done_key(tp: TopicPartition) -> bool:
    """A well-formed ``done_key``."""
    pid = tp.topic[len(DONE_PREFIX):] if tp.topic.startswith(DONE_PREFIX) else ""
    return pid.isdigit() and pid.isascii() and tp.partition == 0


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
                           commit: bool, txn_seq: int = 0) -> int:
    """The marker for ``group_id`` of ``producer_id``'s transaction number ``txn_seq``: commit
    (or drop) its pending offsets; returns how many there were. A repeat of a marker already
    applied (``txn_seq`` at or below the group's ``done_key``) changes nothing; 0 (unnumbered)
    is always applied."""
    stored = await coordinator.fetch_offsets(group_id, None)
    applied = stored.get(done_key(producer_id))
    if txn_seq > 0 and applied is not None and applied.offset >= txn_seq:
        return 0
    mine: dict[TopicPartition, tuple[TopicPartition, OffsetAndMetadata]] = {}
    for key, om in stored.items():
        parsed = parse_pending(key)
        if parsed is not None and parsed[0] == producer_id:
            mine[key] = (parsed[1], om)
    if commit and mine:
        await coordinator.commit_offsets(group_id, dict(mine.values()))
    if mine:
        await coordinator.delete_offsets(group_id, list(mine))
    if txn_seq > 0:
        # Last: a marker stopped before this is applied again whole by its retry.
        await coordinator.commit_offsets(group_id, {done_key(producer_id): OffsetAndMetadata(
            txn_seq)})
    return len(mine)
