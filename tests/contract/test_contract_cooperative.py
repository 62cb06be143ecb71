"""Incremental cooperative rebalancing (KIP-429) on every architecture: confluent-kafka
consumers with ``partition.assignment.strategy=cooperative-sticky`` over the classic group
protocol join a group one at a time, then one leaves.

The assignor runs in the clients: a rebalance first takes from each member only the
partitions that must move (the others keep theirs, and go on consuming), the members that
gave some up rejoin, and a follow-up rebalance hands those to their new owners. The broker's
part is Kafka's JoinGroup rules: a member whose subscription lists fewer owned partitions
starts the follow-up rebalance, and REBALANCE_IN_PROGRESS on the others' heartbeats brings
them to it. After each step every partition is owned exactly once and the group is balanced,
and no member that stays is ever asked for everything it had (the eager protocol's revoke).
"""

from __future__ import annotations

import contextlib
import uuid
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.support.ops import create_everywhere, eventually

pytestmark = pytest.mark.integration

PARTITIONS = 6


@dataclass
class Member:
    """One consumer and what its rebalance callbacks told it."""

    name: str
    consumer: Any
    revoked: set[int] = field(default_factory=set)  # since the step began
    lost: list[set[int]] = field(default_factory=list)

    def owned(self) -> set[int]:
        return {tp.partition for tp in self.consumer.assignment()}


def test_cooperative_sticky_consumers_join_and_leave_one_at_a_time(cluster):
    ck = pytest.importorskip("confluent_kafka")
    topic, group = f"coop-{uuid.uuid4().hex[:10]}", f"coop-g-{uuid.uuid4().hex[:8]}"
    create_everywhere(cluster.brokers, topic, PARTITIONS)
    members: dict[str, Member] = {}
    closing: list[Member] = []  # left the group: closed by the step itself

    def join(name: str) -> Member:
        consumer = ck.Consumer({
            "bootstrap.servers": cluster.bootstrap, "group.id": group, "client.id": name,
            "partition.assignment.strategy": "cooperative-sticky",
            # Members learn of a rebalance from their heartbeats: a short interval keeps
            # each step to a second or two (the default 3 s would dominate).
            "session.timeout.ms": 6000, "heartbeat.interval.ms": 300,
            "enable.auto.commit": False})
        member = Member(name, consumer)

        # confluent-kafka applies the incremental (un)assignment itself after these.
        def on_revoke(c, partitions, member=member):
            member.revoked |= {tp.partition for tp in partitions}

        def on_lost(c, partitions, member=member):
            member.lost.append({tp.partition for tp in partitions})

        consumer.subscribe([topic], on_revoke=on_revoke, on_lost=on_lost)
        members[name] = member
        return member

    def settled(expected: int) -> dict[str, set[int]]:
        """Poll every member until each owns its share and every partition has one owner;
        then poll a second more and require that nothing moved."""
        def balanced() -> dict[str, set[int]] | None:
            for m in members.values():
                m.consumer.poll(0.02)
            owned = {m.name: m.owned() for m in members.values()}
            everyone = sorted(p for s in owned.values() for p in s)
            sizes = [len(s) for s in owned.values()]
            if (len(owned) == expected and everyone == list(range(PARTITIONS))
                    and max(sizes) - min(sizes) <= 1):
                return owned
            return None

        owned = eventually(balanced, timeout_s=45, what=f"{expected} members balanced")
        for _ in range(25):
            for m in members.values():
                m.consumer.poll(0.02)
        assert {m.name: m.owned() for m in members.values()} == owned, "moved after settling"
        return owned

    def step(action) -> dict[str, set[int]]:
        for m in members.values():
            m.revoked = set()
        action()
        return settled(len(members))

    try:
        join("c1")
        owned = settled(1)
        assert owned == {"c1": set(range(PARTITIONS))}

        for name in ("c2", "c3"):
            before = owned
            owned = step(lambda name=name: join(name))
            for stayer, had in before.items():
                now = owned[stayer]
                # Incremental: the member gave up only what the newcomer needed and kept the
                # rest throughout (an eager rebalance revokes everything, then reassigns).
                assert now and now <= had, (stayer, had, now)
                assert members[stayer].revoked == had - now, (stayer, had, now)
            assert owned[name] == set().union(*(before[s] - owned[s] for s in before))

        before = owned
        leaving = members.pop("c2")
        closing.append(leaving)
        owned = step(leaving.consumer.close)
        for stayer, had in owned.items():
            # The leaver's partitions are added; nothing is taken from those who stay.
            assert before[stayer] <= had and not members[stayer].revoked, (stayer, before, had)
        assert all(not m.lost for m in members.values()) and not leaving.lost
    finally:
        for m in members.values():
            m.consumer.close()
        for m in closing:
            with contextlib.suppress(RuntimeError):  # closed by its step already
                m.consumer.close()
