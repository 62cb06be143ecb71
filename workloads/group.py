"""A consumer-group member that only joins, syncs and heartbeats: the probe that times how
long a group takes to settle after a fault.

It speaks the classic group protocol a Kafka consumer speaks (FindCoordinator, JoinGroup,
SyncGroup, Heartbeat, LeaveGroup; protocol type ``consumer``, the "range"-style assignment of
the one topic, encoded with the standard consumer-protocol blobs) but consumes nothing, so
what it measures is the coordination path alone: where the group's coordinator is, and how
fast a new one serves a rebalance.

A member is *stable* from the moment its SyncGroup for a generation succeeded until a
heartbeat (or any request) says otherwise: REBALANCE_IN_PROGRESS, a generation or member
error, a coordinator error, a lost connection, or no answer within ``request_timeout_s``. Each
change is appended to ``transitions`` as (perf_counter, stable, generation); the driver
combines the members' histories into the group's.

Timeouts are the probe's own policy and kept short on purpose (1 s by default, where Kafka's
clients wait up to 30 s): a request the cluster cannot answer is abandoned quickly and the
coordinator looked up again, so the time measured is the cluster's, not the client's patience.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import TypeVar

from brokers.core.errors import (
    IllegalGeneration,
    KafkaError,
    MemberIdRequired,
    RebalanceInProgress,
    UnknownMemberId,
)
from brokers.core.protocol.consumer_protocol import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
    ConsumerTopicPartitions,
)
from brokers.core.protocol.messages.heartbeat import HeartbeatRequest, HeartbeatResponse
from brokers.core.protocol.messages.join_group import (
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    JoinGroupResponse,
)
from brokers.core.protocol.messages.leave_group import LeaveGroupRequest
from brokers.core.protocol.messages.sync_group import (
    SyncGroupRequest,
    SyncGroupRequestAssignment,
    SyncGroupResponse,
)
from workloads.cluster import ClusterClient, raise_for_code
from workloads.connection import BrokerConnection, ConnectionClosed

__all__ = ["GroupMember", "GroupMemberConfig", "assign_range", "stable_intervals"]

JOIN_GROUP, HEARTBEAT, LEAVE_GROUP, SYNC_GROUP = 11, 12, 13, 14
PROTOCOL = "range"
T = TypeVar("T")


@dataclass(frozen=True)
class GroupMemberConfig:
    # Group to join (the driver uses one of its own, apart from the measuring consumers').
    group: str
    # The topic the member subscribes to.
    topic: str
    # JoinGroup session timeout: the coordinator drops a member silent for this long.
    session_timeout_ms: int = 6_000
    # JoinGroup rebalance timeout: how long a rebalance waits for members to rejoin.
    rebalance_timeout_ms: int = 5_000
    # Heartbeat period; also the resolution of "stable again".
    heartbeat_ms: int = 100
    # Any request but JoinGroup unanswered this long counts as a failed coordinator.
    request_timeout_s: float = 1.0
    # Pause after a failed attempt before the next (FindCoordinator, join).
    retry_backoff_s: float = 0.05


def assign_range(members: list[str], partitions: list[int]) -> dict[str, list[int]]:
    """Kafka's range assignor for one topic: members sorted, contiguous ranges, the first
    ``len(partitions) % len(members)`` members one partition more."""
    ms = sorted(members)
    per, extra = divmod(len(partitions), len(ms))
    out, start = {}, 0
    for i, m in enumerate(ms):
        n = per + (1 if i < extra else 0)
        out[m] = partitions[start:start + n]
        start += n
    return out


def stable_intervals(histories: list[list[tuple[float, bool, int]]], end: float
                     ) -> list[tuple[float, float]]:
    """Intervals during which *every* member was stable at one and the same generation, from
    each member's (time, stable, generation) transitions, up to ``end``."""
    events = sorted((t, i, s, g) for i, h in enumerate(histories) for t, s, g in h)
    state: dict[int, tuple[bool, int]] = {}
    out: list[tuple[float, float]] = []
    since: float | None = None
    for t, i, s, g in events:
        state[i] = (s, g)
        gens = {gen for ok, gen in state.values() if ok}
        whole = len(state) == len(histories) and all(ok for ok, _ in state.values()) and (
            len(gens) == 1)
        if whole and since is None:
            since = t
        elif not whole and since is not None:
            if t > since:
                out.append((since, t))
            since = None
    if since is not None and end > since:
        out.append((since, end))
    return out


class GroupMember:
    def __init__(self, cluster: ClusterClient, config: GroupMemberConfig) -> None:
        self.cluster = cluster
        self.config = config
        self.member_id = ""
        self.generation = -1
        self.assignment: list[int] = []
        self.transitions: list[tuple[float, bool, int]] = []
        self._stable = False

    def _mark(self, stable: bool) -> None:
        if stable != self._stable:
            self._stable = stable
            self.transitions.append((time.perf_counter(), stable, self.generation))

    async def _timed(self, conn: BrokerConnection, aw: Awaitable[T], timeout_s: float) -> T:
        try:
            return await asyncio.wait_for(aw, timeout_s)
        except TimeoutError:
            # Answers come in order: one that never comes blocks the connection for good.
            conn.close()
            raise ConnectionClosed(f"no answer within {timeout_s} s") from None

    async def run(self, stop: asyncio.Event) -> None:
        """Stay in the group until ``stop`` is set, then leave it (best effort)."""
        cfg = self.config
        refresh = False
        while not stop.is_set():
            try:
                conn = await self._timed_find(refresh)
                await self._join_and_sync(conn)
                self._mark(True)
                refresh = await self._heartbeat_until_trouble(conn, stop)
            except (KafkaError, ConnectionClosed, OSError, TimeoutError) as exc:
                self._mark(False)
                refresh = True
                if isinstance(exc, IllegalGeneration | UnknownMemberId):
                    self.member_id, self.generation = "", -1
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), cfg.retry_backoff_s)
        await self._leave()

    async def _timed_find(self, refresh: bool) -> BrokerConnection:
        if refresh:
            self.cluster.forget_coordinator(self.config.group)
        return await asyncio.wait_for(self.cluster.coordinator(self.config.group),
                                      self.config.request_timeout_s * 3)

    async def _join_and_sync(self, conn: BrokerConnection) -> None:
        cfg = self.config
        version = conn.pick_version(JOIN_GROUP, 0, 5)
        meta = ConsumerProtocolSubscription(topics=[cfg.topic]).encode()
        while True:
            req = JoinGroupRequest(
                group_id=cfg.group, session_timeout_ms=cfg.session_timeout_ms,
                rebalance_timeout_ms=cfg.rebalance_timeout_ms, member_id=self.member_id,
                protocol_type="consumer",
                protocols=[JoinGroupRequestProtocol(name=PROTOCOL, metadata=meta)])
            # JoinGroup is a long poll: it returns when the rebalance completes.
            wait = cfg.rebalance_timeout_ms / 1000 + cfg.request_timeout_s
            body = await self._timed(conn, conn.call(JOIN_GROUP, version, req.encode(version)),
                                     wait)
            resp = JoinGroupResponse.decode(body, version)
            if resp.error_code == MemberIdRequired.code:
                self.member_id = resp.member_id  # KIP-394: join again with the id given
                continue
            raise_for_code(resp.error_code, "JoinGroup")
            break
        self.member_id, self.generation = resp.member_id, resp.generation_id
        assignments = []
        if resp.leader == resp.member_id:
            parts = await self.cluster.topic_partitions(cfg.topic)
            plan = assign_range([m.member_id for m in resp.members], parts)
            assignments = [SyncGroupRequestAssignment(member_id=m, assignment=(
                ConsumerProtocolAssignment(assigned_partitions=[
                    ConsumerTopicPartitions(topic=cfg.topic, partitions=ps)]).encode()))
                for m, ps in plan.items()]
        sv = conn.pick_version(SYNC_GROUP, 0, 3)
        sync = SyncGroupRequest(group_id=cfg.group, generation_id=self.generation,
                                member_id=self.member_id, assignments=assignments)
        body = await self._timed(conn, conn.call(SYNC_GROUP, sv, sync.encode(sv)),
                                 wait)
        sresp = SyncGroupResponse.decode(body, sv)
        raise_for_code(sresp.error_code, "SyncGroup")
        got = ConsumerProtocolAssignment.decode(sresp.assignment) if sresp.assignment else None
        self.assignment = [p for tp in (got.assigned_partitions if got else [])
                           for p in tp.partitions]

    async def _heartbeat_until_trouble(self, conn: BrokerConnection, stop: asyncio.Event
                                       ) -> bool:
        """Heartbeat until something is wrong; returns whether to look the coordinator up."""
        cfg = self.config
        version = conn.pick_version(HEARTBEAT, 0, 3)
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), cfg.heartbeat_ms / 1000)
            if stop.is_set():
                break
            req = HeartbeatRequest(group_id=cfg.group, generation_id=self.generation,
                                   member_id=self.member_id)
            body = await self._timed(conn, conn.call(HEARTBEAT, version, req.encode(version)),
                                     cfg.request_timeout_s)
            code = HeartbeatResponse.decode(body, version).error_code
            if code == RebalanceInProgress.code:  # rejoin at the same coordinator
                self._mark(False)
                return False
            raise_for_code(code, "Heartbeat")
        return False

    async def _leave(self) -> None:
        if not self.member_id:
            return
        with contextlib.suppress(KafkaError, ConnectionClosed, OSError, TimeoutError):
            conn = await asyncio.wait_for(self.cluster.coordinator(self.config.group),
                                          self.config.request_timeout_s)
            version = conn.pick_version(LEAVE_GROUP, 0, 1)
            req = LeaveGroupRequest(group_id=self.config.group, member_id=self.member_id)
            await self._timed(conn, conn.call(LEAVE_GROUP, version, req.encode(version)),
                              self.config.request_timeout_s)

