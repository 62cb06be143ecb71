"""The Real Kafka study: Kafka on ZooKeeper and on KRaft beside the twins."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from spark_analysis.archs import DEFAULT, Archs
from spark_analysis.cost import coordination_cost
from spark_analysis.studies.kafka import aggregate, figures, section
from spark_analysis.studies.kafka import tables as kafka_tables
from spark_analysis.study import Context, Study, table


def _empty() -> pd.DataFrame:
    return pd.DataFrame()


@dataclass
class KafkaTables:
    """``four``: records/s per cell and architecture where real Kafka ran; ``steps``:
    KRaft/ZK and DSBS/ZK per cell; ``fidelity``: the zk twin beside Kafka on ZooKeeper;
    ``cost``: coordination and CPU per 1,000 records per cell and architecture;
    ``events``: the zk twin beside Kafka on ZooKeeper in topic creation and failover."""

    four: pd.DataFrame = field(default_factory=_empty)
    steps: pd.DataFrame = field(default_factory=_empty)
    fidelity: pd.DataFrame = field(default_factory=_empty)
    cost: pd.DataFrame = field(default_factory=_empty)
    events: pd.DataFrame = field(default_factory=_empty)
    archs: Archs = DEFAULT

    @property
    def empty(self) -> bool:
        return bool(self.four.empty and self.events.empty)

    def tables(self) -> dict[str, pd.DataFrame]:
        if self.empty:
            return {}
        named = {"kafka_four": self.four, "kafka_steps": self.steps,
                 "kafka_fidelity": self.fidelity, "kafka_cost": self.cost,
                 "kafka_fidelity_events": self.events}
        return {k: v for k, v in named.items() if not v.empty}

    def figures(self, out: Path, archs: Archs) -> list[Path]:
        return figures.draw_four(self.four, out, archs)

    def headline(self) -> str:
        if self.steps.empty:
            return ""
        lines = []
        for name, text in (("kraft_over_zk", "Kafka KRaft/ZK"), ("raft_over_zk", "RAFT/ZK"),
                           ("dsbs_over_zk", "DSBS/ZK")):
            if name in self.steps and self.steps[name].notna().any():
                values = self.steps[name].dropna()
                lines.append(f"{text} {values.min():.2f} to {values.max():.2f}")
        if not lines:
            return ""
        return ("- Real Kafka: records/s ratios over the cells where it ran, "
                + "; ".join(lines) + " (section Real Kafka).\n")

    def section(self) -> str:
        return section.kafka_md(self.four, self.steps, self.fidelity, self.cost, self.events,
                                self.archs)


class KafkaStudy:
    name = "kafka"
    title = "Real Kafka"

    def compute(self, context: Context) -> KafkaTables:
        long = aggregate.cell_stats(context.records)
        four = kafka_tables.four(long)
        events = kafka_tables.fidelity_events(
            aggregate.event_stats(context.logs.metadata, context.logs.faults))
        if four.empty:
            return KafkaTables(events=events, archs=context.archs)
        coordination = context.logs.coordination
        cost = (kafka_tables.kafka_cells(coordination_cost(coordination, context.records), four)
                if coordination is not None else pd.DataFrame())
        return KafkaTables(four=four, steps=kafka_tables.steps(four),
                           fidelity=kafka_tables.fidelity(four, cost), cost=cost,
                           events=events, archs=context.archs)

    def from_tables(self, tables: Mapping[str, pd.DataFrame], archs: Archs) -> KafkaTables:
        return KafkaTables(four=table(tables, "kafka_four"), steps=table(tables, "kafka_steps"),
                           fidelity=table(tables, "kafka_fidelity"),
                           cost=table(tables, "kafka_cost"),
                           events=table(tables, "kafka_fidelity_events"), archs=archs)


STUDY: Study = KafkaStudy()
