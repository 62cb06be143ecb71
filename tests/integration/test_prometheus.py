"""A real Prometheus (Debian's binary) scrapes a cluster of each architecture: what it reports
is exactly what the test sent, request by request and byte by byte, the rates it computes
over the production match what was produced, and every broker's
process, coordination and disk metrics arrive. Skipped, with the reason, where the binary is
missing (`make setup` installs it)."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

import pytest

from brokers.core.protocol.api import ApiKey, request_frame
from brokers.core.protocol.header import RequestHeader
from brokers.core.protocol.messages.produce import (
    PartitionProduceData,
    ProduceRequest,
    TopicProduceData,
)
from brokers.core.protocol.primitives import join
from harness import architectures
from harness.cluster.kafka_probe import KafkaProbe
from harness.cluster.spec import ClusterSpec
from harness.grafana import dashboard
from harness.prometheus import start_prometheus
from tests.support.clusters import start_spec
from tests.support.ops import create_everywhere, eventually
from tests.support.record_builder import build_batch

pytestmark = [pytest.mark.integration, pytest.mark.slow]

BATCHES = 25


def _value(prometheus, expr: str) -> float | None:
    result = prometheus.query(expr)
    return float(result[0]["value"][1]) if result else None


def _assert_rate_is(prometheus, series: str, start: int, produced: int) -> None:
    """Prometheus's ``rate`` of ``series`` over the window from its last scrape at ``start``
    (before the production) to its first scrape after it, times the window, is what was
    produced."""
    (stored,) = prometheus.query(f"{series}[5m]")  # the leader's series, every sample
    points = [(float(t), float(v)) for t, v in stored["values"]]
    before = max(t for t, v in points if v == start)
    after = min(t for t, v in points if v == start + produced)
    # 1 ms more than the samples' distance: both samples fall inside, and Prometheus
    # extrapolates the 1 ms only (a relative error below 1/1000 for windows of a second or more).
    window_ms = round((after - before) * 1000) + 1
    rate = _value_at(prometheus, f"rate({series}[{window_ms}ms])", after)
    assert rate is not None
    assert rate * window_ms / 1000 == pytest.approx(produced, rel=2e-3), (points, rate)


def _value_at(prometheus, expr: str, at: float) -> float | None:
    result = prometheus.query(expr, at=at)
    return float(result[0]["value"][1]) if result else None


@pytest.mark.parametrize("arch", architectures.compared())
def test_prometheus_reports_exactly_what_was_produced(arch: str, tmp_path: Path) -> None:
    if shutil.which("prometheus") is None:
        pytest.skip("no prometheus binary (Debian: apt-get install prometheus; make setup)")
    cluster = start_spec(ClusterSpec(arch, brokers=2, data_dir=tmp_path / "cluster",
                                     metrics=True, options={"dsbs": {"gossip_preset": "local"}}))
    prometheus = None
    try:
        prometheus = start_prometheus([b.metrics for b in cluster.brokers], arch,
                                      tmp_path / "prometheus")
        eventually(lambda: _value(prometheus, f'sum(up{{arch="{arch}"}})') == len(
            cluster.brokers), 30, "every broker scraped")
        topic = f"prom-{uuid.uuid4().hex[:8]}"
        leader_id = create_everywhere(cluster.brokers, topic, 1)[0]
        leader = cluster.broker(leader_id)
        batch = build_batch([(None, b"x" * 100)] * 10)
        request = ProduceRequest(acks=1, timeout_ms=5000, topic_data=[TopicProduceData(
            name=topic, partition_data=[PartitionProduceData(index=0, records=batch)])])

        def produce_batches(count: int) -> int:
            sent = 0
            with KafkaProbe(leader.host, leader.port) as probe:
                for _ in range(count):
                    frame = join(request_frame(RequestHeader(ApiKey.PRODUCE, 8, 0,
                                                             "twinbench-probe"), request))
                    sent += len(frame)
                    response = probe.request(ApiKey.PRODUCE, 8, request)
                    assert response.responses[0].partition_responses[0].error_code == 0
            return sent

        # One batch, scraped before the others: the topic's series exists before the measured
        # production, so Prometheus's rate sees all of it (a series that first appears with
        # its final value shows no increase at all).
        of_topic = f'{{topic="{topic}",arch="{arch}"}}'
        sent = produce_batches(1)
        eventually(lambda: _value(prometheus, f"sum(twinbench_topic_messages_in_total"
                                              f"{of_topic})") == 10, 30, "the first batch")
        sent += produce_batches(BATCHES)
        produce = f'{{api="Produce",arch="{arch}"}}'
        eventually(lambda: _value(prometheus, f"sum(twinbench_requests_total{produce})")
                   == BATCHES + 1, 30, "Prometheus to scrape the produce requests")
        assert _value(prometheus, f"sum(twinbench_request_bytes_in_total{produce})") == sent
        assert _value(prometheus, "sum(twinbench_request_time_seconds_count"
                                  f"{produce})") == BATCHES + 1
        # Kafka's topic metrics: the records and batch bytes the topic took, exactly, and
        # the rates Prometheus computes from them over the production.
        assert _value(prometheus, f"sum(twinbench_topic_messages_in_total{of_topic})") == (
            (BATCHES + 1) * 10)
        assert _value(prometheus, f"sum(twinbench_topic_bytes_in_total{of_topic})") == (
            (BATCHES + 1) * len(batch))
        _assert_rate_is(prometheus, f"twinbench_topic_messages_in_total{of_topic}", 10,
                        BATCHES * 10)
        _assert_rate_is(prometheus, f"twinbench_topic_bytes_in_total{of_topic}", len(batch),
                        BATCHES * len(batch))
        # Per broker: the process, its coordination and its log directory.
        for metric in ("process_cpu_seconds_total", "process_resident_memory_bytes",
                       "process_open_fds", "twinbench_coordinator_coordination_ops_total",
                       "twinbench_broker_uptime_s"):
            series = prometheus.query(f'{metric}{{arch="{arch}"}}')
            assert len(series) == len(cluster.brokers), metric
            assert all(float(s["value"][1]) > 0 for s in series), (metric, series)
        # A follower-less partition lives on its leader only: the other may hold nothing.
        leader_disk = _value(prometheus,
                             f'twinbench_log_dir_bytes{{instance="{leader.metrics}"}}')
        assert leader_disk is not None and leader_disk >= BATCHES * 1000
        # Every query of the dashboard is one Prometheus accepts.
        for panel in dashboard([arch])["panels"]:
            for target in panel.get("targets", []):
                prometheus.query(target["expr"])
    finally:
        if prometheus is not None:
            prometheus.stop()
        cluster.stop()
