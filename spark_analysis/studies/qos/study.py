"""The QoS study: the Kafka + Prometheus paper's QoS table (its Table II) from the brokers'
sampled metrics (format 8)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from spark_analysis.archs import DEFAULT, Archs
from spark_analysis.studies.qos import aggregate, section
from spark_analysis.studies.qos import tables as qos_tables
from spark_analysis.study import Context, Study, table


def _empty() -> pd.DataFrame:
    return pd.DataFrame()


@dataclass
class QosTables:
    """The sampled-metrics tables (format 8); all empty when no run sampled them.

    ``sessions``: every session's QoS measures; ``stats``: their intervals over tries (the
    figures' input); ``table_ii``: the paper's layout with ours beside it; ``paper``: the
    paper's printed values (paper_qos.csv)."""

    sessions: pd.DataFrame = field(default_factory=_empty)
    stats: pd.DataFrame = field(default_factory=_empty)
    table_ii: pd.DataFrame = field(default_factory=_empty)
    paper: pd.DataFrame = field(default_factory=_empty)
    archs: Archs = DEFAULT

    @property
    def empty(self) -> bool:
        return bool(self.sessions.empty)

    def tables(self) -> dict[str, pd.DataFrame]:
        if self.empty:
            return {}
        return {"qos_sessions": self.sessions, "qos_stats": self.stats,
                "qos_table_ii": self.table_ii}

    def figures(self, out: Path, archs: Archs) -> list[Path]:
        from spark_analysis.studies.qos import figures

        return figures.draw_qos(self.stats, self.paper, out, archs)

    def headline(self) -> str:
        return ""

    def section(self) -> str:
        return section.qos_md(self.table_ii, self.empty)


class QosStudy:
    name = "qos"
    title = "QoS (the Kafka + Prometheus paper's Table II)"

    def compute(self, context: Context) -> QosTables:
        """No Spark job at all when no run sampled the brokers' metrics."""
        logs, archs = context.logs, context.archs
        if logs.metrics is None:
            return QosTables(archs=archs)
        per_session = qos_tables.sessions(aggregate.metric_spans(logs.metrics,
                                                                 qos_tables.SERIES))
        long = qos_tables.stats_long(per_session, archs)
        paper_values = qos_tables.load_paper()
        return QosTables(sessions=per_session, stats=long, paper=paper_values,
                         table_ii=qos_tables.table_ii(long, paper_values, archs), archs=archs)

    def from_tables(self, tables: Mapping[str, pd.DataFrame], archs: Archs) -> QosTables:
        return QosTables(sessions=table(tables, "qos_sessions"),
                         stats=table(tables, "qos_stats"),
                         table_ii=table(tables, "qos_table_ii"),
                         paper=qos_tables.load_paper(), archs=archs)


STUDY: Study = QosStudy()
