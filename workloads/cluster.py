"""The client's view of a cluster: bootstrap, metadata, leaders, coordinators, topic creation.

The client learns everything from the protocol (Metadata, FindCoordinator), never from how the
cluster is coordinated. Retriable errors (NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION,
LEADER_NOT_AVAILABLE, NOT_COORDINATOR, ...) lead to a metadata refresh and a bounded number of
retries with exponential backoff: a measurement must tolerate a leader moving but must not spin
forever against a broken cluster.

Non-hot requests are encoded with the shared schema codec (``brokers.core.protocol``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeVar

from brokers.core.errors import (
    KafkaError,
    LeaderNotAvailable,
    TopicAlreadyExists,
    UnknownTopicOrPartition,
    UserError,
    error_for_code,
)
from brokers.core.protocol.messages.create_topics import (
    CreatableTopic,
    CreateTopicsRequest,
    CreateTopicsResponse,
)
from brokers.core.protocol.messages.find_coordinator import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)
from brokers.core.protocol.messages.metadata import (
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
)
from workloads.connection import BrokerConnection, ConnectionClosed, ConnectionConfig

__all__ = ["ClusterClient", "ClusterClientConfig", "PartitionInfo", "raise_for_code"]

T = TypeVar("T")

METADATA = 3
CREATE_TOPICS = 19
FIND_COORDINATOR = 10


def raise_for_code(code: int, what: str = "") -> None:
    """Raise the registered KafkaError for a non-zero wire code."""
    cls = error_for_code(code)
    if cls is not None:
        raise cls(f"{what}: {cls.wire_name}" if what else cls.wire_name)


@dataclass(frozen=True)
class ClusterClientConfig:
    # "host:port" addresses to bootstrap from (any one broker is enough).
    bootstrap: tuple[str, ...]
    # Settings for every broker connection.
    connection: ConnectionConfig = field(default_factory=ConnectionConfig)
    # How many times a retriable error is retried (each after a metadata refresh).
    retries: int = 10
    # First backoff before a retry; doubles per attempt up to retry_backoff_max_ms.
    retry_backoff_ms: int = 20
    retry_backoff_max_ms: int = 1000

    def __post_init__(self) -> None:
        if not self.bootstrap:
            raise UserError("bootstrap needs at least one host:port")
        for addr in self.bootstrap:
            host, _, port = addr.rpartition(":")
            if not host or not port.isdigit():
                raise UserError(f"bootstrap address {addr!r} is not host:port")
        if self.retries < 0 or self.retry_backoff_ms < 0:
            raise UserError("retries and retry_backoff_ms must be >= 0")


@dataclass(frozen=True)
class PartitionInfo:
    topic: str
    partition: int
    leader: int  # node id, -1 when leaderless
    leader_epoch: int


class ClusterClient:
    """The load client's view of a cluster: connections by node id plus a metadata cache.
    Use ``await ClusterClient.open(...)``. (The harness's processes are
    ``harness.cluster.ProcessCluster``.)"""

    def __init__(self, config: ClusterClientConfig) -> None:
        self.config = config
        self.brokers: dict[int, tuple[str, int]] = {}
        self.controller_id = -1
        self.partitions: dict[str, dict[int, PartitionInfo]] = {}
        self._conns: dict[int, BrokerConnection] = {}
        self._bootstrap_conn: BrokerConnection | None = None
        self._coordinators: dict[str, int] = {}
        self._opening: dict[int, asyncio.Future] = {}
        # Counters a run log may report.
        self.metadata_refreshes = 0
        self.retries = 0

    @classmethod
    async def open(
        cls, bootstrap: str | list[str] | tuple[str, ...], config: ClusterClientConfig | None = None
    ) -> ClusterClient:
        if isinstance(bootstrap, str):
            bootstrap = tuple(bootstrap.split(","))
        if config is None:
            config = ClusterClientConfig(bootstrap=tuple(bootstrap))
        self = cls(config)
        await self.refresh_metadata()
        return self

    # -- connections --------------------------------------------------------------------------
    async def _any_connection(self) -> BrokerConnection:
        """A live connection to some broker (known brokers first, then bootstrap)."""
        for conn in self._conns.values():
            if not conn.closed:
                return conn
        if self._bootstrap_conn is not None and not self._bootstrap_conn.closed:
            return self._bootstrap_conn
        failed: dict[str, str] = {}
        for addr in list(self.config.bootstrap) + [f"{h}:{p}" for h, p in self.brokers.values()]:
            host, _, port = addr.rpartition(":")
            try:
                self._bootstrap_conn = await BrokerConnection.open(
                    host, int(port), self.config.connection
                )
                return self._bootstrap_conn
            except (TimeoutError, OSError, ConnectionClosed) as exc:
                failed[addr] = str(exc) or type(exc).__name__
        tried = "; ".join(f"{a}: {why}" for a, why in failed.items())
        raise ConnectionClosed(f"no bootstrap broker reachable ({tried or 'none given'})")

    async def connection(self, node_id: int) -> BrokerConnection:
        conn = self._conns.get(node_id)
        if conn is not None and not conn.closed:
            return conn
        pending = self._opening.get(node_id)
        if pending is not None:  # someone else is already connecting to this node
            return await asyncio.shield(pending)
        if node_id not in self.brokers:
            await self.refresh_metadata()
            if node_id not in self.brokers:
                raise LeaderNotAvailable(f"broker {node_id} is not in the metadata")
        host, port = self.brokers[node_id]
        fut: asyncio.Future = asyncio.get_running_loop().create_future()
        self._opening[node_id] = fut
        try:
            conn = await BrokerConnection.open(host, port, self.config.connection)
            self._conns[node_id] = conn
            fut.set_result(conn)
            return conn
        except BaseException as exc:
            fut.set_exception(exc)
            fut.exception()  # retrieved: waiters get it through shield
            raise
        finally:
            del self._opening[node_id]

    async def close(self) -> None:
        for conn in [*self._conns.values(), self._bootstrap_conn]:
            if conn is not None:
                conn.close()
        self._conns.clear()
        self._bootstrap_conn = None
        await asyncio.sleep(0)

    async def __aenter__(self) -> ClusterClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- metadata -----------------------------------------------------------------------------
    @staticmethod
    async def _metadata(conn: BrokerConnection, topics: list[str] | None) -> MetadataResponse:
        """One Metadata round trip on ``conn`` (None: every topic); never auto-creates."""
        version = conn.pick_version(METADATA, 1, 8)
        req = MetadataRequest(
            topics=None if topics is None else [MetadataRequestTopic(name=t) for t in topics],
            allow_auto_topic_creation=False,
        )
        return MetadataResponse.decode(await conn.call(METADATA, version, req.encode(version)),
                                       version)

    async def refresh_metadata(self, topics: list[str] | None = None) -> None:
        """Metadata for ``topics`` (None: every topic) from any broker; updates the caches."""
        resp = await self._metadata(await self._any_connection(), topics)
        self.metadata_refreshes += 1
        self.brokers = {b.node_id: (b.host, b.port) for b in resp.brokers}
        self.controller_id = resp.controller_id
        for t in resp.topics:
            if t.error_code != 0:
                self.partitions.pop(t.name, None)
                continue
            self.partitions[t.name] = {
                p.partition_index: PartitionInfo(
                    t.name,
                    p.partition_index,
                    p.leader_id if p.error_code == 0 else -1,
                    p.leader_epoch,
                )
                for p in t.partitions
            }
        # Connections to brokers that left the cluster are closed.
        for node_id in list(self._conns):
            if node_id not in self.brokers:
                self._conns.pop(node_id).close()

    async def topic_partitions(self, topic: str) -> list[int]:
        """Partition ids of ``topic`` (refreshing metadata once if unknown)."""
        if topic not in self.partitions:
            await self.retrying(lambda: self._require_topic(topic))
        return sorted(self.partitions[topic])

    async def _require_topic(self, topic: str) -> None:
        await self.refresh_metadata([topic])
        if topic not in self.partitions:
            raise UnknownTopicOrPartition(f"topic {topic!r}")

    def leader_of(self, topic: str, partition: int) -> int:
        info = self.partitions.get(topic, {}).get(partition)
        return -1 if info is None else info.leader

    async def leader_connection(self, topic: str, partition: int) -> BrokerConnection:
        """Connection to the partition's leader; refreshes metadata when none is known."""
        leader = self.leader_of(topic, partition)
        if leader < 0:
            await self.refresh_metadata([topic])
            leader = self.leader_of(topic, partition)
            if leader < 0:
                raise LeaderNotAvailable(f"{topic}-{partition} has no leader")
        return await self.connection(leader)

    # -- retries ------------------------------------------------------------------------------
    async def retrying(
        self, op: Callable[[], Awaitable[T]], *, refresh: list[str] | None = None
    ) -> T:
        """Run ``op``; on a retriable Kafka error or a lost connection refresh metadata (for
        ``refresh`` topics) and try again, up to ``config.retries`` times with backoff."""
        backoff = self.config.retry_backoff_ms / 1000
        attempt = 0
        while True:
            try:
                return await op()
            except (KafkaError, ConnectionClosed, OSError) as exc:
                retriable = not isinstance(exc, KafkaError) or exc.retriable
                if not retriable or attempt >= self.config.retries:
                    raise
            attempt += 1
            self.retries += 1
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, self.config.retry_backoff_max_ms / 1000)
            # A refresh can itself fail (the broker we asked just died): the next attempt
            # will try again.
            with contextlib.suppress(KafkaError, ConnectionClosed, OSError):
                await self.refresh_metadata(refresh)

    # -- admin --------------------------------------------------------------------------------
    async def create_topic(
        self,
        name: str,
        partitions: int,
        replication_factor: int = 1,
        *,
        exist_ok: bool = True,
        timeout_ms: int = 30000,
    ) -> None:
        """CreateTopics (to the controller when known, else any broker: ours forward it),
        then wait until every partition has a leader in the metadata."""

        async def attempt() -> None:
            conn = (
                await self.connection(self.controller_id)
                if self.controller_id in self.brokers
                else await self._any_connection()
            )
            version = conn.pick_version(CREATE_TOPICS, 2, 4)
            req = CreateTopicsRequest(
                topics=[
                    CreatableTopic(
                        name=name, num_partitions=partitions, replication_factor=replication_factor
                    )
                ],
                timeout_ms=timeout_ms,
            )
            body = await conn.call(CREATE_TOPICS, version, req.encode(version))
            resp = CreateTopicsResponse.decode(body, version)
            for t in resp.topics:
                if t.error_code == TopicAlreadyExists.code and exist_ok:
                    continue
                raise_for_code(t.error_code, f"CreateTopics {t.name}")

        await self.retrying(attempt)

        async def ready() -> None:
            await self.refresh_metadata([name])
            parts = self.partitions.get(name, {})
            if len(parts) < partitions or any(p.leader < 0 for p in parts.values()):
                raise LeaderNotAvailable(f"topic {name} is not ready")
            # The broker we asked may know the leaders before the leaders themselves do (zk:
            # each learns from its own watch; dsbs: from gossip). A pipelined producer whose
            # first requests a leader refuses would resend them behind later ones, out of
            # order; so ask every leader too.
            for leader in sorted({p.leader for p in parts.values()}):
                mine = {p.partition for p in parts.values() if p.leader == leader}
                if not await self._leads(leader, name, mine):
                    raise LeaderNotAvailable(f"broker {leader} does not yet lead {name}")

        await self.retrying(ready)

    async def _leads(self, node: int, topic: str, partitions: set[int]) -> bool:
        """Whether broker ``node``'s own metadata names it leader of ``partitions``."""
        resp = await self._metadata(await self.connection(node), [topic])
        led = {p.partition_index for t in resp.topics if t.name == topic and t.error_code == 0
               for p in t.partitions if p.error_code == 0 and p.leader_id == node}
        return partitions <= led

    async def coordinator(self, group: str, *, refresh: bool = False) -> BrokerConnection:
        """Connection to ``group``'s coordinator (FindCoordinator, cached)."""
        node = None if refresh else self._coordinators.get(group)
        if node is None:

            async def find() -> int:
                conn = await self._any_connection()
                version = conn.pick_version(FIND_COORDINATOR, 0, 2)
                req = FindCoordinatorRequest(key=group, key_type=0)
                body = await conn.call(FIND_COORDINATOR, version, req.encode(version))
                resp = FindCoordinatorResponse.decode(body, version)
                raise_for_code(resp.error_code, f"FindCoordinator {group}")
                self.brokers.setdefault(resp.node_id, (resp.host, resp.port))
                return resp.node_id

            node = await self.retrying(find)
            self._coordinators[group] = node
        return await self.connection(node)

    def forget_coordinator(self, group: str) -> None:
        self._coordinators.pop(group, None)

    async def coordinator_id(self, group: str) -> int:
        """Node id of ``group``'s coordinator, asked afresh (FindCoordinator)."""
        await self.coordinator(group, refresh=True)
        return self._coordinators[group]
