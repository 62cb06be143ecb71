"""Topic creation on the zk broker: Kafka 0.8's AdminUtils, then a wait for the controller.

Any broker may create a topic: it reads the live brokers, assigns replicas round robin
(``brokers.core.placement.assign_replicas``) and writes ``/config/topics/<t>`` (when there are
configs) and ``/brokers/topics/<t>`` in one multi, so that a concurrent creation of the same
name fails as a whole. The controller sees the new topic through its watch and elects a leader
per partition; creation returns once this broker's own view (``MetadataCache``) shows a leader
for every partition, so a Metadata request right after a CreateTopics sees the topic.

Adding partitions is Kafka 2.8's AdminZkClient.addPartitions: the receiving broker reads
``/brokers/topics/<t>`` with its version, appends replicas for the new partitions (existing ones
keep theirs) and writes it back conditionally on that version, so of two concurrent increases
one fails and is re-read; the controller's data watch on the znode creates the new partitions'
state znodes, and the request returns once this broker's view shows their leaders.

Altering a topic's configs writes ``/config/topics/<t>`` conditionally on its version (and on
the topic znode's, so a topic deleted meanwhile is not given configs), re-reading on a
conflict so an incremental change applies to the latest values. Kafka 2.8 then adds a
sequential ``/config/changes/config_change_<n>`` znode that every broker watches; here every
broker's cache holds a data watch on each topic's config znode instead (``cache.py``): the
cache already holds one watch per topic znode, the change log would need purging, and a watch
tells each broker exactly which topic changed. The request returns once this broker's view
shows the new configs.
"""

from __future__ import annotations

from collections.abc import Mapping

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError, RolledBackError

from brokers.core.coordinator import (
    NO_LEADER,
    Assignment,
    ClusterView,
    ConfigChange,
    TopicInfo,
    validate_replication_factor,
    validate_topic_name,
)
from brokers.core.errors import (
    InvalidPartitions,
    NotController,
    RequestTimedOut,
    TopicAlreadyExists,
    UnknownTopicOrPartition,
)
from brokers.core.placement import assign_replicas
from brokers.zk_broker import paths as fmt
from brokers.zk_broker.cache import MetadataCache
from brokers.zk_broker.paths import ZkPaths
from brokers.zk_broker.session import UNAVAILABLE, ZkSession


class TopicCreator:
    """Writes new topics' assignments and waits until their leaders are elected."""

    def __init__(
        self, session: ZkSession, paths: ZkPaths, cache: MetadataCache, timeout_ms: int
    ) -> None:
        self._session = session
        self._paths = paths
        self._cache = cache
        # How long to wait for the controller to elect every partition's leader.
        self._timeout_ms = timeout_ms

    async def create(
        self,
        name: str,
        num_partitions: int,
        replication_factor: int,
        configs: Mapping[str, str] | None,
    ) -> TopicInfo:
        validate_topic_name(name)
        replication_factor = validate_replication_factor(replication_factor, replicates=True)
        if self._cache.has_topic(name):
            raise TopicAlreadyExists(f"topic {name!r} already exists")
        if not self._session.connected:
            raise NotController("ZooKeeper is unreachable; cannot create topics now")
        assignment = assign_replicas(
            num_partitions, replication_factor, await self._live_broker_ids()
        )
        await self._write(name, assignment, configs)
        return await self._wait_for_leaders(name, num_partitions, "created")

    async def create_assigned(
        self, name: str, assignment: Assignment, configs: Mapping[str, str] | None
    ) -> TopicInfo:
        """A creation with a manual replica assignment (validated by the handler), written
        as given, as Kafka's AdminZkClient does."""
        validate_topic_name(name)
        if self._cache.has_topic(name):
            raise TopicAlreadyExists(f"topic {name!r} already exists")
        if not self._session.connected:
            raise NotController("ZooKeeper is unreachable; cannot create topics now")
        await self._write(name, dict(assignment), configs)
        return await self._wait_for_leaders(name, len(assignment), "created")

    async def add_partitions(self, name: str, total: int) -> TopicInfo:
        if not self._session.connected:
            raise NotController("ZooKeeper is unreachable; cannot add partitions now")
        b = self._session.bridge
        path = self._paths.topic(name)
        while True:  # until our conditional write lands or the topic is already big enough
            try:
                data, stat = await b.call("get", path)
                assignment = fmt.decode_assignment(data)
                if total <= len(assignment):
                    raise InvalidPartitions(f"topic {name!r} has {len(assignment)} partitions; "
                                            f"{total} would not add any")
                rf = len(assignment[0]) if assignment.get(0) else 1
                placed = assign_replicas(total, rf, await self._live_broker_ids())
                grown = {**assignment, **{p: placed[p] for p in range(len(assignment), total)}}
                await b.call("set", path, fmt.encode_assignment(grown), version=stat.version)
                break
            except NoNodeError:
                raise UnknownTopicOrPartition(f"unknown topic {name!r}") from None
            except BadVersionError:
                continue  # changed since our read (another increase): decide again
            except UNAVAILABLE as exc:
                raise NotController(f"ZooKeeper unavailable: {exc}") from exc
        return await self._wait_for_leaders(name, total, "given its new partitions")

    async def alter_configs(self, name: str, change: ConfigChange) -> TopicInfo:
        if not self._session.connected:
            raise NotController("ZooKeeper is unreachable; cannot alter configs now")
        b = self._session.bridge
        cfg_path = self._paths.topic_config(name)
        while True:
            try:
                _, topic_stat = await b.call("get", self._paths.topic(name))
            except NoNodeError:
                raise UnknownTopicOrPartition(f"unknown topic {name!r}") from None
            except UNAVAILABLE as exc:
                raise NotController(f"ZooKeeper unavailable: {exc}") from exc
            try:
                data, stat = await b.call("get", cfg_path)
                current, version = fmt.decode_topic_config(data), stat.version
            except NoNodeError:
                current, version = {}, -1
            except UNAVAILABLE as exc:
                raise NotController(f"ZooKeeper unavailable: {exc}") from exc
            new = change(current)
            txn = b.transaction()
            txn.check(self._paths.topic(name), topic_stat.version)
            encoded = fmt.encode_topic_config(new)
            if version == -1:
                txn.create(cfg_path, encoded)
            else:
                txn.set_data(cfg_path, encoded, version=version)
            try:
                results = await b.commit(txn)
            except UNAVAILABLE as exc:
                raise NotController(f"ZooKeeper unavailable: {exc}") from exc
            failed = [r for r in results if isinstance(r, Exception)]
            if not failed:
                break
            if not all(isinstance(r, (BadVersionError, NodeExistsError, NoNodeError,
                                      RolledBackError)) for r in failed):
                raise NotController(f"altering the configs of {name!r} failed: {failed[0]!r}")
            # Changed since our reads (or the topic is gone): read again and decide again.

        def shown(view: ClusterView) -> bool:
            info = view.topics.get(name)
            return info is not None and dict(info.configs) == new

        if not await self._cache.wait_for(shown, self._timeout_ms / 1000):
            raise RequestTimedOut(f"the configs of {name!r} were written but this broker did "
                                  f"not see them within {self._timeout_ms} ms")
        return self._cache.view.topics[name]

    async def _wait_for_leaders(self, name: str, partitions: int, what: str) -> TopicInfo:
        def ready(view: ClusterView) -> bool:
            info = view.topics.get(name)
            return info is not None and len(info.partitions) >= partitions and all(
                p.leader != NO_LEADER for p in info.partitions)

        if not await self._cache.wait_for(ready, self._timeout_ms / 1000):
            raise RequestTimedOut(
                f"topic {name!r} was {what} but no leaders were elected within "
                f"{self._timeout_ms} ms (is a controller running?)"
            )
        return self._cache.view.topics[name]

    async def _live_broker_ids(self) -> list[int]:
        """Like Kafka's AdminUtils, read the live brokers fresh rather than from the cache: a
        broker that registered a moment ago must get its share of the partitions."""
        try:
            live = await self._session.bridge.call("get_children", self._paths.broker_ids)
        except UNAVAILABLE as exc:
            raise NotController(f"ZooKeeper unavailable: {exc}") from exc
        return [int(i) for i in live if i.isdigit()]

    async def _write(
        self,
        name: str,
        assignment: dict[int, tuple[int, ...]],
        configs: Mapping[str, str] | None,
    ) -> None:
        b = self._session.bridge
        txn = b.transaction()
        # Kafka writes the config first, then the assignment; one multi makes it all-or-nothing.
        if configs:
            txn.create(self._paths.topic_config(name), fmt.encode_topic_config(dict(configs)))
        txn.create(self._paths.topic(name), fmt.encode_assignment(assignment))
        try:
            results = await b.commit(txn)
        except UNAVAILABLE as exc:
            raise NotController(f"ZooKeeper unavailable: {exc}") from exc
        failed = [r for r in results if isinstance(r, Exception)]
        if failed:
            if isinstance(results[-1], NodeExistsError):
                raise TopicAlreadyExists(f"topic {name!r} already exists")
            if configs and isinstance(results[0], NodeExistsError):
                raise TopicAlreadyExists(f"topic {name!r} is being created (config exists)")
            raise NotController(f"creating {name!r} failed: {failed[0]!r}")
