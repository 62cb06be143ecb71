"""The config handlers and the produce path on a real single-node coordinator and store:
IncrementalAlterConfigs APPEND/SUBTRACT from the default, DescribeConfigs' types, synonyms and
documentation, and a compacted topic's produce answer (INVALID_RECORD with record_errors, on the
wire at v8 and v9) beside an ordinary topic's, which takes the same batch."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from brokers.core.config import BrokerConfig
from brokers.core.coordinator import BrokerInfo
from brokers.core.errors import InvalidConfig, InvalidRecord, InvalidRequest, MessageTooLarge
from brokers.core.handlers.configs import (
    handle_describe_configs,
    handle_incremental_alter_configs,
)
from brokers.core.handlers.context import BrokerContext, Call
from brokers.core.handlers.produce import handle_produce
from brokers.core.local_coordinator import LocalCoordinator
from brokers.core.notify import AppendNotifier
from brokers.core.protocol.messages.alter_configs import (
    APPEND,
    DELETE,
    SET,
    SUBTRACT,
    AlterableConfigOp,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResource,
)
from brokers.core.protocol.messages.describe_configs import (
    CONFIG_TYPES,
    DEFAULT_CONFIG,
    TOPIC,
    TOPIC_CONFIG,
    DescribeConfigsRequest,
    DescribeConfigsResource,
)
from brokers.core.protocol.messages.produce import (
    PartitionProduceData,
    ProduceRequest,
    ProduceResponse,
    TopicProduceData,
)
from brokers.core.protocol.primitives import join
from brokers.core.storage.manager import LogManager
from brokers.core.topic_config import produce_rules_by_topic
from tests.support.record_builder import build_batch

pytestmark = pytest.mark.filesystem
CALL = Call(api_version=1, client_id="t", peer="127.0.0.1:1")


def _broker(tmp_path: Path) -> BrokerContext:
    config = BrokerConfig(node_id=0, host="127.0.0.1", port=0, data_dir=tmp_path)
    coordinator = LocalCoordinator(0, tmp_path / "state")
    store = LogManager(tmp_path / "logs", config.storage)
    ctx = BrokerContext(config, coordinator, store, None, AppendNotifier())  # type: ignore[arg-type]

    def apply(view) -> None:  # what the broker does with every view (brokers/core/broker.py)
        ctx.topic_rules = produce_rules_by_topic({n: t.configs for n, t in view.topics.items()})

    async def start() -> None:
        await coordinator.start(BrokerInfo(0, "127.0.0.1", 1))
        coordinator.subscribe(apply)
        for name in ("compacted", "plain"):
            await coordinator.create_topic(name, 1, 1, {})
    asyncio.run(start())
    return ctx


def _alter(ctx: BrokerContext, *ops: tuple[str, int, str | None]) -> tuple[int, str | None]:
    req = IncrementalAlterConfigsRequest(resources=[IncrementalAlterConfigsResource(
        resource_type=TOPIC, resource_name="compacted",
        configs=[AlterableConfigOp(name=n, config_operation=op, value=v) for n, op, v in ops])])
    (res,) = asyncio.run(handle_incremental_alter_configs(ctx, CALL, req)).responses
    return res.error_code, res.error_message


def _described(ctx: BrokerContext, **kw):
    got = handle_describe_configs(ctx, CALL, DescribeConfigsRequest(resources=[
        DescribeConfigsResource(resource_type=TOPIC, resource_name="compacted")], **kw))
    (result,) = got.results
    return {c.name: c for c in result.configs}


def _produce(ctx: BrokerContext, topic: str, batch: bytes):
    resp = handle_produce(ctx, CALL, ProduceRequest(acks=1, timeout_ms=1000, topic_data=[
        TopicProduceData(name=topic, partition_data=[PartitionProduceData(0, batch)])]))
    assert isinstance(resp, ProduceResponse)
    return resp


def test_append_and_subtract_start_from_the_default_and_are_described(tmp_path: Path) -> None:
    ctx = _broker(tmp_path)
    assert _alter(ctx, ("cleanup.policy", APPEND, "compact")) == (0, None)
    got = _described(ctx, include_synonyms=True, include_documentation=True)
    policy = got["cleanup.policy"]
    assert (policy.value, policy.config_source) == ("delete,compact", TOPIC_CONFIG)
    assert policy.config_type == CONFIG_TYPES["LIST"]
    assert [(s.name, s.value, s.source) for s in policy.synonyms] == [
        ("cleanup.policy", "delete,compact", TOPIC_CONFIG),
        ("log.cleanup.policy", "delete", DEFAULT_CONFIG)]
    assert "compaction is not implemented by twinbench" in (policy.documentation or "")
    assert got["segment.ms"].config_source == DEFAULT_CONFIG and len(got) == 26
    plain = _described(ctx)  # synonyms and documentation only when asked for
    assert plain["cleanup.policy"].synonyms == [] and plain["segment.ms"].documentation is None
    assert _alter(ctx, ("cleanup.policy", SUBTRACT, "delete,compact")) == (0, None)
    assert _described(ctx)["cleanup.policy"].value == ""  # the empty list, not the default
    assert _alter(ctx, ("cleanup.policy", DELETE, None)) == (0, None)
    assert _described(ctx)["cleanup.policy"].config_source == DEFAULT_CONFIG
    # Kafka's refusals: APPEND on a non-list, an unknown name, an invalid item.
    code, message = _alter(ctx, ("segment.ms", APPEND, "5"))
    assert code == InvalidRequest.code
    assert message == "Config value append is not allowed for config key: segment.ms"
    assert _alter(ctx, ("no.such", APPEND, "5")) == (
        InvalidConfig.code, "Unknown topic config name: no.such")
    assert _alter(ctx, ("cleanup.policy", APPEND, "shred"))[0] == InvalidConfig.code
    assert _alter(ctx, ("preallocate", SET, "true"), ("segment.ms", SET, "1000")) == (0, None)
    assert _described(ctx)["preallocate"].value == "true"


def test_a_compacted_topic_refuses_keyless_records_naming_them(tmp_path: Path) -> None:
    ctx = _broker(tmp_path)
    batch = build_batch([(None, b"a"), (b"k", b"b"), (b"k", b"c"), (None, b"d")],
                        timestamp_ms=1, compression=4)
    assert _produce(ctx, "compacted", batch).responses[0].partition_responses[0].error_code == 0
    assert _alter(ctx, ("cleanup.policy", APPEND, "compact"), ("max.message.bytes", SET, "500")
                  ) == (0, None)
    resp = _produce(ctx, "compacted", batch)
    for version in (8, 9):  # the hand-written encoder, read back by the generic decoder
        (part,) = ProduceResponse.decode(join(resp.encode(version)), version
                                         ).responses[0].partition_responses
        assert (part.error_code, part.base_offset) == (InvalidRecord.code, -1)
        assert [e.batch_index for e in part.record_errors] == [0, 3]
        assert part.record_errors[0].batch_index_error_message == (
            "Compacted topic cannot accept message without key in topic partition compacted-0.")
        assert "2 record(s) without a key" in (part.error_message or "")
    big = build_batch([(b"k", b"v" * 600)], timestamp_ms=1)
    (part,) = _produce(ctx, "compacted", big).responses[0].partition_responses
    assert part.error_code == MessageTooLarge.code and part.record_errors == []
    keyed = build_batch([(b"k", b"v")], timestamp_ms=1)
    (part,) = _produce(ctx, "compacted", keyed).responses[0].partition_responses
    assert (part.error_code, part.base_offset) == (0, 4)  # after the 4 taken before compact
    # An ordinary topic reads no record and takes the same batch.
    (part,) = _produce(ctx, "plain", batch).responses[0].partition_responses
    assert (part.error_code, part.record_errors) == (0, [])
    assert ctx.topic_rules.keys() == {"compacted"}
