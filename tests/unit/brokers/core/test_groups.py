"""The consumer-group state machine, driven with a manual clock and an in-memory registry."""

from __future__ import annotations

import asyncio

import pytest

from brokers.core.coordinator import MemberRecord, OffsetAndMetadata, TopicPartition
from brokers.core.errors import (
    FencedInstanceId,
    GroupMaxSizeReached,
    IllegalGeneration,
    InconsistentGroupProtocol,
    InvalidSessionTimeout,
    NotCoordinator,
    RebalanceInProgress,
    UnknownMemberId,
)
from brokers.core.groups import GroupConfig, GroupCoordinator, GroupState, MemberIdAssigned
from brokers.core.protocol.consumer_protocol import (
    ConsumerProtocolSubscription,
    ConsumerTopicPartitions,
)


class Registry:
    """The slice of the Coordinator seam the group state machine uses, kept in dicts."""

    def __init__(self) -> None:
        self.members: dict[str, dict[str, MemberRecord]] = {}
        self.owners: dict[str, dict[TopicPartition, str]] = {}
        self.offsets: dict[str, dict[TopicPartition, OffsetAndMetadata]] = {}
        # What coordination_epoch answers: a test moves it to say the hold may have lapsed.
        self.epoch = 0

    def coordination_epoch(self, group_id):
        return self.epoch

    async def register_member(self, group_id, member):
        self.members.setdefault(group_id, {})[member.member_id] = member

    async def unregister_member(self, group_id, member_id):
        self.members.get(group_id, {}).pop(member_id, None)

    async def record_owners(self, group_id, owners):
        self.owners[group_id] = dict(owners)

    async def commit_offsets(self, group_id, offsets):
        self.offsets.setdefault(group_id, {}).update(offsets)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def make(delay_ms: int = 0, max_size: int = 1000):
    registry, clock = Registry(), Clock()

    def parse(assignment: bytes) -> list[TopicPartition]:
        return [TopicPartition("t", int(p)) for p in assignment.decode().split(",") if p]

    groups = GroupCoordinator(
        registry,  # type: ignore[arg-type]
        GroupConfig(min_session_timeout_ms=1000, max_session_timeout_ms=60_000,
                    initial_rebalance_delay_ms=delay_ms, max_size=max_size),
        parse_assignment=parse,
        clock=clock,
    )
    return groups, registry, clock


def join_args(member_id: str = "", **overrides):
    args = dict(
        group_id="g", member_id=member_id, group_instance_id=None, client_id="c",
        client_host="127.0.0.1:1", session_timeout_ms=10_000, rebalance_timeout_ms=5_000,
        protocol_type="consumer", protocols=[("range", b"meta")],
        require_known_member_id=False,
    )
    args.update(overrides)
    return args


async def settle(groups: GroupCoordinator, clock: Clock, seconds: float = 0.0) -> None:
    """Let pending tasks run, advance the clock, and tick once."""
    await asyncio.sleep(0)
    clock.now += seconds
    groups.tick()
    await asyncio.sleep(0)


def test_single_member_joins_syncs_and_becomes_stable():
    async def scenario():
        groups, registry, clock = make()
        join = asyncio.ensure_future(groups.join(**join_args()))
        await settle(groups, clock)
        result = await join
        assert result.generation_id == 1 and result.leader == result.member_id
        assert [m.metadata for m in result.members] == [b"meta"]
        sync = await groups.sync(group_id="g", generation_id=1, member_id=result.member_id,
                                 assignments={result.member_id: b"0,1"})
        assert sync.assignment == b"0,1"
        assert groups.describe("g")[0] is GroupState.STABLE
        assert set(registry.members["g"]) == {result.member_id}
        assert registry.owners["g"] == {TopicPartition("t", 0): result.member_id,
                                        TopicPartition("t", 1): result.member_id}

    asyncio.run(scenario())


def test_kip394_member_id_required_then_rejoin_with_it():
    async def scenario():
        groups, _, clock = make()
        with pytest.raises(MemberIdAssigned) as info:
            await groups.join(**join_args(require_known_member_id=True))
        member_id = info.value.member_id
        assert member_id.startswith("c-")
        rejoin = join_args(member_id, require_known_member_id=True)
        join = asyncio.ensure_future(groups.join(**rejoin))
        await settle(groups, clock)
        assert (await join).member_id == member_id

    asyncio.run(scenario())


def test_second_member_triggers_rebalance_and_only_leader_gets_member_list():
    async def scenario():
        groups, _, clock = make()
        first = asyncio.ensure_future(groups.join(**join_args()))
        await settle(groups, clock)
        a = await first
        await groups.sync(group_id="g", generation_id=1, member_id=a.member_id,
                          assignments={a.member_id: b"0"})
        b_join = asyncio.ensure_future(groups.join(**join_args(client_id="d")))
        await settle(groups, clock)
        # The existing member learns of the rebalance through its heartbeat, then rejoins.
        with pytest.raises(RebalanceInProgress):
            groups.heartbeat(group_id="g", generation_id=1, member_id=a.member_id)
        a_join = asyncio.ensure_future(groups.join(**join_args(a.member_id)))
        await settle(groups, clock)
        a2, b = await a_join, await b_join
        assert a2.generation_id == b.generation_id == 2
        assert a2.leader == a.member_id
        assert len(a2.members) == 2 and b.members == ()
        b_sync = asyncio.ensure_future(groups.sync(group_id="g", generation_id=2,
                                                   member_id=b.member_id, assignments={}))
        a_sync = await groups.sync(group_id="g", generation_id=2, member_id=a.member_id,
                                   assignments={a.member_id: b"0", b.member_id: b"1"})
        assert a_sync.assignment == b"0"
        assert (await b_sync).assignment == b"1"

    asyncio.run(scenario())


def test_member_that_does_not_rejoin_is_dropped_at_the_rebalance_deadline():
    async def scenario():
        groups, registry, clock = make()
        first = asyncio.ensure_future(groups.join(**join_args()))
        await settle(groups, clock)
        a = await first
        await groups.sync(group_id="g", generation_id=1, member_id=a.member_id,
                          assignments={})
        b_join = asyncio.ensure_future(groups.join(**join_args(client_id="d")))
        await settle(groups, clock, 1.0)
        assert not b_join.done()  # waiting for a to rejoin (rebalance timeout 5 s)
        await settle(groups, clock, 5.0)
        b = await b_join
        assert b.generation_id == 2 and b.leader == b.member_id
        await asyncio.sleep(0)
        assert set(registry.members["g"]) == {b.member_id}

    asyncio.run(scenario())


def test_session_expiry_removes_silent_member():
    async def scenario():
        groups, _, clock = make()
        join = asyncio.ensure_future(groups.join(**join_args()))
        await settle(groups, clock)
        a = await join
        await groups.sync(group_id="g", generation_id=1, member_id=a.member_id, assignments={})
        await settle(groups, clock, 9.0)
        groups.heartbeat(group_id="g", generation_id=1, member_id=a.member_id)
        await settle(groups, clock, 10.5)
        with pytest.raises(UnknownMemberId):
            groups.heartbeat(group_id="g", generation_id=1, member_id=a.member_id)

    asyncio.run(scenario())


def test_generation_and_membership_are_checked():
    async def scenario():
        groups, _, clock = make()
        join = asyncio.ensure_future(groups.join(**join_args()))
        await settle(groups, clock)
        a = await join
        with pytest.raises(IllegalGeneration):
            await groups.sync(group_id="g", generation_id=7, member_id=a.member_id,
                              assignments={})
        with pytest.raises(UnknownMemberId):
            groups.heartbeat(group_id="g", generation_id=1, member_id="stranger")
        with pytest.raises(UnknownMemberId):
            await groups.join(**join_args("stranger"))
        with pytest.raises(IllegalGeneration):
            await groups.commit(group_id="g", generation_id=9, member_id=a.member_id,
                                offsets={})

    asyncio.run(scenario())


def test_bad_session_timeout_and_protocol_mismatch_are_rejected():
    async def scenario():
        groups, _, clock = make()
        with pytest.raises(InvalidSessionTimeout):
            await groups.join(**join_args(session_timeout_ms=10))
        join = asyncio.ensure_future(groups.join(**join_args()))
        await settle(groups, clock)
        await join
        with pytest.raises(InconsistentGroupProtocol):
            await groups.join(**join_args(protocols=[("roundrobin", b"")]))

    asyncio.run(scenario())


def test_manual_commit_with_generation_minus_one_is_accepted_for_memberless_group():
    async def scenario():
        groups, registry, _ = make()
        offsets = {TopicPartition("t", 0): OffsetAndMetadata(42)}
        await groups.commit(group_id="loaders", generation_id=-1, member_id="",
                            offsets=offsets)
        assert registry.offsets["loaders"] == offsets

    asyncio.run(scenario())


def test_leave_empties_the_group():
    async def scenario():
        groups, registry, clock = make()
        join = asyncio.ensure_future(groups.join(**join_args()))
        await settle(groups, clock)
        a = await join
        groups.leave(group_id="g", member_id=a.member_id)
        await settle(groups, clock)
        state, _, members = groups.describe("g")
        assert state is GroupState.EMPTY and members == []
        assert registry.members["g"] == {}

    asyncio.run(scenario())


def test_tick_during_a_slow_registration_neither_drops_the_group_nor_the_member():
    """Regression: with ZooKeeper, register_member takes a round trip; a tick() in that window
    once deleted the momentarily empty group and the join never completed."""

    async def scenario():
        groups, registry, clock = make(delay_ms=500)  # completion must come from a tick
        gate = asyncio.Event()
        fast = registry.register_member

        async def slow_register(group_id, member):
            await gate.wait()
            await fast(group_id, member)

        registry.register_member = slow_register  # type: ignore[method-assign]
        with pytest.raises(MemberIdAssigned) as info:
            await groups.join(**join_args(require_known_member_id=True))
        join = asyncio.ensure_future(groups.join(**join_args(
            info.value.member_id, require_known_member_id=True)))
        await settle(groups, clock, 1.0)  # the tick runs while registration is in flight
        gate.set()
        await settle(groups, clock, 1.0)
        result = await asyncio.wait_for(join, 1)
        assert result.generation_id == 1 and result.member_id == info.value.member_id

    asyncio.run(scenario())


def test_pending_member_ids_count_toward_the_group_size_and_expire():
    """KIP-394 ids handed out to clients that never rejoin: bounded by max_size, forgotten
    after their session timeout, after which new ids are handed out again."""
    async def scenario():
        groups, _, clock = make(max_size=5)
        pending = []
        for _ in range(5):
            with pytest.raises(MemberIdAssigned) as info:
                await groups.join(**join_args(require_known_member_id=True))
            pending.append(info.value.member_id)
        with pytest.raises(GroupMaxSizeReached):
            await groups.join(**join_args(require_known_member_id=True))
        # A pending id may still join: it was counted when handed out.
        join = asyncio.ensure_future(groups.join(**join_args(
            pending[0], require_known_member_id=True)))
        await settle(groups, clock)
        assert (await join).member_id == pending[0]
        await settle(groups, clock, 9.0)  # session timeout 10 s: not yet
        with pytest.raises(GroupMaxSizeReached):
            await groups.join(**join_args(require_known_member_id=True))
        groups.heartbeat(group_id="g", generation_id=1, member_id=pending[0])
        await settle(groups, clock, 1.5)  # the other four ids expire, the member stays
        assert groups.describe("g")[2] == [pending[0]]
        with pytest.raises(UnknownMemberId):
            await groups.join(**join_args(pending[1], require_known_member_id=True))
        with pytest.raises(MemberIdAssigned):
            await groups.join(**join_args(require_known_member_id=True))

    asyncio.run(scenario())


def test_group_max_size_limits_members_joining_without_kip394():
    async def scenario():
        groups, _, clock = make(delay_ms=100, max_size=2)
        joins = [asyncio.ensure_future(groups.join(**join_args())) for _ in range(2)]
        await settle(groups, clock)
        with pytest.raises(GroupMaxSizeReached):
            await groups.join(**join_args())
        await settle(groups, clock, 0.2)
        results = await asyncio.wait_for(asyncio.gather(*joins), 5)
        assert len({r.member_id for r in results}) == 2

    asyncio.run(scenario())


def test_a_group_of_only_expired_pending_ids_is_dropped():
    async def scenario():
        groups, _, clock = make()
        with pytest.raises(MemberIdAssigned):
            await groups.join(**join_args(require_known_member_id=True))
        assert "g" in groups._groups
        await settle(groups, clock, 11.0)
        assert "g" not in groups._groups

    asyncio.run(scenario())


class SlowRegistry(Registry):
    """Registration takes a round trip, as a ZooKeeper write does."""

    async def register_member(self, group_id, member):
        await asyncio.sleep(0.01)
        await super().register_member(group_id, member)


def test_joins_racing_a_slow_registration_share_the_protocol():
    async def scenario():
        registry, clock = SlowRegistry(), Clock()
        groups = GroupCoordinator(
            registry,  # type: ignore[arg-type]
            GroupConfig(min_session_timeout_ms=1000, max_session_timeout_ms=60_000,
                        initial_rebalance_delay_ms=100),
            clock=clock,
        )
        first = asyncio.ensure_future(groups.join(**join_args(client_id="a")))
        await asyncio.sleep(0)  # the first join is inside its registration now
        second = asyncio.ensure_future(groups.join(**join_args(client_id="b")))
        await asyncio.sleep(0.05)
        await settle(groups, clock, 6.0)
        results = [await first, await second]  # neither INCONSISTENT_GROUP_PROTOCOL
        assert {r.generation_id for r in results} <= {1, 2}

    asyncio.run(scenario())


async def stable_pair(groups: GroupCoordinator, clock: Clock):
    """Two static members, a and b, in a stable group; their join results."""
    joins = [asyncio.ensure_future(groups.join(**join_args(client_id=i, group_instance_id=i)))
             for i in ("a", "b")]
    await settle(groups, clock, 0.2)  # past the initial delay: one generation for both
    a, b = [await j for j in joins]
    leader = a if a.leader == a.member_id else b
    assignments = {a.member_id: b"0", b.member_id: b"1"}
    syncs = [asyncio.ensure_future(groups.sync(group_id="g", generation_id=r.generation_id,
                                               member_id=r.member_id, assignments=assignments
                                               if r is leader else {}))
             for r in (a, b)]
    for s in syncs:
        await s
    return a, b


def test_a_static_member_rejoining_keeps_its_assignment_without_a_rebalance():
    async def scenario():
        groups, registry, clock = make(delay_ms=100)
        a, b = await stable_pair(groups, clock)
        rejoined = await groups.join(**join_args(client_id="b", group_instance_id="b"))
        assert rejoined.member_id != b.member_id
        assert rejoined.generation_id == b.generation_id and rejoined.members == ()
        assert groups.describe("g")[0] is GroupState.STABLE
        sync = await groups.sync(group_id="g", generation_id=rejoined.generation_id,
                                 member_id=rejoined.member_id, assignments={})
        assert sync.assignment == b"1"
        groups.heartbeat(group_id="g", generation_id=a.generation_id, member_id=a.member_id)
        with pytest.raises(UnknownMemberId):  # the old incarnation is gone
            groups.heartbeat(group_id="g", generation_id=b.generation_id, member_id=b.member_id)
        await asyncio.sleep(0)
        assert set(registry.members["g"]) == {a.member_id, rejoined.member_id}

    asyncio.run(scenario())


def test_a_static_member_with_a_stale_member_id_is_fenced():
    async def scenario():
        groups, _, clock = make(delay_ms=100)
        _, b = await stable_pair(groups, clock)
        await groups.join(**join_args(client_id="b", group_instance_id="b"))
        with pytest.raises(FencedInstanceId):
            await groups.join(**join_args(b.member_id, client_id="b", group_instance_id="b"))

    asyncio.run(scenario())


def test_a_static_member_silent_past_its_session_timeout_is_removed():
    async def scenario():
        groups, _, clock = make(delay_ms=100)
        a, _ = await stable_pair(groups, clock)
        clock.now += 5
        groups.heartbeat(group_id="g", generation_id=a.generation_id, member_id=a.member_id)
        await settle(groups, clock, 6)  # b silent for 11 s > 10 s
        assert groups.describe("g")[2] == [a.member_id]

    asyncio.run(scenario())


def test_a_replaced_static_member_is_fenced_by_heartbeat_sync_and_commit():
    """KIP-345: the old incarnation names its instance id, so it learns it was replaced
    (FENCED_INSTANCE_ID), not merely that its member id is unknown."""
    async def scenario():
        groups, _, clock = make(delay_ms=100)
        _, b = await stable_pair(groups, clock)
        await groups.join(**join_args(client_id="b", group_instance_id="b"))
        old = dict(group_id="g", generation_id=b.generation_id, member_id=b.member_id,
                   group_instance_id="b")
        with pytest.raises(FencedInstanceId):
            groups.heartbeat(**old)
        with pytest.raises(FencedInstanceId):
            await groups.sync(**old, assignments={})
        with pytest.raises(FencedInstanceId):
            await groups.commit(**old, offsets={TopicPartition("t", 0): OffsetAndMetadata(1)})
        with pytest.raises(UnknownMemberId):  # no instance id named: just an unknown member
            groups.heartbeat(group_id="g", generation_id=b.generation_id, member_id=b.member_id)

    asyncio.run(scenario())


def test_leave_group_by_instance_id_alone_removes_the_static_member():
    async def scenario():
        groups, _, clock = make(delay_ms=100)
        a, _ = await stable_pair(groups, clock)
        groups.leave(group_id="g", member_id="", group_instance_id="b")
        assert groups.describe("g")[2] == [a.member_id]
        assert groups.describe("g")[0] is GroupState.PREPARING_REBALANCE
        with pytest.raises(UnknownMemberId):  # gone: a second leave finds no such member
            groups.leave(group_id="g", member_id="", group_instance_id="b")
        with pytest.raises(FencedInstanceId):  # the id is a's, not this member's
            groups.leave(group_id="g", member_id="someone-else", group_instance_id="a")

    asyncio.run(scenario())


def test_a_group_held_under_an_earlier_coordination_epoch_is_forgotten():
    # The Raft twin's nemesis: the coordinator is cut off, the group moves and rebalances
    # elsewhere, then comes back here. A member that kept reading from its old assignment
    # must not commit under the generation this broker still held.
    async def scenario():
        groups, registry, clock = make()
        join = asyncio.ensure_future(groups.join(**join_args()))
        await settle(groups, clock)
        a = await join
        await groups.sync(group_id="g", generation_id=1, member_id=a.member_id,
                          assignments={a.member_id: b"0"})
        tp = TopicPartition("t", 0)
        await groups.commit(group_id="g", generation_id=1, member_id=a.member_id,
                            offsets={tp: OffsetAndMetadata(10)})
        b_join = asyncio.ensure_future(groups.join(**join_args(client_id="d")))
        await settle(groups, clock)
        registry.epoch += 1  # the brokers that place groups changed
        await settle(groups, clock)  # the next tick forgets the group
        with pytest.raises(NotCoordinator):
            await b_join  # a pending join hears it, and finds the coordinator again
        with pytest.raises(UnknownMemberId):
            await groups.commit(group_id="g", generation_id=1, member_id=a.member_id,
                                offsets={tp: OffsetAndMetadata(5)})
        with pytest.raises(UnknownMemberId):
            groups.heartbeat(group_id="g", generation_id=1, member_id=a.member_id)
        assert registry.offsets["g"][tp].offset == 10
        assert groups.describe("g") == (GroupState.EMPTY, 0, [])
        # Joined again, the group is taken under the new epoch and kept while it holds.
        again = asyncio.ensure_future(groups.join(**join_args()))
        await settle(groups, clock)
        a2 = await again
        assert a2.member_id != a.member_id and groups.describe("g")[2] == [a2.member_id]
        await settle(groups, clock, 1.0)
        assert groups.describe("g")[2] == [a2.member_id]

    asyncio.run(scenario())


# --- incremental cooperative rebalancing (KIP-429) over the classic protocol -----------------
# The assignor runs in the clients; the broker's part is Kafka 2.8's JoinGroup rules: a member
# whose subscription changed (it gave partitions up and lists fewer owned ones) starts a
# rebalance, a follower rejoining unchanged does not, and REBALANCE_IN_PROGRESS on heartbeats
# brings the others to the follow-up rebalance.


def run_bounded(scenario) -> None:
    """Run a scenario whose every wait should end at once: a join that waits for a rebalance
    nobody starts fails the test instead of hanging it."""
    asyncio.run(asyncio.wait_for(scenario(), timeout=10))


def subscription(*owned: int) -> bytes:
    """A consumer's JoinGroup metadata as cooperative-sticky sends it: v1, owned partitions."""
    return ConsumerProtocolSubscription(
        topics=["t"], owned_partitions=[ConsumerTopicPartitions("t", list(owned))] if owned
        else [], version=1).encode()


def owned_in(metadata: bytes) -> list[int]:
    decoded = ConsumerProtocolSubscription.decode(metadata)
    return [p for tp in decoded.owned_partitions for p in tp.partitions]


def coop(member_id: str = "", *owned: int, client_id: str = "c"):
    return join_args(member_id, client_id=client_id,
                     protocols=[("cooperative-sticky", subscription(*owned))])


async def sync_all(groups: GroupCoordinator, joined, assignments: dict[str, bytes]):
    """Every member's SyncGroup, the followers' first (they wait for the leader's)."""
    leader = next(r for r in joined if r.leader == r.member_id)
    followers = [asyncio.ensure_future(groups.sync(
        group_id="g", generation_id=r.generation_id, member_id=r.member_id, assignments={}))
        for r in joined if r is not leader]
    await asyncio.sleep(0)
    assert not any(f.done() for f in followers)  # followers wait for the leader
    mine = await groups.sync(group_id="g", generation_id=leader.generation_id,
                             member_id=leader.member_id, assignments=assignments)
    return {leader.member_id: mine.assignment} | {
        r.member_id: (await f).assignment
        for r, f in zip([r for r in joined if r is not leader], followers, strict=True)}


def test_cooperative_sequence_revokes_then_assigns_in_a_follow_up_rebalance():
    async def scenario():
        groups, registry, clock = make()
        join = asyncio.ensure_future(groups.join(**coop()))
        await settle(groups, clock)
        a = await join
        assert (await groups.sync(group_id="g", generation_id=1, member_id=a.member_id,
                                  assignments={a.member_id: b"0,1,2,3"})).assignment == b"0,1,2,3"

        # b joins: a hears of it by heartbeat and rejoins, listing what it owns.
        b_join = asyncio.ensure_future(groups.join(**coop(client_id="d")))
        await settle(groups, clock)
        with pytest.raises(RebalanceInProgress):
            groups.heartbeat(group_id="g", generation_id=1, member_id=a.member_id)
        a_join = asyncio.ensure_future(groups.join(**coop(a.member_id, 0, 1, 2, 3)))
        await settle(groups, clock)
        a2, b = await a_join, await b_join
        assert a2.generation_id == b.generation_id == 2 and a2.leader == a.member_id
        assert {m.member_id: owned_in(m.metadata) for m in a2.members} == {
            a.member_id: [0, 1, 2, 3], b.member_id: []}
        # First rebalance: a keeps 0 and 1 and gives up 2 and 3; b gets nothing yet.
        got = await sync_all(groups, [a2, b], {a.member_id: b"0,1", b.member_id: b""})
        assert got == {a.member_id: b"0,1", b.member_id: b""}
        assert groups.describe("g")[:2] == (GroupState.STABLE, 2)

        # a revoked 2 and 3, so it rejoins with its smaller ownership: a rebalance starts,
        # and b, unchanged, learns of it from its heartbeat.
        a_join = asyncio.ensure_future(groups.join(**coop(a.member_id, 0, 1)))
        await settle(groups, clock)
        assert groups.describe("g")[0] is GroupState.PREPARING_REBALANCE
        with pytest.raises(RebalanceInProgress):
            groups.heartbeat(group_id="g", generation_id=2, member_id=b.member_id)
        b_join = asyncio.ensure_future(groups.join(**coop(b.member_id, client_id="d")))
        await settle(groups, clock)
        a3, b3 = await a_join, await b_join
        assert a3.generation_id == b3.generation_id == 3
        assert {m.member_id: owned_in(m.metadata) for m in a3.members} == {
            a.member_id: [0, 1], b.member_id: []}
        got = await sync_all(groups, [a3, b3], {a.member_id: b"0,1", b.member_id: b"2,3"})
        assert got == {a.member_id: b"0,1", b.member_id: b"2,3"}
        # Nothing was revoked this time: nobody rejoins, the group stays at generation 3.
        groups.heartbeat(group_id="g", generation_id=3, member_id=a.member_id)
        groups.heartbeat(group_id="g", generation_id=3, member_id=b.member_id)
        assert groups.describe("g")[:2] == (GroupState.STABLE, 3)
        assert registry.owners["g"] == {TopicPartition("t", p): a.member_id if p < 2
                                        else b.member_id for p in range(4)}

        # b leaves (after revoking its partitions): a rebalances alone and takes them back.
        groups.leave(group_id="g", member_id=b.member_id)
        with pytest.raises(RebalanceInProgress):
            groups.heartbeat(group_id="g", generation_id=3, member_id=a.member_id)
        a_join = asyncio.ensure_future(groups.join(**coop(a.member_id, 0, 1)))
        await settle(groups, clock)
        a4 = await a_join
        assert a4.generation_id == 4 and [m.member_id for m in a4.members] == [a.member_id]

    run_bounded(scenario)


async def joined_coop_pair(groups: GroupCoordinator, clock: Clock):
    """a (the leader) and b joined at generation 2, neither synced yet."""
    join = asyncio.ensure_future(groups.join(**coop()))
    await settle(groups, clock)
    a = await join
    await groups.sync(group_id="g", generation_id=1, member_id=a.member_id, assignments={})
    b_join = asyncio.ensure_future(groups.join(**coop(client_id="d")))
    await settle(groups, clock)
    a_join = asyncio.ensure_future(groups.join(**coop(a.member_id)))
    await settle(groups, clock)
    return await a_join, await b_join


async def stable_coop_pair(groups: GroupCoordinator, clock: Clock):
    """a (leader) owning 0 and 1, b owning 2 and 3, stable at generation 2."""
    a, b = await joined_coop_pair(groups, clock)
    await sync_all(groups, [a, b], {a.member_id: b"0,1", b.member_id: b"2,3"})
    return a, b


def test_a_follower_rejoining_unchanged_gets_the_current_generation_without_a_rebalance():
    async def scenario():
        groups, _, clock = make()
        a, b = await stable_coop_pair(groups, clock)
        again = await groups.join(**coop(b.member_id, client_id="d"))
        assert (again.generation_id, again.leader, again.members) == (2, a.member_id, ())
        assert again.protocol_name == "cooperative-sticky"
        assert groups.describe("g")[:2] == (GroupState.STABLE, 2)
        groups.heartbeat(group_id="g", generation_id=2, member_id=a.member_id)  # no error
        sync = await groups.sync(group_id="g", generation_id=2, member_id=b.member_id,
                                 assignments={})
        assert sync.assignment == b"2,3"

    run_bounded(scenario)


def test_a_follower_whose_owned_partitions_changed_starts_a_rebalance():
    async def scenario():
        groups, _, clock = make()
        a, b = await stable_coop_pair(groups, clock)
        b_join = asyncio.ensure_future(groups.join(**coop(b.member_id, 2, client_id="d")))
        await settle(groups, clock)
        assert groups.describe("g")[0] is GroupState.PREPARING_REBALANCE
        with pytest.raises(RebalanceInProgress):
            groups.heartbeat(group_id="g", generation_id=2, member_id=a.member_id)
        a_join = asyncio.ensure_future(groups.join(**coop(a.member_id, 0, 1)))
        await settle(groups, clock)
        a3, b3 = await a_join, await b_join
        assert a3.generation_id == b3.generation_id == 3
        assert {m.member_id: owned_in(m.metadata) for m in a3.members} == {
            a.member_id: [0, 1], b.member_id: [2]}

    run_bounded(scenario)


def test_the_stable_leader_rejoining_unchanged_starts_a_rebalance():
    """Kafka's rule: the leader rejoins to have changes its metadata does not show (topics
    gaining partitions) reassigned."""
    async def scenario():
        groups, _, clock = make()
        a, b = await stable_coop_pair(groups, clock)
        a_join = asyncio.ensure_future(groups.join(**coop(a.member_id)))
        await settle(groups, clock)
        assert groups.describe("g")[0] is GroupState.PREPARING_REBALANCE
        b_join = asyncio.ensure_future(groups.join(**coop(b.member_id, client_id="d")))
        await settle(groups, clock)
        assert (await a_join).generation_id == (await b_join).generation_id == 3

    run_bounded(scenario)


def test_rejoining_unchanged_while_completing_repeats_the_generations_answer():
    """A member that lost its JoinGroup answer asks again: the same generation, the member
    list for the leader, and nobody's pending SyncGroup is failed."""
    async def scenario():
        groups, _, clock = make()
        a2, b2 = await joined_coop_pair(groups, clock)
        b_sync = asyncio.ensure_future(groups.sync(group_id="g", generation_id=2,
                                                   member_id=b2.member_id, assignments={}))
        await asyncio.sleep(0)
        a_again = await groups.join(**coop(a2.member_id))
        assert (a_again.generation_id, a_again.leader) == (2, a2.member_id)
        assert [m.member_id for m in a_again.members] == [m.member_id for m in a2.members]
        assert not b_sync.done()
        assert groups.describe("g")[0] is GroupState.COMPLETING_REBALANCE
        await groups.sync(group_id="g", generation_id=2, member_id=a2.member_id,
                          assignments={a2.member_id: b"0", b2.member_id: b"1"})
        assert (await b_sync).assignment == b"1"

    run_bounded(scenario)


def test_the_protocol_most_members_prefer_wins():
    """KIP-429's upgrade: members listing cooperative-sticky first outvote a leader that
    still lists range first."""
    async def scenario():
        groups, _, clock = make(delay_ms=100)
        old = [("range", b""), ("cooperative-sticky", b"")]
        new = [("cooperative-sticky", b""), ("range", b"")]
        joins = [asyncio.ensure_future(groups.join(**join_args(client_id=c, protocols=p)))
                 for c, p in (("a", old), ("b", new), ("c", new))]
        await settle(groups, clock, 0.2)
        results = [await j for j in joins]
        assert {r.protocol_name for r in results} == {"cooperative-sticky"}

    run_bounded(scenario)


async def a_member_and_a_pending_id():
    """A stable one-member group; a new consumer is handed an id (MEMBER_ID_REQUIRED) and,
    before it rejoins with it, the member starts a rebalance, which waits for that id."""
    groups, _, clock = make()
    join = asyncio.ensure_future(groups.join(**join_args()))
    await settle(groups, clock)
    a = await join
    await groups.sync(group_id="g", generation_id=1, member_id=a.member_id, assignments={})
    with pytest.raises(MemberIdAssigned) as info:
        await groups.join(**join_args(client_id="d", require_known_member_id=True))
    a_join = asyncio.ensure_future(groups.join(**join_args(a.member_id)))
    await settle(groups, clock)
    assert not a_join.done()
    return groups, clock, info.value.member_id, a_join


def test_a_rebalance_waits_for_a_member_id_handed_out_and_not_yet_claimed():
    """KIP-394 as Kafka counts it: the consumer told MEMBER_ID_REQUIRED is about to join, so
    the rebalance waits for it instead of completing and starting another one."""
    async def scenario():
        groups, clock, pending_id, a_join = await a_member_and_a_pending_id()
        b_join = asyncio.ensure_future(groups.join(**join_args(
            pending_id, client_id="d", require_known_member_id=True)))
        await settle(groups, clock)
        a2, b = await a_join, await b_join
        assert a2.generation_id == b.generation_id == 2 and len(a2.members) == 2

    run_bounded(scenario)


def test_a_member_waiting_for_the_leaders_sync_does_not_expire():
    async def scenario():
        groups, _, clock = make()
        a, b = await stable_coop_pair(groups, clock)
        b_join = asyncio.ensure_future(groups.join(**coop(b.member_id, 2, client_id="d")))
        a_join = asyncio.ensure_future(groups.join(**coop(a.member_id, 0, 1)))
        await settle(groups, clock)
        await a_join
        b3 = await b_join
        b_sync = asyncio.ensure_future(groups.sync(group_id="g", generation_id=3,
                                                   member_id=b3.member_id, assignments={}))
        # The leader takes longer than b's session timeout (10 s) to sync, heartbeating.
        for _ in range(4):
            await settle(groups, clock, 4.0)
            groups.heartbeat(group_id="g", generation_id=3, member_id=a.member_id)
        assert not b_sync.done()
        await groups.sync(group_id="g", generation_id=3, member_id=a.member_id,
                          assignments={a.member_id: b"0,1", b.member_id: b"2,3"})
        assert (await b_sync).assignment == b"2,3"

    run_bounded(scenario)


def test_a_pending_member_leaving_gives_its_id_back_and_the_rebalance_completes():
    """librdkafka leaves with the id MEMBER_ID_REQUIRED gave it when its subscription changes
    before it rejoins; as in Kafka, that ends the wait for it (else: its session timeout)."""
    async def scenario():
        groups, clock, pending_id, a_join = await a_member_and_a_pending_id()
        groups.leave(group_id="g", member_id=pending_id)
        await settle(groups, clock)
        assert (await a_join).generation_id == 2
        with pytest.raises(UnknownMemberId):  # given back: it no longer names anyone
            await groups.join(**join_args(pending_id, client_id="d",
                                          require_known_member_id=True))

    run_bounded(scenario)
