"""Metadata (with topic auto-creation), CreateTopics, CreatePartitions and DeleteTopics.

Both read and change the topic table through the Coordinator seam: this is where a ZooKeeper
round trip or a gossip broadcast happens, never in the broker core.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable

from brokers.core.coordinator import (
    ClusterView,
    validate_replica_assignment,
    validate_replication_factor,
    validate_topic_name,
)
from brokers.core.errors import (
    InvalidPartitions,
    InvalidRequest,
    KafkaError,
    LeaderNotAvailable,
    PolicyViolation,
    RequestTimedOut,
    TopicAlreadyExists,
    UnknownTopicId,
    UnknownTopicOrPartition,
)
from brokers.core.handlers.context import CLIENT_LEADER_EPOCH, BrokerContext, Call
from brokers.core.isr_changes import IsrChanges
from brokers.core.protocol.messages.create_partitions import (
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreatePartitionsTopicResult,
)
from brokers.core.protocol.messages.create_topics import (
    CreatableTopicConfigs,
    CreatableTopicResult,
    CreateTopicsRequest,
    CreateTopicsResponse,
)
from brokers.core.protocol.messages.delete_topics import (
    DeletableTopicResult,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
)
from brokers.core.protocol.messages.describe_configs import DEFAULT_CONFIG, TOPIC_CONFIG
from brokers.core.protocol.messages.metadata import (
    MetadataRequest,
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from brokers.core.topic_config import effective_configs, validate_topic_configs

# How long an auto-creating Metadata request waits for the new topic to get leaders.
AUTO_CREATE_TIMEOUT_S = 10.0


def handle_metadata(
    ctx: BrokerContext, call: Call, req: MetadataRequest
) -> MetadataResponse | Awaitable[MetadataResponse]:
    view = ctx.coordinator.cluster()
    if req.topics is None:
        return _response(view, None, {})
    # v10+ may name a topic by id alone; topics here have no ids (Kafka 2.8 brokers answer
    # such lookups with UNKNOWN_TOPIC_ID too).
    by_id = [t.topic_id for t in req.topics if t.name is None]
    if by_id:
        response = handle_metadata(ctx, call, MetadataRequest(
            topics=[t for t in req.topics if t.name is not None],
            allow_auto_topic_creation=req.allow_auto_topic_creation))
        return _add_unknown_ids(response, by_id)
    names = [t.name for t in req.topics if t.name is not None]  # all of them, by now
    errors: dict[str, KafkaError] = {}
    for name in names:
        try:
            validate_topic_name(name)
        except KafkaError as exc:
            errors[name] = exc
    # Metadata v1-3 have no flag: those clients always let the broker auto-create.
    allowed = req.allow_auto_topic_creation and ctx.config.auto_create_topics
    missing = [n for n in names if n not in view.topics and n not in errors]
    if missing and allowed:
        return _auto_create(ctx, names, missing, errors)
    return _response(view, names, errors)


def _add_unknown_ids(
    response: MetadataResponse | Awaitable[MetadataResponse], ids: list[bytes]
) -> MetadataResponse | Awaitable[MetadataResponse]:
    def add(r: MetadataResponse) -> MetadataResponse:
        r.topics += [MetadataResponseTopic(error_code=UnknownTopicId.code, name="", topic_id=i)
                     for i in ids]
        return r

    if isinstance(response, MetadataResponse):
        return add(response)

    async def later() -> MetadataResponse:
        return add(await response)
    return later()


async def _auto_create(
    ctx: BrokerContext, names: list[str], missing: list[str], errors: dict[str, KafkaError]
) -> MetadataResponse:
    for name in missing:
        try:
            check_topic_limits(ctx, ctx.config.default_partitions)
            await asyncio.wait_for(
                ctx.coordinator.create_topic(name, ctx.config.default_partitions, 1, auto=True),
                AUTO_CREATE_TIMEOUT_S,
            )
        except TopicAlreadyExists:
            pass  # another client created it first: exactly what this client wanted
        except TimeoutError:
            errors[name] = LeaderNotAvailable(f"topic {name!r} is still being created")
        except KafkaError as exc:
            errors[name] = exc
    return _response(ctx.coordinator.cluster(), names, errors)


def _response(
    view: ClusterView, names: list[str] | None, errors: dict[str, KafkaError]
) -> MetadataResponse:
    live = {b.node_id for b in view.brokers}
    topics = []
    for name in view.topics if names is None else names:
        info = view.topics.get(name)
        error = errors.get(name)
        if info is None or error is not None:
            error = error or UnknownTopicOrPartition(f"unknown topic {name!r}")
            topics.append(MetadataResponseTopic(error_code=error.code, name=name))
            continue
        partitions = [
            MetadataResponsePartition(
                error_code=0 if p.leader in live else LeaderNotAvailable.code,
                partition_index=p.partition,
                leader_id=p.leader if p.leader in live else -1,
                leader_epoch=CLIENT_LEADER_EPOCH,
                replica_nodes=list(p.replicas),
                isr_nodes=[r for r in p.isr if r in live],
                offline_replicas=[r for r in p.replicas if r not in live],
            )
            for p in info.partitions
        ]
        topics.append(MetadataResponseTopic(error_code=0, name=name, partitions=partitions))
    return MetadataResponse(
        brokers=[
            MetadataResponseBroker(node_id=b.node_id, host=b.host, port=b.port, rack=b.rack)
            for b in view.brokers
        ],
        cluster_id=view.cluster_id,
        controller_id=view.controller_id,
        topics=topics,
    )


async def handle_create_topics(
    ctx: BrokerContext, call: Call, req: CreateTopicsRequest
) -> CreateTopicsResponse:
    results = []
    seen: set[str] = set()
    # Factors above 1 only where the coordinator replicates (brokers/core/isr_changes.py).
    replicates = isinstance(ctx.coordinator, IsrChanges)
    for topic in req.topics:
        try:
            _first_mention(seen, topic.name)
            validate_topic_name(topic.name)
            assignment = None
            if topic.assignments:
                if topic.num_partitions != -1 or topic.replication_factor != -1:
                    raise InvalidRequest("a manual replica assignment needs num_partitions and "
                                         "replication_factor -1")
                assignment = validate_replica_assignment(
                    {a.partition_index: a.broker_ids for a in topic.assignments},
                    [b.node_id for b in ctx.coordinator.cluster().brokers],
                    replicates=replicates)
            partitions = (len(assignment) if assignment else ctx.config.default_partitions
                          if topic.num_partitions == -1 else topic.num_partitions)
            replication = (len(assignment[0]) if assignment
                           else validate_replication_factor(topic.replication_factor,
                                                            replicates=replicates))
            if partitions < 1:
                raise InvalidPartitions(f"{partitions} partitions requested")
            if topic.name in ctx.coordinator.cluster().topics:
                raise TopicAlreadyExists(f"topic {topic.name!r} already exists")
            check_topic_limits(ctx, partitions)
            configs = validate_topic_configs({c.name: c.value for c in topic.configs})
            if not req.validate_only:
                await _within(
                    ctx.coordinator.create_topic(topic.name, partitions, replication, configs)
                    if assignment is None else
                    ctx.coordinator.create_topic_assigned(topic.name, assignment, configs),
                    req.timeout_ms, f"topic {topic.name!r} not ready")
        except KafkaError as exc:
            results.append(CreatableTopicResult(
                name=topic.name, error_code=exc.code, error_message=exc.message or None))
        else:
            # v5+: what the topic got (validate_only: what it would get).
            results.append(CreatableTopicResult(
                name=topic.name, error_code=0, num_partitions=partitions,
                replication_factor=replication,
                configs=[CreatableTopicConfigs(name=spec.name, value=value, read_only=False,
                                               config_source=TOPIC_CONFIG if own
                                               else DEFAULT_CONFIG, is_sensitive=False)
                         for spec, value, own in effective_configs(ctx.config, configs)]))
    return CreateTopicsResponse(topics=results)


async def handle_create_partitions(
    ctx: BrokerContext, call: Call, req: CreatePartitionsRequest
) -> CreatePartitionsResponse:
    results = []
    seen: set[str] = set()
    for topic in req.topics:
        try:
            _first_mention(seen, topic.name)
            info = ctx.coordinator.cluster().topics.get(topic.name)
            if info is None:
                raise UnknownTopicOrPartition(f"unknown topic {topic.name!r}")
            if topic.assignments is not None:
                raise InvalidRequest("manual assignment of new partitions is not supported; "
                                     "leave assignments null and the broker places them")
            current = len(info.partitions)
            if topic.count <= current:
                raise InvalidPartitions(f"topic {topic.name!r} has {current} partitions; "
                                        f"{topic.count} would not add any")
            check_topic_limits(ctx, topic.count, new_topic=False)
            if not req.validate_only:
                await _within(ctx.coordinator.create_partitions(topic.name, topic.count),
                              req.timeout_ms, f"topic {topic.name!r}: new partitions not ready")
        except KafkaError as exc:
            results.append(CreatePartitionsTopicResult(
                name=topic.name, error_code=exc.code, error_message=exc.message or None))
        else:
            results.append(CreatePartitionsTopicResult(name=topic.name, error_code=0))
    return CreatePartitionsResponse(results=results)


async def handle_delete_topics(
    ctx: BrokerContext, call: Call, req: DeleteTopicsRequest
) -> DeleteTopicsResponse:
    """Every named topic is deleted concurrently, as Kafka waits for them in one operation;
    each result comes once this broker's view no longer shows the topic, or at the request's
    timeout (REQUEST_TIMED_OUT: the deletion goes on)."""
    seen: set[str] = set()
    named_twice: set[str] = set()
    for name in req.topic_names:
        try:
            _first_mention(seen, name)
        except InvalidRequest:
            named_twice.add(name)

    async def delete(name: str) -> KafkaError | None:
        try:
            if name in named_twice:
                raise InvalidRequest(f"topic {name!r} named twice in one request")
            validate_topic_name(name)
            await _within(ctx.coordinator.delete_topic(name), req.timeout_ms,
                          f"topic {name!r}: deletion not complete")
        except KafkaError as exc:
            return exc
        return None

    outcomes = await asyncio.gather(*(delete(n) for n in seen))
    errors = dict(zip(seen, outcomes, strict=True))
    results = []
    for name in dict.fromkeys(req.topic_names):  # once per name, in request order
        exc = errors.get(name)
        results.append(DeletableTopicResult(
            name=name, error_code=0 if exc is None else exc.code,
            error_message=None if exc is None else exc.message or None))
    return DeleteTopicsResponse(responses=results)


def _first_mention(seen: set[str], name: str) -> None:
    """Kafka refuses a request that names one topic twice."""
    if name in seen:
        raise InvalidRequest(f"topic {name!r} named twice in one request")
    seen.add(name)


async def _within(change: Awaitable[object], timeout_ms: int, what: str) -> None:
    """Wait for a topic change to show leaders, within the request's timeout (0 or less: the
    auto-creation wait)."""
    try:
        await asyncio.wait_for(change, max(timeout_ms, 0) / 1000 or AUTO_CREATE_TIMEOUT_S)
    except TimeoutError:
        raise RequestTimedOut(f"{what} within {timeout_ms} ms") from None


def check_topic_limits(ctx: BrokerContext, partitions: int, *, new_topic: bool = True) -> None:
    """The broker's caps on new topics: partitions per topic, then (``new_topic``) topics in
    the cluster.

    The topic count is this broker's view of the cluster, so two brokers creating at the same
    instant may overshoot by one each; the cap bounds growth, it is not a quota.
    """
    cfg = ctx.config
    if partitions > cfg.max_partitions_per_topic:
        raise InvalidPartitions(
            f"{partitions} partitions requested; max_partitions_per_topic is "
            f"{cfg.max_partitions_per_topic}")
    if new_topic and len(ctx.coordinator.cluster().topics) >= cfg.max_topics:
        raise PolicyViolation(f"the cluster already has max_topics={cfg.max_topics} topics")
