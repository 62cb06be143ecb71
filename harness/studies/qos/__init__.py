"""qos: the brokers' Prometheus metrics sampled during every session (the Kafka + Prometheus
paper's QoS table).

``metrics: true`` makes every broker serve Prometheus metrics (``--metrics``) and the driver
samples them into metrics.csv (harness/studies/qos/sampler.py): before each session, every
``metrics_interval_s`` during it, and after it. Off by default: metering adds a clock read per
request on the brokers. The analysis side is spark_analysis/studies/qos (docs/qos.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.schema import Ctx
from harness.studies.study import Study
from twinbench_common.runlog import METRICS


@dataclass(frozen=True)
class Sampling:
    # Seconds between two scrapes of every broker's endpoint during a session.
    interval_s: float = 1.0


def _parse(ctx: Ctx, data: Mapping[str, Any], core: Mapping[str, Any]) -> Sampling | None:
    metrics = data.get("metrics", False)
    if not isinstance(metrics, bool):
        raise ctx.fail("metrics", f"must be true or false, got {metrics!r}")
    if "metrics_interval_s" in data and not metrics:
        raise ctx.fail("metrics_interval_s", "only applies with metrics: true")
    if not metrics:
        return None
    interval = ctx.number("metrics_interval_s", data.get("metrics_interval_s", 1.0))
    if not 0.05 <= interval <= 60:
        raise ctx.fail("metrics_interval_s", f"must be between 0.05 and 60 s, got {interval:g}")
    if data.get("faults") is not None or data.get("metadata") is not None:
        raise ctx.fail("metrics", "sampled during split and streaming sessions only")
    return Sampling(interval)


QOS: Study[Sampling] = Study(
    name="qos",
    summary="the brokers' Prometheus metrics sampled into metrics.csv during every session",
    keys=("metrics", "metrics_interval_s"),
    parse=_parse,
    manifest=lambda s: {"metrics": s is not None,
                        "metrics_interval_s": (s or Sampling()).interval_s},
    tables=(METRICS,),
    refuse_external=lambda s: ("metrics: true samples the metrics endpoints of the twins "
                               "twinbench starts; with --bootstrap give --metrics-url"),
    refuse_hosts=lambda s: ("metrics: true reads the brokers' and ZooKeeper's processes on "
                            "this machine; not with --hosts (yet)"),
)
