"""The studies: one package per kind of experiment, each a vertical slice from the run logs to
its tables, figures and report section (the Study protocol: spark_analysis/study.py).

Layout (one package per study, in report order; each holds aggregate.py (its Spark passes),
tables.py (pandas statistics), figures.py, section.py (its report section) and study.py (the
Study and its result), as far as it has them):

  paper/     the DSBS paper's experiments: appendix tables, ZK-vs-DSBS comparison, latency
             percentiles and distribution, coordination cost, A/A calibration and noise floor,
             the ratio against the coordination policy; fig01-fig12 and paper-*
  security/  what TLS and SASL cost each architecture (workloads with ``security:``)
  qos/       the Kafka + Prometheus paper's QoS table from the brokers' sampled metrics; qos-*
  latency/   open-loop sessions: latency at each rate, maximum sustainable rates; latency-*
  faults/    fault sessions: durations, outcomes, throughput through each fault; faults-*
  metadata/  metadata at scale: cost against size, log-log slopes; metadata-*
  transactions/  exactly-once: transactions of N batches beside the same work without, per
             architecture (records/s, their ratio, coordination per transaction, commit time)
  rtt/       the ratio against the network's round-trip time, measured and modelled; rtt-*
  clients/   our load client beside Kafka's perf tools on the same clusters and cells
  kafka/     real Kafka on ZooKeeper and KRaft beside the twins: four architectures, the two
             steps away from ZooKeeper, the zk twin's fidelity; kafka-four-*

A new study is a package here and one line of ``STUDIES``. The registry names each study's
module as a string and imports it only when asked, so this module imports no study and no
study imports another (tests/unit/test_import_direction.py holds the package free of cycles).
"""

from __future__ import annotations

import importlib
from typing import cast

from spark_analysis.study import Study

# name -> "module:attribute" of its Study, in the report's order.
STUDIES: dict[str, str] = {
    "paper": "spark_analysis.studies.paper.study:STUDY",
    "security": "spark_analysis.studies.security.study:STUDY",
    "qos": "spark_analysis.studies.qos.study:STUDY",
    "latency": "spark_analysis.studies.latency.study:STUDY",
    "faults": "spark_analysis.studies.faults.study:STUDY",
    "metadata": "spark_analysis.studies.metadata.study:STUDY",
    "transactions": "spark_analysis.studies.transactions.study:STUDY",
    "rtt": "spark_analysis.studies.rtt.study:STUDY",
    "clients": "spark_analysis.studies.clients.study:STUDY",
    "kafka": "spark_analysis.studies.kafka.study:STUDY",
}


def load(name: str) -> Study:
    """The study registered as ``name`` (its module imported now)."""
    module, _, attribute = STUDIES[name].partition(":")
    study = cast(Study, getattr(importlib.import_module(module), attribute))
    if study.name != name:
        raise RuntimeError(f"{STUDIES[name]} is registered as {name!r} but calls itself "
                           f"{study.name!r}")
    return study


def every() -> list[Study]:
    """Every registered study, in report order."""
    return [load(name) for name in STUDIES]
