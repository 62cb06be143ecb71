"""FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup, ListGroups, DescribeGroups:
wire <-> group state machine.

The state machine (``brokers.core.groups``) does the work; these functions check that this
broker coordinates the group, translate fields, and turn KafkaErrors into error codes.
"""

from __future__ import annotations

from brokers.core.coordinator import TopicPartition
from brokers.core.errors import (
    GroupIdNotFound,
    GroupSubscribedToTopic,
    InvalidGroupId,
    InvalidRequest,
    KafkaError,
    NonEmptyGroup,
    ProtocolViolation,
    UnknownTopicOrPartition,
)
from brokers.core.groups import MemberIdAssigned
from brokers.core.handlers.context import BrokerContext, Call
from brokers.core.protocol.consumer_protocol import ConsumerProtocolSubscription
from brokers.core.protocol.messages.delete_groups import (
    DeletableGroupResult,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetDeleteResponsePartition,
    OffsetDeleteResponseTopic,
)
from brokers.core.protocol.messages.describe_groups import (
    DescribedGroup,
    DescribedGroupMember,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
)
from brokers.core.protocol.messages.find_coordinator import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)
from brokers.core.protocol.messages.heartbeat import HeartbeatRequest, HeartbeatResponse
from brokers.core.protocol.messages.join_group import (
    JoinGroupRequest,
    JoinGroupResponse,
    JoinGroupResponseMember,
)
from brokers.core.protocol.messages.leave_group import (
    LeaveGroupRequest,
    LeaveGroupResponse,
    MemberResponse,
)
from brokers.core.protocol.messages.list_groups import (
    ListedGroup,
    ListGroupsRequest,
    ListGroupsResponse,
)
from brokers.core.protocol.messages.sync_group import SyncGroupRequest, SyncGroupResponse

GROUP_KEY = 0  # FindCoordinator key_type: 0 = consumer group, 1 = transaction
DEAD = "Dead"  # DescribeGroups state of a group the coordinator does not hold
EMPTY = "Empty"  # ... of one it holds only by its committed offsets


TRANSACTION_KEY = 1


def handle_find_coordinator(
    ctx: BrokerContext, call: Call, req: FindCoordinatorRequest
) -> FindCoordinatorResponse:
    try:
        if req.key_type == GROUP_KEY:
            broker = ctx.coordinator.group_coordinator(req.key)
        elif req.key_type == TRANSACTION_KEY:
            broker = ctx.transactions().coordinator_for(req.key)
        else:
            raise InvalidRequest(f"unknown coordinator key type {req.key_type}")
    except KafkaError as exc:
        return FindCoordinatorResponse(
            error_code=exc.code, error_message=exc.message or None, node_id=-1, host="", port=-1)
    return FindCoordinatorResponse(
        error_code=0, node_id=broker.node_id, host=broker.host, port=broker.port)


async def handle_join_group(
    ctx: BrokerContext, call: Call, req: JoinGroupRequest
) -> JoinGroupResponse:
    failed = JoinGroupResponse(
        error_code=0, generation_id=-1, protocol_name="", leader="", member_id=req.member_id)
    error = ctx.not_group_coordinator(req.group_id)
    if error is not None:
        failed.error_code = error.code
        return failed
    try:
        result = await ctx.groups.join(
            group_id=req.group_id,
            member_id=req.member_id,
            group_instance_id=req.group_instance_id,
            client_id=call.client_id or "",
            client_host=call.peer,
            session_timeout_ms=req.session_timeout_ms,
            rebalance_timeout_ms=req.rebalance_timeout_ms if call.api_version >= 1 else -1,
            protocol_type=req.protocol_type,
            protocols=[(p.name, bytes(p.metadata)) for p in req.protocols],
            require_known_member_id=call.api_version >= 4,
        )
    except MemberIdAssigned as exc:
        failed.error_code, failed.member_id = exc.code, exc.member_id
        return failed
    except KafkaError as exc:
        failed.error_code = exc.code
        return failed
    return JoinGroupResponse(
        error_code=0,
        generation_id=result.generation_id,
        protocol_type=req.protocol_type,  # v7+: the group's type, which the join matched
        protocol_name=result.protocol_name or "",
        leader=result.leader,
        member_id=result.member_id,
        members=[
            JoinGroupResponseMember(
                member_id=m.member_id, group_instance_id=m.group_instance_id, metadata=m.metadata)
            for m in result.members
        ],
    )


async def handle_sync_group(
    ctx: BrokerContext, call: Call, req: SyncGroupRequest
) -> SyncGroupResponse:
    error = ctx.not_group_coordinator(req.group_id)
    if error is None:
        try:
            result = await ctx.groups.sync(
                group_id=req.group_id, generation_id=req.generation_id,
                member_id=req.member_id,
                assignments={a.member_id: bytes(a.assignment) for a in req.assignments},
                group_instance_id=req.group_instance_id,
            )
        except KafkaError as exc:
            error = exc
        else:
            return SyncGroupResponse(error_code=0, protocol_type=result.protocol_type,
                                     protocol_name=result.protocol_name,
                                     assignment=result.assignment)
    return SyncGroupResponse(error_code=error.code, assignment=b"")


def handle_heartbeat(
    ctx: BrokerContext, call: Call, req: HeartbeatRequest
) -> HeartbeatResponse:
    error = ctx.not_group_coordinator(req.group_id)
    if error is None:
        try:
            ctx.groups.heartbeat(
                group_id=req.group_id, generation_id=req.generation_id, member_id=req.member_id,
                group_instance_id=req.group_instance_id)
        except KafkaError as exc:
            error = exc
    return HeartbeatResponse(error_code=error.code if error else 0)


def handle_leave_group(
    ctx: BrokerContext, call: Call, req: LeaveGroupRequest
) -> LeaveGroupResponse:
    error = ctx.not_group_coordinator(req.group_id)
    if error is not None:
        return LeaveGroupResponse(error_code=error.code)
    if call.api_version < 3:
        try:
            ctx.groups.leave(group_id=req.group_id, member_id=req.member_id)
        except KafkaError as exc:
            return LeaveGroupResponse(error_code=exc.code)
        return LeaveGroupResponse(error_code=0)
    # v3+ (KIP-345): a batch of members, each answered on its own.
    members = []
    for m in req.members:
        code = 0
        try:
            ctx.groups.leave(group_id=req.group_id, member_id=m.member_id,
                             group_instance_id=m.group_instance_id)
        except KafkaError as exc:
            code = exc.code
        members.append(MemberResponse(member_id=m.member_id,
                                      group_instance_id=m.group_instance_id, error_code=code))
    return LeaveGroupResponse(error_code=0, members=members)


def handle_list_groups(
    ctx: BrokerContext, call: Call, req: ListGroupsRequest
) -> ListGroupsResponse:
    """The groups this broker coordinates; admin clients ask every broker and merge."""
    wanted = set(req.states_filter)
    return ListGroupsResponse(error_code=0, groups=[
        ListedGroup(group_id=g, protocol_type=ptype, group_state=state.value)
        for g, ptype, state in ctx.groups.group_ids()
        if not wanted or state.value in wanted])


async def handle_describe_groups(
    ctx: BrokerContext, call: Call, req: DescribeGroupsRequest
) -> DescribeGroupsResponse:
    described = []
    for group_id in req.groups:
        error = ctx.not_group_coordinator(group_id)
        if error is not None:
            described.append(DescribedGroup(error_code=error.code, group_id=group_id))
            continue
        desc = ctx.groups.description(group_id)
        if desc is None:
            # No member and no rebalance here. Kafka keeps such a group while it has committed
            # offsets (Empty, until they expire or the group is deleted); without any, it is
            # Dead. Kafka's Java admin reads Empty as "resumable", Dead as "gone".
            try:
                committed = await ctx.coordinator.fetch_offsets(group_id, None)
            except KafkaError as exc:
                described.append(DescribedGroup(error_code=exc.code, group_id=group_id))
                continue
            described.append(DescribedGroup(error_code=0, group_id=group_id,
                                            group_state=EMPTY if committed else DEAD))
            continue
        described.append(DescribedGroup(
            error_code=0, group_id=group_id, group_state=desc.state.value,
            protocol_type=desc.protocol_type, protocol_data=desc.protocol_name,
            members=[DescribedGroupMember(
                member_id=m.member_id, group_instance_id=m.group_instance_id,
                client_id=m.client_id, client_host=m.client_host,
                member_metadata=m.metadata, member_assignment=m.assignment)
                for m in desc.members]))
    return DescribeGroupsResponse(groups=described)


async def handle_delete_groups(
    ctx: BrokerContext, call: Call, req: DeleteGroupsRequest
) -> DeleteGroupsResponse:
    results = []
    for group_id in req.groups_names:
        error = ctx.not_group_coordinator(group_id)
        if error is None:
            try:
                if not group_id:
                    raise InvalidGroupId("empty group id")
                await ctx.groups.delete_group(group_id)
            except KafkaError as exc:
                error = exc
        results.append(DeletableGroupResult(group_id=group_id,
                                            error_code=0 if error is None else error.code))
    return DeleteGroupsResponse(results=results)


async def handle_offset_delete(
    ctx: BrokerContext, call: Call, req: OffsetDeleteRequest
) -> OffsetDeleteResponse:
    try:
        error = ctx.not_group_coordinator(req.group_id)
        if error is not None:
            raise error
        if not req.group_id:
            raise InvalidGroupId("empty group id")
        subscribed = _subscribed_topics(ctx, req.group_id)
        committed = await ctx.coordinator.fetch_offsets(req.group_id, None)
        if ctx.groups.description(req.group_id) is None and not committed:
            raise GroupIdNotFound(f"no group {req.group_id!r} here")
    except KafkaError as exc:
        return OffsetDeleteResponse(error_code=exc.code)
    topics = ctx.coordinator.cluster().topics
    results: list[OffsetDeleteResponseTopic] = []
    doomed: list[TopicPartition] = []
    for t in req.topics:
        parts = []
        for p in t.partitions:
            if subscribed is None or t.name in subscribed:
                code = GroupSubscribedToTopic.code
            elif t.name not in topics:  # Kafka's check: the topic, not the partition
                code = UnknownTopicOrPartition.code
            else:
                code = 0
                doomed.append(TopicPartition(t.name, p.partition_index))
            parts.append(OffsetDeleteResponsePartition(partition_index=p.partition_index,
                                                       error_code=code))
        results.append(OffsetDeleteResponseTopic(name=t.name, partitions=parts))
    if doomed:
        try:
            await ctx.coordinator.delete_offsets(req.group_id, doomed)
        except KafkaError as exc:
            return OffsetDeleteResponse(error_code=exc.code)
    return OffsetDeleteResponse(error_code=0, topics=results)


def _subscribed_topics(ctx: BrokerContext, group_id: str) -> set[str] | None:
    """The topics the group's live members consume: empty for an empty group, None when
    unknown (a rebalance before the protocol is chosen, or metadata that does not parse),
    which Kafka counts as subscribed to every topic. NON_EMPTY_GROUP for a group with members
    that does not speak the consumer protocol (its topics cannot be known)."""
    desc = ctx.groups.description(group_id)
    if desc is None or not desc.members:
        return set()
    if desc.protocol_type != "consumer":
        raise NonEmptyGroup(f"group {group_id!r} has members and protocol type "
                            f"{desc.protocol_type!r}")
    topics: set[str] = set()
    for m in desc.members:
        if not m.metadata:
            return None
        try:
            topics.update(ConsumerProtocolSubscription.decode(m.metadata).topics)
        except ProtocolViolation:
            return None
    return topics
