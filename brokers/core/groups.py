"""The consumer-group state machine (JoinGroup/SyncGroup/Heartbeat/LeaveGroup/OffsetCommit).

Shared by both architectures: the protocol logic lives here, and everything that must outlive
this broker or be visible to peers (members, partition owners, committed offsets) goes through
the Coordinator seam, which is where ZooKeeper and DSBS differ.

States follow Kafka's classic group coordinator:

    EMPTY --join--> PREPARING_REBALANCE --all joined / deadline--> COMPLETING_REBALANCE
      ^                  ^                                              | leader's SyncGroup
      |                  +---- join / leave / session expiry -----------+-----> STABLE
      +---------------- last member gone ------------------------------------------+

"join" on the way back to PREPARING_REBALANCE is a new member, a stable group's leader, or a
member whose protocol metadata changed (a cooperative consumer giving partitions up, KIP-429);
a known member rejoining unchanged gets the current generation back, as from Kafka 2.8.

Time is passed in through ``clock`` and ``tick()`` so tests drive expiry without sleeping.
Member metadata and assignments are opaque bytes except that assignments of protocol type
"consumer" are parsed (best effort) to fill the ownership registry.

Static membership (KIP-345): a member that joins with a ``group.instance.id`` is known by it. When
it restarts and joins again (without its old member id) within its session timeout, it takes
over its old place: a new member id, the same assignment, and, in a stable group whose protocol
it does not change, no rebalance; the other members never notice. Its previous incarnation is
fenced (FENCED_INSTANCE_ID): its Heartbeat, SyncGroup and OffsetCommit, which name the
instance id, get FENCED_INSTANCE_ID rather than UNKNOWN_MEMBER_ID. A static member sends no
LeaveGroup when it stops, so only its session timeout removes it, or a LeaveGroup (v3+) naming
it by instance id alone (an operator removing it, as Kafka's admin tools do).
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum

from brokers.core.coordinator import Coordinator, MemberRecord, OffsetAndMetadata, TopicPartition
from brokers.core.errors import (
    FencedInstanceId,
    GroupIdNotFound,
    GroupMaxSizeReached,
    IllegalGeneration,
    InconsistentGroupProtocol,
    InvalidGroupId,
    InvalidSessionTimeout,
    KafkaError,
    MemberIdRequired,
    NonEmptyGroup,
    NotCoordinator,
    RebalanceInProgress,
    UnknownMemberId,
)

log = logging.getLogger("twinbench.groups")

# Decodes a "consumer" protocol assignment into partitions; injected so this module does not
# depend on the codec's layout (and tests can pass a trivial one).
AssignmentParser = Callable[[bytes], list[TopicPartition]]


class GroupState(Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"


@dataclass(frozen=True, slots=True)
class GroupConfig:
    # Accepted session timeouts (group.min/max.session.timeout.ms).
    min_session_timeout_ms: int = 1_000
    max_session_timeout_ms: int = 300_000
    # Delay before completing the first rebalance of an empty group, so members that start
    # together share one generation instead of cascading rebalances.
    initial_rebalance_delay_ms: int = 100
    # Members plus pending member ids one group may hold (group.max.size).
    max_size: int = 1000


@dataclass(frozen=True, slots=True)
class JoinedMember:
    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True, slots=True)
class JoinResult:
    member_id: str
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    members: tuple[JoinedMember, ...] = ()  # only the leader gets the member list


@dataclass(frozen=True, slots=True)
class SyncResult:
    assignment: bytes
    protocol_type: str | None = None
    protocol_name: str | None = None


@dataclass(frozen=True, slots=True)
class DescribedMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes  # the member's metadata for the group's chosen protocol
    assignment: bytes  # what the leader assigned it (empty before SyncGroup)


@dataclass(frozen=True, slots=True)
class GroupDescription:
    group_id: str
    state: GroupState
    protocol_type: str
    protocol_name: str
    members: tuple[DescribedMember, ...]


@dataclass(slots=True)
class _Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    last_heartbeat: float
    assignment: bytes = b""
    join_waiter: asyncio.Future[JoinResult] | None = None
    sync_waiter: asyncio.Future[SyncResult] | None = None

    def metadata_for(self, protocol: str) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        return b""


@dataclass(slots=True)
class _Group:
    group_id: str
    state: GroupState = GroupState.EMPTY
    generation: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str = ""
    members: dict[str, _Member] = field(default_factory=dict)
    # Member ids handed out with MEMBER_ID_REQUIRED, not yet joined (KIP-394), each with the
    # clock time after which it is forgotten: a client that never rejoins leaves nothing behind.
    pending_ids: dict[str, float] = field(default_factory=dict)
    rebalance_deadline: float = 0.0
    # group.instance.id -> the member id its current incarnation joined with (KIP-345).
    static_members: dict[str, str] = field(default_factory=dict)
    # The coordinator's coordination_epoch when this broker took the group: once it moves,
    # the hold may have lapsed and this state is forgotten (``GroupCoordinator._held``).
    epoch: int = 0


class GroupCoordinator:
    """All groups this broker coordinates. Methods raise KafkaError for the client to see."""

    def __init__(
        self,
        coordinator: Coordinator,
        config: GroupConfig,
        parse_assignment: AssignmentParser | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._coordinator = coordinator
        self._config = config
        self._parse_assignment = parse_assignment
        self._clock = clock
        self._groups: dict[str, _Group] = {}
        self._background: set[asyncio.Task[None]] = set()

    # --- introspection ----------------------------------------------------------------------
    def describe(self, group_id: str) -> tuple[GroupState, int, list[str]]:
        group = self._held(group_id)
        if group is None:
            return GroupState.EMPTY, 0, []
        return group.state, group.generation, list(group.members)

    def group_ids(self) -> list[tuple[str, str, GroupState]]:
        """(group id, protocol type, state) of every group this broker holds (ListGroups)."""
        return [(g.group_id, g.protocol_type or "", g.state) for g in self._groups.values()]

    def description(self, group_id: str) -> GroupDescription | None:
        """What DescribeGroups reports about one group; None when this broker holds none."""
        group = self._held(group_id)
        if group is None:
            return None
        protocol = group.protocol_name or ""
        return GroupDescription(
            group_id=group.group_id, state=group.state, protocol_type=group.protocol_type or "",
            protocol_name=protocol,
            members=tuple(DescribedMember(
                member_id=m.member_id, group_instance_id=m.group_instance_id,
                client_id=m.client_id, client_host=m.client_host,
                metadata=m.metadata_for(protocol) if protocol else b"",
                assignment=m.assignment) for m in group.members.values()))

    # --- JoinGroup --------------------------------------------------------------------------
    async def join(
        self,
        *,
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        client_id: str,
        client_host: str,
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        protocol_type: str,
        protocols: list[tuple[str, bytes]],
        require_known_member_id: bool,
    ) -> JoinResult:
        self._check_join(group_id, session_timeout_ms)
        if rebalance_timeout_ms < 0:  # JoinGroup v0 has none: the session timeout stands in
            rebalance_timeout_ms = session_timeout_ms
        group = self._held(group_id)
        if group is None:
            group = self._groups[group_id] = _Group(
                group_id, epoch=self._coordinator.coordination_epoch(group_id))
        if not protocols or (
            group.members
            and (
                protocol_type != group.protocol_type
                or not self._common_protocols(group, protocols)
            )
        ):
            raise InconsistentGroupProtocol(f"group {group_id!r}: no protocol in common")
        # Set before any await: a join arriving while this one registers its member (a
        # ZooKeeper write on the zk twin) compares its protocol type with this one, and must
        # not find the group with members but without a type (a spurious
        # INCONSISTENT_GROUP_PROTOCOL).
        group.protocol_type = protocol_type
        if group_instance_id is not None:
            known = group.static_members.get(group_instance_id)
            if known is not None and not member_id:
                return await self._replace_static_member(
                    group, known, client_id, client_host, session_timeout_ms,
                    rebalance_timeout_ms, protocols)
            if known is not None and member_id != known:
                raise FencedInstanceId(
                    f"group.instance.id {group_instance_id!r} now belongs to member {known!r}")
        member_id = self._joining_id(
            group, member_id, client_id, session_timeout_ms,
            require_known_member_id and group_instance_id is None,
        )
        now = self._clock()
        member = group.members.get(member_id)
        if member is None:
            member = _Member(
                member_id, group_instance_id, client_id, client_host, session_timeout_ms,
                rebalance_timeout_ms, protocol_type, protocols, now,
            )
            await self._add_member(group, member)
            now = self._clock()
            return await self._await_join(group, member, now)
        member.last_heartbeat = now
        current = self._current_generation(group, member, protocols)
        if current is not None:
            return current
        member.protocols = protocols
        member.session_timeout_ms = session_timeout_ms
        member.rebalance_timeout_ms = rebalance_timeout_ms
        return await self._await_join(group, member, now)

    @staticmethod
    def _current_generation(
        group: _Group, member: _Member, protocols: list[tuple[str, bytes]]
    ) -> JoinResult | None:
        """The answer to a known member rejoining when no rebalance is needed, or None.

        As Kafka's coordinator: a member whose protocols and metadata are unchanged gets the
        current generation back, and then syncs for the assignment it already has; in
        CompletingRebalance the leader gets the member list again (it may have lost the first
        answer). A stable group's leader always starts a rebalance (it rejoins to have topic
        changes reassigned, which its metadata does not show), and changed metadata always
        does: a cooperative consumer (KIP-429) rejoins after giving up partitions, its
        subscription now listing fewer owned ones, so that the follow-up rebalance hands
        them to their new owners. Rebalancing on every rejoin instead fails the other
        members' SyncGroups and sends the whole group round again."""
        stable = group.state is GroupState.STABLE
        completing = group.state is GroupState.COMPLETING_REBALANCE
        if not (stable or completing) or group.protocol_name is None:
            return None
        if member.protocols != protocols:
            return None
        is_leader = member.member_id == group.leader_id
        if stable and is_leader:
            return None
        members: tuple[JoinedMember, ...] = ()
        if is_leader:
            members = tuple(
                JoinedMember(m.member_id, m.group_instance_id,
                             m.metadata_for(group.protocol_name))
                for m in group.members.values())
        return JoinResult(
            member_id=member.member_id, generation_id=group.generation,
            protocol_type=group.protocol_type, protocol_name=group.protocol_name,
            leader=group.leader_id, members=members)

    async def _replace_static_member(
        self, group: _Group, old_id: str, client_id: str, client_host: str,
        session_timeout_ms: int, rebalance_timeout_ms: int, protocols: list[tuple[str, bytes]],
    ) -> JoinResult:
        """A static member rejoining without its member id (KIP-345): it takes over its old
        entry under a new id. A stable group whose protocol choice it leaves unchanged does not
        rebalance; otherwise it joins the (possibly new) rebalance like any member."""
        member = group.members.pop(old_id)
        fenced = FencedInstanceId(f"member {old_id!r} was replaced by a new incarnation")
        self._fail(member.join_waiter, fenced)
        self._fail(member.sync_waiter, fenced)
        member.join_waiter = member.sync_waiter = None
        new_id = f"{client_id or 'member'}-{uuid.uuid4()}"
        old_metadata = (member.metadata_for(group.protocol_name)
                        if group.protocol_name is not None else None)
        member.member_id = new_id
        member.client_id, member.client_host = client_id, client_host
        member.session_timeout_ms = session_timeout_ms
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.protocols = protocols
        now = member.last_heartbeat = self._clock()
        group.members[new_id] = member
        assert member.group_instance_id is not None
        group.static_members[member.group_instance_id] = new_id
        previous_leader = group.leader_id
        if previous_leader == old_id:
            group.leader_id = new_id
        log.info("group %s: static member %s rejoined as %s (was %s)", group.group_id,
                 member.group_instance_id, new_id, old_id)
        self._unregister_later(group.group_id, old_id)
        await self._coordinator.register_member(
            group.group_id, MemberRecord(new_id, client_id, client_host))
        if group.members.get(new_id) is not member:
            raise UnknownMemberId(f"member {new_id!r} was removed while joining")
        if (group.state is GroupState.STABLE and group.protocol_name is not None
                and member.metadata_for(group.protocol_name) == old_metadata
                and any(name == group.protocol_name for name, _ in protocols)):
            await self._record_owners(group)
            # The old leader id, as Kafka answers: the member does not take itself for the
            # leader and reassign, which a stable group would never hand out.
            return JoinResult(
                member_id=new_id, generation_id=group.generation,
                protocol_type=group.protocol_type, protocol_name=group.protocol_name,
                leader=previous_leader,
            )
        return await self._await_join(group, member, now)

    def _check_join(self, group_id: str, session_timeout_ms: int) -> None:
        if not group_id:
            raise InvalidGroupId("empty group id")
        cfg = self._config
        if not cfg.min_session_timeout_ms <= session_timeout_ms <= cfg.max_session_timeout_ms:
            raise InvalidSessionTimeout(
                f"session timeout {session_timeout_ms} ms outside "
                f"[{cfg.min_session_timeout_ms}, {cfg.max_session_timeout_ms}]"
            )

    def _joining_id(
        self,
        group: _Group,
        member_id: str,
        client_id: str,
        session_timeout_ms: int,
        require_known_member_id: bool,
    ) -> str:
        """The member id a JoinGroup joins with: its own, if the group knows it, or a new one
        (which a client asking for KIP-394 gets back first, with MEMBER_ID_REQUIRED)."""
        if member_id:
            if member_id not in group.members and member_id not in group.pending_ids:
                raise UnknownMemberId(f"member {member_id!r} is not in group {group.group_id!r}")
            return member_id
        # Pending ids count: otherwise a client asking for ids in a loop (each JoinGroup
        # without one gets a fresh id) grows the group without bound.
        max_size = self._config.max_size
        if len(group.members) + len(group.pending_ids) >= max_size:
            raise GroupMaxSizeReached(
                f"group {group.group_id!r} has {len(group.members)} members and "
                f"{len(group.pending_ids)} pending member ids (max_size={max_size})")
        member_id = f"{client_id or 'member'}-{uuid.uuid4()}"
        if require_known_member_id:
            # KIP-394: the id is kept for one session timeout, waiting for the rejoin.
            group.pending_ids[member_id] = self._clock() + session_timeout_ms / 1000
            raise MemberIdAssigned(member_id)
        return member_id

    async def _add_member(self, group: _Group, member: _Member) -> None:
        """Put a new member in the group and in the membership registry; if registering fails
        it leaves the group again, and if it was removed meanwhile the join fails."""
        member_id = member.member_id
        # In the group before the (possibly remote) registration, so that a tick() during
        # the await neither drops the group as empty nor orphans this member.
        group.members[member_id] = member
        group.pending_ids.pop(member_id, None)
        if member.group_instance_id is not None:
            group.static_members[member.group_instance_id] = member_id
        try:
            await self._coordinator.register_member(
                group.group_id, MemberRecord(member_id, member.client_id, member.client_host)
            )
        except KafkaError:
            if group.members.get(member_id) is member:
                del group.members[member_id]
            raise
        if group.members.get(member_id) is not member:
            raise UnknownMemberId(f"member {member_id!r} was removed while joining")

    async def _await_join(self, group: _Group, member: _Member, now: float) -> JoinResult:
        """Wait in the rebalance for the generation's JoinGroup answer (starting the rebalance
        unless one is under way)."""
        if member.join_waiter is not None and not member.join_waiter.done():
            # A duplicate JoinGroup from the same member: the newer request supersedes.
            member.join_waiter.set_exception(RebalanceInProgress("superseded by a newer join"))
        waiter: asyncio.Future[JoinResult] = asyncio.get_running_loop().create_future()
        member.join_waiter = waiter
        if group.state is not GroupState.PREPARING_REBALANCE:
            self._prepare_rebalance(group, now, initial=group.state is GroupState.EMPTY)
        self._maybe_complete_join(group, now)
        return await waiter

    @staticmethod
    def _common_protocols(group: _Group, protocols: list[tuple[str, bytes]]) -> set[str]:
        common = {name for name, _ in protocols}
        for m in group.members.values():
            common &= {name for name, _ in m.protocols}
        return common

    @classmethod
    def _select_protocol(cls, group: _Group) -> str:
        """The protocol of the new generation, chosen as Kafka chooses it: among those every
        member offers, the one most members list first. A group moving from an eager to the
        cooperative assignor (KIP-429's two rolling bounces) offers both for a while, in
        different orders, and the majority's preference decides, not whichever member leads.
        A tie goes to the leader's order (Kafka leaves it to its hash map's order)."""
        leader = group.members[group.leader_id]
        common = cls._common_protocols(group, leader.protocols)
        votes: dict[str, int] = {}
        for m in group.members.values():
            choice = next(name for name, _ in m.protocols if name in common)
            votes[choice] = votes.get(choice, 0) + 1
        best = max(votes.values())
        return next(name for name, _ in leader.protocols if votes.get(name) == best)

    def _prepare_rebalance(self, group: _Group, now: float, *, initial: bool) -> None:
        if group.state is GroupState.COMPLETING_REBALANCE:
            for m in group.members.values():
                self._fail(m.sync_waiter, RebalanceInProgress("group is rebalancing"))
                m.sync_waiter = None
        group.state = GroupState.PREPARING_REBALANCE
        timeout_ms = max((m.rebalance_timeout_ms for m in group.members.values()), default=0)
        if initial:
            timeout_ms = min(timeout_ms, self._config.initial_rebalance_delay_ms)
        group.rebalance_deadline = now + timeout_ms / 1000
        log.info("group %s: preparing rebalance (generation %d)", group.group_id, group.generation)

    def _maybe_complete_join(self, group: _Group, now: float) -> None:
        if group.state is not GroupState.PREPARING_REBALANCE:
            return
        # Member ids handed out with MEMBER_ID_REQUIRED count as members yet to join, as in
        # Kafka: the consumer that asked for one is a moment from joining, and completing
        # without it would start another rebalance as soon as it does. An id never claimed
        # stops counting when it expires (tick), like a member that does not rejoin.
        all_joined = (not group.pending_ids
                      and all(m.join_waiter is not None for m in group.members.values()))
        # An empty group's first rebalance waits out the initial delay even when all joined.
        if (all_joined and group.generation > 0) or now >= group.rebalance_deadline:
            self._complete_join(group)

    def _complete_join(self, group: _Group) -> None:
        for member_id in [m for m, mem in group.members.items() if mem.join_waiter is None]:
            self._remove_member(group, member_id, reason="did not rejoin in time")
        if not group.members:
            group.state = GroupState.EMPTY
            group.generation += 1
            group.leader_id = ""
            return
        group.generation += 1
        first = next(iter(group.members.values()))
        if group.leader_id not in group.members:
            group.leader_id = first.member_id
        group.protocol_name = self._select_protocol(group)
        group.state = GroupState.COMPLETING_REBALANCE
        everyone = tuple(
            JoinedMember(m.member_id, m.group_instance_id, m.metadata_for(group.protocol_name))
            for m in group.members.values()
        )
        for m in group.members.values():
            result = JoinResult(
                member_id=m.member_id,
                generation_id=group.generation,
                protocol_type=group.protocol_type,
                protocol_name=group.protocol_name,
                leader=group.leader_id,
                members=everyone if m.member_id == group.leader_id else (),
            )
            waiter, m.join_waiter = m.join_waiter, None
            if waiter is not None and not waiter.done():
                waiter.set_result(result)
        log.info(
            "group %s: generation %d with %d members, leader %s",
            group.group_id, group.generation, len(group.members), group.leader_id,
        )

    # --- SyncGroup --------------------------------------------------------------------------
    async def sync(
        self,
        *,
        group_id: str,
        generation_id: int,
        member_id: str,
        assignments: Mapping[str, bytes],
        group_instance_id: str | None = None,
    ) -> SyncResult:
        group, member = self._member(group_id, member_id, group_instance_id)
        if generation_id != group.generation:
            raise IllegalGeneration(f"generation {generation_id} != {group.generation}")
        if group.state is GroupState.PREPARING_REBALANCE:
            raise RebalanceInProgress("group is rebalancing")
        member.last_heartbeat = self._clock()
        if group.state is GroupState.STABLE:
            return SyncResult(member.assignment, group.protocol_type, group.protocol_name)
        waiter: asyncio.Future[SyncResult] = asyncio.get_running_loop().create_future()
        self._fail(member.sync_waiter, RebalanceInProgress("superseded by a newer sync"))
        member.sync_waiter = waiter
        if member_id == group.leader_id:
            for m in group.members.values():
                m.assignment = bytes(assignments.get(m.member_id, b""))
            group.state = GroupState.STABLE
            await self._record_owners(group)
            for m in group.members.values():
                w, m.sync_waiter = m.sync_waiter, None
                if w is not None and not w.done():
                    w.set_result(SyncResult(m.assignment, group.protocol_type, group.protocol_name))
        return await waiter

    async def _record_owners(self, group: _Group) -> None:
        if self._parse_assignment is None or group.protocol_type != "consumer":
            return
        owners: dict[TopicPartition, str] = {}
        for m in group.members.values():
            try:
                for tp in self._parse_assignment(m.assignment):
                    owners[tp] = m.member_id
            except Exception as exc:  # opaque bytes from a client: never fatal
                log.warning("group %s: unparseable assignment from %s: %s",
                            group.group_id, m.member_id, exc)
        await self._coordinator.record_owners(group.group_id, owners)

    # --- Heartbeat / LeaveGroup -------------------------------------------------------------
    def heartbeat(
        self, *, group_id: str, generation_id: int, member_id: str,
        group_instance_id: str | None = None,
    ) -> None:
        group, member = self._member(group_id, member_id, group_instance_id)
        member.last_heartbeat = self._clock()
        if generation_id != group.generation:
            raise IllegalGeneration(f"generation {generation_id} != {group.generation}")
        if group.state is GroupState.PREPARING_REBALANCE:
            raise RebalanceInProgress("group is rebalancing")

    def leave(
        self, *, group_id: str, member_id: str, group_instance_id: str | None = None
    ) -> None:
        """A member leaves; from LeaveGroup v3 it may be named by ``group_instance_id``
        alone (member id ""), and the static member holding that id leaves."""
        if group_instance_id is not None and not member_id:
            group = self._held(group_id)
            member_id = (group.static_members.get(group_instance_id, "") if group else "")
            if not member_id:
                raise UnknownMemberId(
                    f"no member with group.instance.id {group_instance_id!r} in {group_id!r}")
        group = self._held(group_id)
        if group is not None and member_id in group.pending_ids:
            # A consumer told MEMBER_ID_REQUIRED that changes its mind (librdkafka leaves
            # with that id when its subscription changes mid-join) gives the id back, as in
            # Kafka; otherwise the rebalance would wait for it until it expired.
            del group.pending_ids[member_id]
            log.info("group %s: pending member %s left", group_id, member_id)
            self._maybe_complete_join(group, self._clock())
            return
        group, _ = self._member(group_id, member_id, group_instance_id)
        self._remove_member(group, member_id, reason="left the group")
        self._after_membership_change(group)

    # --- offsets ----------------------------------------------------------------------------
    async def commit(
        self,
        *,
        group_id: str,
        generation_id: int,
        member_id: str,
        offsets: Mapping[TopicPartition, OffsetAndMetadata],
        group_instance_id: str | None = None,
    ) -> None:
        if not group_id:
            raise InvalidGroupId("empty group id")
        group = self._held(group_id)
        manual = generation_id < 0 and not member_id
        if not manual:
            # Members of a managed group commit under their current generation only.
            group, member = self._member(group_id, member_id, group_instance_id)
            if generation_id != group.generation:
                raise IllegalGeneration(f"generation {generation_id} != {group.generation}")
            if group.state is GroupState.COMPLETING_REBALANCE:
                raise RebalanceInProgress("group is rebalancing")
            member.last_heartbeat = self._clock()
        elif group is not None and group.members:
            raise UnknownMemberId(f"group {group_id!r} has members; commit as one of them")
        await self._coordinator.commit_offsets(group_id, offsets)

    async def delete_group(self, group_id: str) -> None:
        """DeleteGroups: an empty group (or one known only by its offsets) is forgotten and
        its committed offsets deleted; NON_EMPTY_GROUP while it has members."""
        group = self._held(group_id)
        if group is not None and group.members:
            raise NonEmptyGroup(f"group {group_id!r} has {len(group.members)} members")
        if group is None and not await self._coordinator.fetch_offsets(group_id, None):
            raise GroupIdNotFound(f"no group {group_id!r} here")
        await self._coordinator.delete_offsets(group_id, None)
        group = self._groups.get(group_id)
        if group is not None and not group.members:  # nobody joined meanwhile
            del self._groups[group_id]

    # --- time -------------------------------------------------------------------------------
    def tick(self) -> None:
        """Expire silent members and unclaimed pending ids; finish rebalances whose deadline
        passed."""
        now = self._clock()
        for group in list(self._groups.values()):
            if self._held(group.group_id) is None:
                continue  # forgotten: this broker's hold on it may have lapsed
            if group.pending_ids:
                for member_id in [m for m, t in group.pending_ids.items() if t <= now]:
                    del group.pending_ids[member_id]
            # A member waiting in a JoinGroup or a SyncGroup is alive (Kafka counts both as
            # heartbeats): the rebalance deadline bounds the first, the leader's session the
            # second (if the leader dies, the rebalance it causes answers every SyncGroup).
            expired = [
                m.member_id
                for m in group.members.values()
                if m.join_waiter is None and not _waiting(m.sync_waiter)
                and now - m.last_heartbeat > m.session_timeout_ms / 1000
            ]
            for member_id in expired:
                self._remove_member(group, member_id, reason="session expired")
            if expired:
                self._after_membership_change(group)
            self._maybe_complete_join(group, now)
            if group.state is GroupState.EMPTY and not group.members and not group.pending_ids:
                del self._groups[group.group_id]

    async def close(self) -> None:
        for group in self._groups.values():
            for m in group.members.values():
                self._fail(m.join_waiter, RebalanceInProgress("broker shutting down"))
                self._fail(m.sync_waiter, RebalanceInProgress("broker shutting down"))
        for task in list(self._background):
            await task

    # --- helpers ----------------------------------------------------------------------------
    def _held(self, group_id: str) -> _Group | None:
        """The group as this broker holds it, or None. A group taken under an earlier
        coordination epoch is forgotten first: the broker may have lost it and won it back
        meanwhile (cut off, fenced, healed), and the group's coordinators in between knew
        other members and generations. Its members hear NOT_COORDINATOR on a pending join or
        sync and UNKNOWN_MEMBER_ID afterwards, and rejoin; so a member that kept reading from
        its old assignment cannot commit under the old generation (the nemesis saw one move a
        committed offset backwards on the Raft twin)."""
        group = self._groups.get(group_id)
        if group is None:
            return None
        try:
            epoch = self._coordinator.coordination_epoch(group_id)
        except KafkaError:
            return group  # no answer now (not started, closing): keep it until there is one
        if epoch == group.epoch:
            return group
        log.info("group %s: forgotten at generation %d with %d members (coordination epoch "
                 "%d -> %d: this broker may have lost the group meanwhile)", group_id,
                 group.generation, len(group.members), group.epoch, epoch)
        del self._groups[group_id]
        lapsed = NotCoordinator(f"this broker's hold on group {group_id!r} lapsed")
        for m in group.members.values():
            self._fail(m.join_waiter, lapsed)
            self._fail(m.sync_waiter, lapsed)
        return None

    def _member(
        self, group_id: str, member_id: str, group_instance_id: str | None = None
    ) -> tuple[_Group, _Member]:
        """The group and member a request names; a request naming a static member's instance
        id under another member id comes from a replaced incarnation: FENCED_INSTANCE_ID."""
        group = self._held(group_id)
        if group is not None and group_instance_id is not None:
            holder = group.static_members.get(group_instance_id)
            if holder is not None and holder != member_id:
                raise FencedInstanceId(f"group.instance.id {group_instance_id!r} belongs to "
                                       f"member {holder!r}, not {member_id!r}")
        member = group.members.get(member_id) if group else None
        if group is None or member is None:
            raise UnknownMemberId(f"member {member_id!r} is not in group {group_id!r}")
        return group, member

    def _remove_member(self, group: _Group, member_id: str, *, reason: str) -> None:
        member = group.members.pop(member_id, None)
        if member is None:
            return
        log.info("group %s: member %s removed (%s)", group.group_id, member_id, reason)
        if member.group_instance_id is not None and (
                group.static_members.get(member.group_instance_id) == member_id):
            del group.static_members[member.group_instance_id]
        self._fail(member.join_waiter, UnknownMemberId(reason))
        self._fail(member.sync_waiter, UnknownMemberId(reason))
        self._unregister_later(group.group_id, member_id)

    def _unregister_later(self, group_id: str, member_id: str) -> None:
        task = asyncio.get_running_loop().create_task(self._unregister(group_id, member_id))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _unregister(self, group_id: str, member_id: str) -> None:
        try:
            await self._coordinator.unregister_member(group_id, member_id)
        except KafkaError as exc:
            # The registry entry is ephemeral (ZK) or local; a failure here only delays cleanup.
            log.warning("group %s: could not unregister %s: %s", group_id, member_id, exc)

    def _after_membership_change(self, group: _Group) -> None:
        now = self._clock()
        if not group.members:
            if group.state is not GroupState.EMPTY:
                group.state = GroupState.EMPTY
                group.generation += 1
            return
        if group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._prepare_rebalance(group, now, initial=False)
        self._maybe_complete_join(group, now)

    @staticmethod
    def _fail(waiter: asyncio.Future | None, exc: BaseException) -> None:
        if waiter is not None and not waiter.done():
            waiter.set_exception(exc)


def _waiting(waiter: asyncio.Future | None) -> bool:
    """A request is held on this future (one whose client went away is done: cancelled)."""
    return waiter is not None and not waiter.done()


class MemberIdAssigned(MemberIdRequired):
    """MEMBER_ID_REQUIRED carrying the id the client must rejoin with (KIP-394)."""

    def __init__(self, member_id: str) -> None:
        super().__init__("rejoin with the assigned member id")
        self.member_id = member_id
