"""The metrics endpoint's pure parts: the metering dispatcher (with an in-memory inner
dispatcher), the families built from the counters contract, the dashboard's shape."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.registry import Collector

from brokers.core.counters import BrokerCounters
from brokers.core.errors import ProtocolViolation
from brokers.core.metrics import api_name, counter_families, request_families
from brokers.core.request_meter import BUCKETS, MeteredDispatcher
from brokers.core.server import Buffers
from brokers.dsbs_broker.counters import DsbsCounters
from harness.grafana import PANELS, dashboard


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
