"""What a study is: one kind of experiment, from the run logs to its CSV tables, figures and
report section (the studies themselves: spark_analysis/studies/).

The job hands every study the same ``Context`` and keeps what ``compute`` returns; the CSV
writer, the figures and the report then ask each result the same five questions. A study
imports shared modules (this one, archs, schema, stats, rows, order, plotting, markdown,
loader) and never another study, the job, the report or the figures' frame.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import pandas as pd

from spark_analysis.archs import Archs

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from spark_analysis.loader import RunLogs


@dataclass(frozen=True)
class Context:
    """What every study computes from."""

    logs: RunLogs
    archs: Archs
    # The report's "Notes on the inputs": a study appends what a reader must know about the
    # rows it left out.
    notes: list[str]
    # records.csv rows of the paper's scenarios (rows.paper_only), persisted by the job for
    # the time the studies run: several of the paper study's passes read them.
    records: DataFrame


class StudyResult(Protocol):
    """A study's tables (small pandas frames) and what it makes of them."""

    @property
    def empty(self) -> bool:
        """Nothing of this kind among the inputs (its section says so, it draws nothing)."""

    def tables(self) -> dict[str, pd.DataFrame]:
        """The CSVs to write, name (file stem) -> frame; {} writes none."""

    def figures(self, out: Path, archs: Archs) -> list[Path]:
        """Draw its figures into ``out`` (PNG + SVG), shown as ``archs`` say; the paths."""

    def headline(self) -> str:
        """Markdown lines for the report's Summary; "" for none."""

    def section(self) -> str:
        """The body of its report section (the report writes the heading: Study.title)."""


class Study(Protocol):
    @property
    def name(self) -> str:
        """Its registry name (spark_analysis/studies/__init__.py) and its figures' prefix."""

    @property
    def title(self) -> str:
        """Its report section's heading."""

    def compute(self, context: Context) -> StudyResult:
        """The Spark and pandas work: the result, empty when the inputs hold nothing of it."""

    def from_tables(self, tables: Mapping[str, pd.DataFrame], archs: Archs) -> StudyResult:
        """The result again from the CSVs its ``tables()`` wrote (file stem -> frame; those
        missing are empty), enough to redraw its figures without Spark."""


def table(tables: Mapping[str, pd.DataFrame], name: str) -> pd.DataFrame:
    """``tables[name]``, or an empty frame when that CSV was not written."""
    found = tables.get(name)
    return found if found is not None else pd.DataFrame()
