"""The latency study: latency at a given load (open-loop sessions, formats 3 and 4) and the
maximum sustainable rates of rate searches."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from spark_analysis.archs import DEFAULT, Archs
from spark_analysis.studies.latency import aggregate, section
from spark_analysis.studies.latency import tables as latency_tables
from spark_analysis.study import Context, Study, table


def _empty() -> pd.DataFrame:
    return pd.DataFrame()


@dataclass
class LatencyTables:
    """``curves``: latency-throughput points per open-loop cell; ``max_rates``: the maximum
    sustainable rates of rate searches; both empty without open-loop runs."""

    curves: pd.DataFrame = field(default_factory=_empty)
    max_rates: pd.DataFrame = field(default_factory=_empty)
    archs: Archs = DEFAULT

    @property
    def empty(self) -> bool:
        return bool(self.curves.empty and self.max_rates.empty)

    def tables(self) -> dict[str, pd.DataFrame]:
        if self.empty:
            return {}
        return {"latency_curves": self.curves, "max_rates": self.max_rates}

    def figures(self, out: Path, archs: Archs) -> list[Path]:
        from spark_analysis.studies.latency import figures

        return figures.draw_latency(self.curves, out, archs)

    def headline(self) -> str:
        return ""

    def section(self) -> str:
        return section.latency_md(self.curves, self.max_rates, self.archs)


class LatencyStudy:
    name = "latency"
    title = "Latency at a given load"

    def compute(self, context: Context) -> LatencyTables:
        logs, archs = context.logs, context.archs
        # Open-loop rows (a handful per rate): collected once for the curves.
        open_rows = aggregate.open_loop(logs.records)
        found = logs.max_rate.toPandas() if logs.max_rate is not None else pd.DataFrame()
        return LatencyTables(curves=latency_tables.curves(open_rows, archs),
                             max_rates=latency_tables.max_rates(found, archs), archs=archs)

    def from_tables(self, tables: Mapping[str, pd.DataFrame], archs: Archs) -> LatencyTables:
        return LatencyTables(curves=table(tables, "latency_curves"),
                             max_rates=table(tables, "max_rates"), archs=archs)


STUDY: Study = LatencyStudy()
