"""A real Prometheus (Debian's binary) scrapes a cluster of each architecture: what it reports
is exactly what the test sent, request by request and byte by byte, and every broker's
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
from harness.cluster import ClusterSpec
from harness.grafana import dashboard
from harness.kafka_probe import KafkaProbe
from harness.prometheus import start_prometheus
from tests.support.clusters import start_spec
from tests.support.ops import create_everywhere, eventually
from tests.support.record_builder import build_batch

pytestmark = [pytest.mark.integration, pytest.mark.slow]

BATCHES = 25


def _value(prometheus, expr: str) -> float | None:
    result = prometheus.query(expr)
    return float(result[0]["value"][1]) if result else None


@pytest.mark.parametrize("arch", architectures.names())
def test_prometheus_reports_exactly_what_was_produced(arch: str, tmp_path: Path) -> None:
    if shutil.which("prometheus") is None:
        pytest.skip("no prometheus binary (Debian: apt-get install prometheus; make setup)")
    cluster = start_spec(ClusterSpec(arch, brokers=2, data_dir=tmp_path / "cluster",
                                     metrics=True, gossip_preset="local"))
    prometheus = None
    try:
        prometheus = start_prometheus([b.metrics for b in cluster.brokers], arch,
                                      tmp_path / "prometheus")
        eventually(lambda: _value(prometheus, f'sum(up{{arch="{arch}"}})') == len(
            cluster.brokers), 30, "every broker scraped")
        topic = f"prom-{uuid.uuid4().hex[:8]}"
        leader_id = create_everywhere(cluster.brokers, topic, 1)[0]
        leader = cluster.broker(leader_id)
        request = ProduceRequest(acks=1, timeout_ms=5000, topic_data=[TopicProduceData(
            name=topic, partition_data=[PartitionProduceData(
                index=0, records=build_batch([(None, b"x" * 100)] * 10))])])
        sent = 0
        with KafkaProbe(leader.host, leader.port) as probe:
            for _ in range(BATCHES):
                frame = join(request_frame(RequestHeader(ApiKey.PRODUCE, 8, 0,
                                                         "twinbench-probe"), request))
                sent += len(frame)
                response = probe.request(ApiKey.PRODUCE, 8, request)
                assert response.responses[0].partition_responses[0].error_code == 0
        produce = f'{{api="Produce",arch="{arch}"}}'
        eventually(lambda: _value(prometheus, f"sum(twinbench_requests_total{produce})")
                   == BATCHES, 30, "Prometheus to scrape the produce requests")
        assert _value(prometheus, f"sum(twinbench_request_bytes_in_total{produce})") == sent
        assert _value(prometheus, "sum(twinbench_request_time_seconds_count"
                                  f"{produce})") == BATCHES
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
