"""DescribeConfigs, AlterConfigs and IncrementalAlterConfigs: topic configs
(``brokers.core.topic_config``) and the broker's settings.

A topic is described from this broker's view of the cluster: every config of Kafka 2.8's
table, its own settings (source TOPIC_CONFIG) and, for the rest, the broker-wide values they fall
back to (DEFAULT_CONFIG), each with its type (v3+). Synonyms, when asked for (v1+), are the
topic's own setting and the broker-wide config of Kafka's name behind it; documentation, when
asked for (v3+), says what the config means and whether the brokers act on it or only store it.
A broker is described by its id, read-only (STATIC_BROKER_CONFIG): the settings come from its
command line and cannot be changed while it runs.

Altering a topic's configs goes through the Coordinator seam (``alter_topic_configs``), which
applies the change to the authoritative current values and spreads them to every broker; each
broker's storage core applies them from its view (retention, segment size). The change is
validated here against this broker's view first, so a bad request (INVALID_CONFIG for an
unknown name or a bad value, INVALID_REQUEST for a malformed one) and ``validate_only`` cost no
coordination. Broker resources are refused with INVALID_REQUEST: every broker setting here is
static, and Kafka 2.8 answers INVALID_REQUEST for a broker config it cannot change dynamically.

APPEND and SUBTRACT work on a list config's current value, which is its default when the topic
sets none (APPEND compact to a topic at the default gives "delete,compact"). APPEND skips items
already present and SUBTRACT may leave an empty list, which is stored as a value of its own
(Kafka's behaviour since 3.3; 2.8 appended duplicates).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping

from brokers.core.config import BrokerConfig
from brokers.core.coordinator import ConfigChange
from brokers.core.errors import (
    InvalidRequest,
    KafkaError,
    RequestTimedOut,
    UnknownTopicOrPartition,
)
from brokers.core.handlers.context import BrokerContext, Call
from brokers.core.protocol.messages.alter_configs import (
    APPEND,
    DELETE,
    SET,
    SUBTRACT,
    AlterConfigsRequest,
    AlterConfigsResourceResponse,
    AlterConfigsResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
)
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
    DescribeConfigsSynonym,
)
from brokers.core.topic_config import (
    SPECS,
    alter_list,
    effective_configs,
    unknown,
    validate_topic_configs,
)

# How long an alteration waits for this broker's view to show it.
ALTER_TIMEOUT_S = 10.0


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
                configs = _topic(ctx, res.resource_name, req.include_synonyms)
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


def _topic(ctx: BrokerContext, name: str, synonyms: bool
           ) -> list[DescribeConfigsResourceResult]:
    info = ctx.coordinator.cluster().topics.get(name)
    if info is None:
        raise UnknownTopicOrPartition(f"unknown topic {name!r}")
    out = []
    for spec, value, own in effective_configs(ctx.config, info.configs):
        # Kafka's synonyms, most specific first: the topic's own value, then the broker-wide
        # config it falls back to (its value here is this broker's, a default of its settings).
        found = []
        if synonyms and own:
            found.append(DescribeConfigsSynonym(name=spec.name, value=value, source=TOPIC_CONFIG))
        if synonyms and spec.broker_synonym is not None:
            found.append(DescribeConfigsSynonym(name=spec.broker_synonym,
                                                value=spec.default(ctx.config),
                                                source=DEFAULT_CONFIG))
        out.append(DescribeConfigsResourceResult(
            name=spec.name, value=value, read_only=False, is_default=not own,
            config_source=TOPIC_CONFIG if own else DEFAULT_CONFIG, is_sensitive=False,
            synonyms=found, config_type=CONFIG_TYPES[spec.kind],
            documentation=spec.documentation))
    return out


def _broker(ctx: BrokerContext, name: str) -> list[DescribeConfigsResourceResult]:
    if name not in ("", str(ctx.config.node_id)):
        raise InvalidRequest(f"this is broker {ctx.config.node_id}; ask broker {name} itself")
    return [DescribeConfigsResourceResult(
        name=key, value=value(ctx.config), read_only=True, is_default=False,
        config_source=STATIC_BROKER_CONFIG, is_sensitive=False, config_type=CONFIG_TYPES[kind])
        for key, (kind, value) in _BROKER_SETTINGS.items()]


async def handle_alter_configs(
    ctx: BrokerContext, call: Call, req: AlterConfigsRequest
) -> AlterConfigsResponse:
    responses = []
    for res in req.resources:
        values = {c.name: c.value for c in res.configs}

        def replace(current: Mapping[str, str], values: dict[str, str | None] = values
                    ) -> dict[str, str]:
            return validate_topic_configs(values)  # names not given return to their default

        error = await _alter(ctx, res.resource_type, res.resource_name,
                             [c.name for c in res.configs], replace, req.validate_only)
        responses.append(_result(res.resource_type, res.resource_name, error))
    return AlterConfigsResponse(responses=responses)


async def handle_incremental_alter_configs(
    ctx: BrokerContext, call: Call, req: IncrementalAlterConfigsRequest
) -> IncrementalAlterConfigsResponse:
    responses = []
    for res in req.resources:
        ops = [(c.name, c.config_operation, c.value) for c in res.configs]

        def change(current: Mapping[str, str],
                   ops: list[tuple[str, int, str | None]] = ops) -> dict[str, str]:
            new: dict[str, str | None] = dict(current)
            for name, op, value in ops:
                new[name] = _apply_op(ctx, name, op, value, new.get(name))
            return validate_topic_configs(new)

        error = await _alter(ctx, res.resource_type, res.resource_name,
                             [c.name for c in res.configs], change, req.validate_only)
        responses.append(_result(res.resource_type, res.resource_name, error))
    return IncrementalAlterConfigsResponse(responses=responses)


def _apply_op(ctx: BrokerContext, name: str, op: int, value: str | None, current: str | None
              ) -> str | None:
    """One IncrementalAlterConfigs operation on one config's value (None: the default)."""
    spec = SPECS.get(name)
    if spec is None:
        raise unknown(name)
    if op == SET:
        return value
    if op == DELETE:
        return None
    if op not in (APPEND, SUBTRACT):
        raise InvalidRequest(f"unknown config operation {op} for {name}")
    if spec.kind != "LIST":
        word = "append" if op == APPEND else "subtract"
        raise InvalidRequest(f"Config value {word} is not allowed for config key: {name}")
    # A topic without its own value changes its default (Kafka's reading): APPEND compact to
    # the default delete is delete,compact, not compact alone.
    return alter_list(spec.default(ctx.config) if current is None else current, value,
                      append=op == APPEND)


async def _alter(
    ctx: BrokerContext, resource_type: int, name: str, keys: list[str], change: ConfigChange,
    validate_only: bool,
) -> KafkaError | None:
    try:
        if resource_type == BROKER:
            raise InvalidRequest("broker configs are static here (set on the command line, "
                                 "read-only while the broker runs); no dynamic broker configs")
        if resource_type != TOPIC:
            raise InvalidRequest(f"resource type {resource_type} has no configs here")
        if len(set(keys)) != len(keys):
            raise InvalidRequest(f"a config of {name!r} is named twice")
        info = ctx.coordinator.cluster().topics.get(name)
        if info is None:
            raise UnknownTopicOrPartition(f"unknown topic {name!r}")
        change(info.configs)  # validation against our view: refusals cost no coordination
        if not validate_only:
            try:
                await asyncio.wait_for(ctx.coordinator.alter_topic_configs(name, change),
                                       ALTER_TIMEOUT_S)
            except TimeoutError:
                raise RequestTimedOut(f"the configs of {name!r} were not applied within "
                                      f"{ALTER_TIMEOUT_S:g} s") from None
    except KafkaError as exc:
        return exc
    return None


def _result(resource_type: int, name: str, error: KafkaError | None
            ) -> AlterConfigsResourceResponse:
    return AlterConfigsResourceResponse(
        error_code=0 if error is None else error.code,
        error_message=None if error is None else error.message or None,
        resource_type=resource_type, resource_name=name)
