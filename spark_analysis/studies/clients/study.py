"""The clients study: our load client beside Kafka's perf tools, same clusters and cells."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from spark_analysis.archs import DEFAULT, Archs
from spark_analysis.studies.clients import aggregate, section
from spark_analysis.studies.clients import tables as client_tables
from spark_analysis.study import Context, Study, table


def _empty() -> pd.DataFrame:
    return pd.DataFrame()


@dataclass
class ClientsTables:
    """``compare``: per cell and architecture, both clients' records/s and tools/ours."""

    compare: pd.DataFrame = field(default_factory=_empty)
    archs: Archs = DEFAULT

    @property
    def empty(self) -> bool:
        return bool(self.compare.empty)

    def tables(self) -> dict[str, pd.DataFrame]:
        return {} if self.empty else {"clients_compare": self.compare}

    def figures(self, out: Path, archs: Archs) -> list[Path]:
        return []

    def headline(self) -> str:
        return ""

    def section(self) -> str:
        return section.clients_md(self.compare, self.archs)


class ClientsStudy:
    name = "clients"
    title = "Two load clients"

    def compute(self, context: Context) -> ClientsTables:
        tools = [r for r in context.logs.runs if r.client != aggregate.OURS]
        if tools:
            context.notes.append(f"{len(tools)} runs were loaded by Kafka's perf tools; their "
                                 "rows are in the Two load clients section only, beside our "
                                 "client's on the same clusters")
        long = aggregate.client_stats(context.logs.records)
        return ClientsTables(compare=client_tables.compare(long), archs=context.archs)

    def from_tables(self, tables: Mapping[str, pd.DataFrame], archs: Archs) -> ClientsTables:
        return ClientsTables(compare=table(tables, "clients_compare"), archs=archs)


STUDY: Study = ClientsStudy()
