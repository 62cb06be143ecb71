"""The metrics endpoint's pure parts: the metering dispatcher (with an in-memory inner
dispatcher), the families built from the counters contract, the dashboard's shape."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.registry import Collector

from brokers.core.counters import BrokerCounters
from brokers.core.errors import ProtocolViolation
from brokers.core.metrics import (
    MetricsExporter,
    api_name,
    counter_families,
    request_families,
    response_families,
)
from brokers.core.protocol.messages.fetch import (
    FetchableTopicResponse,
    FetchRequest,
    FetchResponse,
    PartitionData,
)
from brokers.core.protocol.messages.produce import (
    PartitionProduceData,
    PartitionProduceResponse,
    ProduceRequest,
    ProduceResponse,
    TopicProduceData,
    TopicProduceResponse,
)
from brokers.core.request_meter import BUCKETS, MeteredDispatcher
from brokers.core.response_meter import ResponseMeter, error_codes
from brokers.core.server import Buffers
from brokers.dsbs_broker.counters import DsbsCounters
from harness.grafana import PANELS, dashboard
from tests.support.batches import build_batch


class _Inner:
    """Answers Metadata (key 3) at once, Fetch (key 1) later, and refuses key 99."""

    def dispatch(self, frame: memoryview, peer: str) -> Buffers | Awaitable[Buffers | None] | None:
        key = int.from_bytes(frame[:2], "big")
        if key == 99:
            raise ProtocolViolation("unknown api key 99")
        if key == 0:
            return None  # acks=0
        if key == 1:
            async def later() -> Buffers | None:
                return [b"\0" * 96, b"\0" * 4]

            return later()
        return [b"\0" * 50]


def _frame(key: int, size: int = 20) -> memoryview:
    return memoryview(key.to_bytes(2, "big") + b"\0" * (size - 2))


def _text(*families_of: Collector) -> str:
    registry = CollectorRegistry()
    for collector in families_of:
        registry.register(collector)
    return generate_latest(registry).decode()


class _Fixed(Collector):
    def __init__(self, families: list) -> None:
        self._families = families

    def collect(self):  # type: ignore[no-untyped-def]
        return self._families


def test_metered_dispatcher_counts_requests_bytes_time_and_errors() -> None:
    meter = MeteredDispatcher(_Inner())
    assert meter.dispatch(_frame(3), "p") == [b"\0" * 50]
    assert meter.dispatch(_frame(3, 30), "p") is not None
    assert meter.dispatch(_frame(0), "p") is None
    pending = meter.dispatch(_frame(1), "p")
    assert asyncio.run(pending) == [b"\0" * 96, b"\0" * 4]  # type: ignore[arg-type]
    with pytest.raises(ProtocolViolation):
        meter.dispatch(_frame(99), "p")
    metadata, produce, fetch = meter.apis[3], meter.apis[0], meter.apis[1]
    assert (metadata.requests, metadata.bytes_in, metadata.bytes_out) == (2, 24 + 34, 100)
    assert (produce.requests, produce.bytes_out) == (1, 0)
    assert (fetch.requests, fetch.bytes_out) == (1, 100)
    assert sum(metadata.time_counts) == 2 and len(metadata.time_counts) == len(BUCKETS) + 1
    assert meter.errors == {"protocol_violation": 1}
    assert 99 not in meter.apis

    text = _text(_Fixed(list(request_families(meter))))
    assert 'twinbench_requests_total{api="Metadata"} 2.0' in text
    assert 'twinbench_request_bytes_in_total{api="Metadata"} 58.0' in text
    assert 'twinbench_request_bytes_out_total{api="Fetch"} 100.0' in text
    assert 'twinbench_request_time_seconds_bucket{api="Metadata",le="+Inf"} 2.0' in text
    assert 'twinbench_request_time_seconds_count{api="Produce"} 1.0' in text
    assert 'twinbench_request_errors_total{kind="protocol_violation"} 1.0' in text


def test_every_contract_counter_becomes_a_family_of_its_kind() -> None:
    broker = BrokerCounters(cpu_user_s=1.5, connections=3.0, sasl_authentication_failures=2)
    text = _text(_Fixed(list(counter_families("twinbench_broker", broker))))
    assert "# TYPE twinbench_broker_cpu_user_s_total counter" in text
    assert "twinbench_broker_cpu_user_s_total 1.5" in text
    assert "# TYPE twinbench_broker_connections gauge" in text
    assert "twinbench_broker_sasl_authentication_failures_total 2.0" in text
    for spec in BrokerCounters.specs():
        assert f"twinbench_broker_{spec.name}" in text
    dsbs = DsbsCounters.of({"gossip_dropped_unauthenticated": 4, "gossip_dropped_replayed": 1})
    text = _text(_Fixed(list(counter_families("twinbench_coordinator", dsbs))))
    assert 'twinbench_coordinator_gossip_dropped_total{label="unauthenticated"} 4.0' in text


@pytest.mark.filesystem
def test_the_exporter_serves_the_servers_queue_and_in_flight_and_the_log_directory(
        tmp_path: Path) -> None:
    (tmp_path / "segment.log").write_bytes(b"x" * 1234)
    exporter = MetricsExporter(
        MeteredDispatcher(_Inner()), BrokerCounters, lambda: DsbsCounters.of({}),
        in_flight=lambda: 3, data_dir=tmp_path, queued=lambda: 7)
    exporter.refresh()  # what a scrape has the event loop do
    text = generate_latest(exporter.registry).decode()
    assert "twinbench_requests_in_flight 3.0" in text
    assert "twinbench_request_queue_size 7.0" in text
    assert "twinbench_log_dir_bytes 1234.0" in text
    assert "process_open_fds" in text


def test_api_names_are_kafkas() -> None:
    assert [api_name(k) for k in (0, 3, 18, 17, 36, 4242)] == [
        "Produce", "Metadata", "ApiVersions", "SaslHandshake", "SaslAuthenticate", "4242"]


def test_dashboard_has_a_row_and_every_panel_per_architecture() -> None:
    doc = dashboard(["zk", "dsbs"])
    rows = [p for p in doc["panels"] if p["type"] == "row"]
    assert [r["title"] for r in rows] == ["zk", "dsbs"]
    graphs = [p for p in doc["panels"] if p["type"] != "row"]
    assert len(graphs) == 2 * len(PANELS)
    assert len({p["id"] for p in doc["panels"]}) == len(doc["panels"])
    assert all('arch="dsbs"' in p["targets"][0]["expr"] for p in graphs[len(PANELS):])
    # Every metric issue 14 lists has a panel.
    exprs = " ".join(expr for _title, expr, _unit in PANELS)
    for family in ("twinbench_topic_bytes_in_total", "twinbench_topic_bytes_out_total",
                   "twinbench_topic_messages_in_total", "twinbench_requests_total",
                   "twinbench_request_time_seconds_bucket", "twinbench_response_errors_total",
                   "twinbench_request_queue_size", "twinbench_requests_in_flight",
                   "twinbench_broker_sasl_authentication_failures_total",
                   "twinbench_coordinator_coordination_ops_total",
                   "twinbench_broker_fsyncs_total", "process_cpu_seconds_total",
                   "process_resident_memory_bytes", "process_open_fds",
                   "twinbench_log_dir_bytes"):
        assert family in exprs, family


def _produce(acks: int, *parts: tuple[str, int, bytes]) -> ProduceRequest:
    topics: dict[str, list[PartitionProduceData]] = {}
    for topic, index, records in parts:
        topics.setdefault(topic, []).append(PartitionProduceData(index=index, records=records))
    return ProduceRequest(acks=acks, timeout_ms=1000, topic_data=[
        TopicProduceData(name=t, partition_data=p) for t, p in topics.items()])


def _produced(*parts: tuple[str, int, int]) -> ProduceResponse:
    return ProduceResponse(throttle_time_ms=0, responses=[
        TopicProduceResponse(name=t, partition_responses=[
            PartitionProduceResponse(index=i, error_code=code, base_offset=0)])
        for t, i, code in parts])


def test_response_meter_counts_topics_and_error_codes() -> None:
    meter = ResponseMeter()
    three = build_batch([b"a", b"b", b"c"])
    two = build_batch([b"xy", b"z"])
    # Appended: a's batches; refused (NOT_LEADER_OR_FOLLOWER, 6): b's.
    meter.observe(0, _produce(1, ("a", 0, three + two), ("b", 0, three)),
                  _produced(("a", 0, 0), ("b", 0, 6)))
    # acks=0: no answer, every partition counts.
    meter.observe(0, _produce(0, ("a", 1, two)), None)
    assert meter.topics["a"][:2] == [len(three) + 2 * len(two), 3 + 2 + 2]
    assert "b" not in meter.topics
    fetch = FetchResponse(throttle_time_ms=0, error_code=0, responses=[
        FetchableTopicResponse(topic="a", partitions=[
            PartitionData(partition_index=0, error_code=0, high_watermark=5, records=three),
            PartitionData(partition_index=1, error_code=1, high_watermark=-1, records=b"")])])
    meter.observe(1, FetchRequest(max_wait_ms=0, min_bytes=1, topics=[]), fetch)
    meter.observe(1, FetchRequest(replica_id=2, max_wait_ms=0, min_bytes=1, topics=[]), fetch)
    assert meter.topics["a"][2:] == [len(three), len(three)]
    assert meter.error_counts() == {(0, "NOT_LEADER_OR_FOLLOWER"): 1,
                                    (1, "OFFSET_OUT_OF_RANGE"): 2}
    text = _text(_Fixed(list(response_families(meter))))
    assert f'twinbench_topic_bytes_in_total{{topic="a"}} {float(len(three) + 2 * len(two))}' \
        in text
    assert 'twinbench_topic_messages_in_total{topic="a"} 7.0' in text
    assert 'twinbench_response_errors_total{api="Fetch",error="OFFSET_OUT_OF_RANGE"} 2.0' in text
    meter.forget_topic("a")
    assert meter.topics == {}


def test_error_codes_are_found_at_any_depth() -> None:
    found: list[int] = []
    error_codes(FetchResponse(throttle_time_ms=0, error_code=7, responses=[
        FetchableTopicResponse(topic="t", partitions=[
            PartitionData(partition_index=0, error_code=3, high_watermark=-1, records=None)])]),
                found)
    assert sorted(found) == [3, 7]
