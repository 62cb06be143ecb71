"""The metadata study: metadata at scale (format 5), each case's cost against its size on
every architecture."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from spark_analysis.archs import DEFAULT, Archs
from spark_analysis.studies.metadata import aggregate, section
from spark_analysis.studies.metadata import tables as metadata_tables
from spark_analysis.study import Context, Study, table


def _empty() -> pd.DataFrame:
    return pd.DataFrame()


@dataclass
class MetadataTables:
    """The metadata sessions' tables (format 5); all empty when the runs had none.

    ``stats``: long, per case x size x arch x measure with the 95% CI over tries (the figures'
    input); ``comparison``: ZooKeeper beside DSBS with the ratio; ``scaling``: the log-log
    slope of every measure against the size."""

    stats: pd.DataFrame = field(default_factory=_empty)
    comparison: pd.DataFrame = field(default_factory=_empty)
    scaling: pd.DataFrame = field(default_factory=_empty)
    archs: Archs = DEFAULT

    @property
    def empty(self) -> bool:
        return bool(self.stats.empty)

    def tables(self) -> dict[str, pd.DataFrame]:
        if self.empty:
            return {}
        return {"metadata_stats": self.stats, "metadata_comparison": self.comparison,
                "metadata_scaling": self.scaling}

    def figures(self, out: Path, archs: Archs) -> list[Path]:
        from spark_analysis.studies.metadata import figures

        return figures.draw_metadata(self.stats, out, archs)

    def headline(self) -> str:
        return section.metadata_headline(self.stats, self.archs)

    def section(self) -> str:
        return section.metadata_md(self.comparison, self.scaling, self.empty, self.archs)


class MetadataStudy:
    name = "metadata"
    title = "Metadata scenarios"

    def compute(self, context: Context) -> MetadataTables:
        """No Spark job at all when no run has a metadata session."""
        logs, archs = context.logs, context.archs
        if logs.metadata is None:
            return MetadataTables(archs=archs)
        wide = aggregate.metadata_stats(logs.metadata)
        aa = int(wide.loc[wide["side"] != "*", "sessions"].sum()) if not wide.empty else 0
        if aa:
            context.notes.append(f"{aa} metadata sessions of A/A calibration runs (labels A/B) "
                                 "are left out of the metadata tables")
        long = metadata_tables.metadata_stats(wide, archs)
        return MetadataTables(stats=long,
                              comparison=metadata_tables.metadata_comparison(long, archs),
                              scaling=metadata_tables.scaling(long, archs), archs=archs)

    def from_tables(self, tables: Mapping[str, pd.DataFrame], archs: Archs) -> MetadataTables:
        return MetadataTables(stats=table(tables, "metadata_stats"),
                              comparison=table(tables, "metadata_comparison"),
                              scaling=table(tables, "metadata_scaling"), archs=archs)


STUDY: Study = MetadataStudy()
