"""DescribeConfigs: topic configs (``brokers.core.topic_config``) and the broker's settings.

A topic is described from this broker's view of the cluster: its own settings (source
TOPIC_CONFIG) and, for the rest, the broker-wide values they fall back to (DEFAULT_CONFIG).
A broker is described by its id, read-only (STATIC_BROKER_CONFIG): the settings come from its
command line and cannot be changed while it runs.
"""

from __future__ import annotations

from collections.abc import Callable

from brokers.core.config import BrokerConfig
from brokers.core.errors import InvalidRequest, KafkaError, UnknownTopicOrPartition
from brokers.core.handlers.context import BrokerContext, Call
from brokers.core.protocol.messages.describe_configs import (
    BROKER,
    CONFIG_TYPES,
    DEFAULT_CONFIG,
    STATIC_BROKER_CONFIG,
    TOPIC,
    TOPIC_CONFIG,
    DescribeConfigsRequest,
    DescribeConfigsResourceResult,
    DescribeConfigsResponse,
    DescribeConfigsResult,
)
from brokers.core.topic_config import effective_configs


def _limit(value: int | None) -> str:
    return "-1" if value is None else str(value)


# Kafka's names for the broker settings a client may want to read, and where they come from.
_BROKER_SETTINGS: dict[str, tuple[str, Callable[[BrokerConfig], str]]] = {
    "broker.id": ("INT", lambda c: str(c.node_id)),
    "num.partitions": ("INT", lambda c: str(c.default_partitions)),
    "auto.create.topics.enable": ("BOOLEAN", lambda c: str(c.auto_create_topics).lower()),
    "log.segment.bytes": ("INT", lambda c: str(c.storage.segment_bytes)),
    "log.retention.ms": ("LONG", lambda c: _limit(c.storage.retention_ms)),
    "log.retention.bytes": ("LONG", lambda c: _limit(c.storage.retention_bytes)),
    "message.max.bytes": ("INT", lambda c: str(c.storage.max_batch_bytes)),
    "socket.request.max.bytes": ("INT", lambda c: str(c.max_frame_bytes)),
}


def handle_describe_configs(
    ctx: BrokerContext, call: Call, req: DescribeConfigsRequest
) -> DescribeConfigsResponse:
    results = []
    for res in req.resources:
        keys = None if res.configuration_keys is None else set(res.configuration_keys)
        try:
            if res.resource_type == TOPIC:
                configs = _topic(ctx, res.resource_name)
            elif res.resource_type == BROKER:
                configs = _broker(ctx, res.resource_name)
            else:
                raise InvalidRequest(f"resource type {res.resource_type} has no configs here")
        except KafkaError as exc:
            results.append(DescribeConfigsResult(
                error_code=exc.code, error_message=exc.message or None,
                resource_type=res.resource_type, resource_name=res.resource_name))
            continue
        if keys is not None:  # an empty list also means "every config" (Kafka's reading)
            configs = [c for c in configs if c.name in keys] if keys else configs
        if not req.include_documentation:
            for c in configs:
                c.documentation = None
        results.append(DescribeConfigsResult(
            error_code=0, resource_type=res.resource_type, resource_name=res.resource_name,
            configs=configs))
    return DescribeConfigsResponse(results=results)


def _topic(ctx: BrokerContext, name: str) -> list[DescribeConfigsResourceResult]:
    info = ctx.coordinator.cluster().topics.get(name)
    if info is None:
        raise UnknownTopicOrPartition(f"unknown topic {name!r}")
    return [DescribeConfigsResourceResult(
        name=spec.name, value=value, read_only=False, is_default=not own,
        config_source=TOPIC_CONFIG if own else DEFAULT_CONFIG, is_sensitive=False,
        config_type=CONFIG_TYPES[spec.kind], documentation=spec.doc)
        for spec, value, own in effective_configs(ctx.config.storage, info.configs)]


def _broker(ctx: BrokerContext, name: str) -> list[DescribeConfigsResourceResult]:
    if name not in ("", str(ctx.config.node_id)):
        raise InvalidRequest(f"this is broker {ctx.config.node_id}; ask broker {name} itself")
    return [DescribeConfigsResourceResult(
        name=key, value=value(ctx.config), read_only=True, is_default=False,
        config_source=STATIC_BROKER_CONFIG, is_sensitive=False, config_type=CONFIG_TYPES[kind])
        for key, (kind, value) in _BROKER_SETTINGS.items()]
