"""A Grafana dashboard for the brokers' Prometheus metrics (brokers/core/metrics.py).

One row per architecture, the same rate panels in each (filtered by the ``arch`` label the
harness gives each cluster's scrape job): bytes in and out per second by request type and by
topic (Kafka's BytesInPerSec / BytesOutPerSec), messages in per second by topic, requests per
second and the 99th percentile time per request type, requests refused and error codes per
second (Kafka's ErrorsPerSec), failed SASL logins per second, requests in flight and queued,
coordination operations, ZooKeeper requests or gossip packets and fsyncs per second, CPU,
resident memory, open descriptors, the log directory's size and its filesystem's free space.
Import the JSON into Grafana with a Prometheus data source named by ``datasource``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

# (title, PromQL with {sel} for the architecture's selector, unit)
PANELS: tuple[tuple[str, str, str], ...] = (
    ("bytes in /s by request", 'sum by (api) (rate(twinbench_request_bytes_in_total{sel}[30s]))',
     "Bps"),
    ("bytes out /s by request",
     'sum by (api) (rate(twinbench_request_bytes_out_total{sel}[30s]))', "Bps"),
    ("bytes in /s by topic", 'sum by (topic) (rate(twinbench_topic_bytes_in_total{sel}[30s]))',
     "Bps"),
    ("bytes out /s by topic",
     'sum by (topic) (rate(twinbench_topic_bytes_out_total{sel}[30s]))', "Bps"),
    ("messages in /s by topic",
     'sum by (topic) (rate(twinbench_topic_messages_in_total{sel}[30s]))', "short"),
    ("requests /s", 'sum by (api) (rate(twinbench_requests_total{sel}[30s]))', "reqps"),
    ("total time p99 by request", 'histogram_quantile(0.99, sum by (api, le) '
     '(rate(twinbench_request_time_seconds_bucket{sel}[30s])))', "s"),
    ("requests refused /s", 'sum by (kind) (rate(twinbench_request_errors_total{sel}[30s]))',
     "short"),
    ("error codes /s", 'sum by (api, error) (rate(twinbench_response_errors_total{sel}[30s]))',
     "short"),
    ("failed logins /s", 'sum by (instance) '
     '(rate(twinbench_broker_sasl_authentication_failures_total{sel}[30s]))', "short"),
    ("requests in flight", 'sum by (instance) (twinbench_requests_in_flight{sel})', "short"),
    ("request queue", 'sum by (instance) (twinbench_request_queue_size{sel})', "short"),
    ("coordination ops /s", 'sum(rate(twinbench_coordinator_coordination_ops_total{sel}[30s]))',
     "ops"),
    # Every coordinator's count of the messages it sent for coordination (ZooKeeper requests,
    # gossip datagrams, ...), the brokers' side of coord_messages.
    ("coordination messages sent /s", 'sum by (instance) '
     '(rate(twinbench_coordinator_coordination_ops_total{sel}[30s]))', "short"),
    ("fsyncs /s", 'sum by (instance) (rate(twinbench_broker_fsyncs_total{sel}[30s]))', "ops"),
    ("CPU (cores)", 'sum by (instance) (rate(process_cpu_seconds_total{sel}[30s]))', "short"),
    ("resident memory", 'sum by (instance) (process_resident_memory_bytes{sel})', "bytes"),
    ("open descriptors", 'sum by (instance) (process_open_fds{sel})', "short"),
    ("log directory", 'sum by (instance) (twinbench_log_dir_bytes{sel})', "bytes"),
    ("disk free", 'min by (instance) (twinbench_log_dir_free_bytes{sel})', "bytes"),
)


def dashboard(archs: Sequence[str], datasource: str = "Prometheus") -> dict[str, Any]:
    panels: list[dict[str, Any]] = []
    panel_id, y = 1, 0
    for arch in archs:
        panels.append({"id": panel_id, "type": "row", "title": arch, "collapsed": False,
                       "gridPos": {"h": 1, "w": 24, "x": 0, "y": y}})
        panel_id, y = panel_id + 1, y + 1
        for i, (title, expr, unit) in enumerate(PANELS):
            panels.append({
                "id": panel_id, "type": "timeseries", "title": f"{arch}: {title}",
                "datasource": datasource,
                "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
                "gridPos": {"h": 8, "w": 8, "x": 8 * (i % 3), "y": y + 8 * (i // 3)},
                "targets": [{"refId": "A",
                             "expr": expr.replace("{sel}", f'{{arch="{arch}"}}')}],
            })
            panel_id += 1
        y += 8 * ((len(PANELS) + 2) // 3)
    return {"title": "twinbench brokers", "uid": "twinbench", "schemaVersion": 38,
            "time": {"from": "now-15m", "to": "now"}, "refresh": "5s", "panels": panels}


def write_dashboard(path: Path, archs: Sequence[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(dashboard(archs), indent=2) + "\n")
    return path
