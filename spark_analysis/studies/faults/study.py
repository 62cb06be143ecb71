"""The faults study: fault sessions (format 2), paced streaming load while a schedule injects
faults; what each case costs in time and in records, on every architecture."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from spark_analysis.archs import DEFAULT, Archs
from spark_analysis.schema import AA_LABELS
from spark_analysis.studies.faults import aggregate, section
from spark_analysis.studies.faults import tables as fault_tables
from spark_analysis.study import Context, Study, table


def _empty() -> pd.DataFrame:
    return pd.DataFrame()


@dataclass
class FaultTables:
    """The fault sessions' tables (format 2); all empty when the runs injected no faults.

    ``sessions``, ``timeline`` and ``events`` are per session / bucket / action (the figures'
    input, also written as CSV so the figures can be redrawn without Spark); ``stats``,
    ``outcomes`` and ``comparison`` are tables.py's summaries."""

    sessions: pd.DataFrame = field(default_factory=_empty)
    stats: pd.DataFrame = field(default_factory=_empty)
    outcomes: pd.DataFrame = field(default_factory=_empty)
    comparison: pd.DataFrame = field(default_factory=_empty)
    timeline: pd.DataFrame = field(default_factory=_empty)
    events: pd.DataFrame = field(default_factory=_empty)
    # Per case x arch x partition (format 9; empty for older runs): where records were lost.
    partitions: pd.DataFrame = field(default_factory=_empty)
    archs: Archs = DEFAULT

    @property
    def empty(self) -> bool:
        return bool(self.sessions.empty)

    def tables(self) -> dict[str, pd.DataFrame]:
        # Only when there were fault sessions: a run without faults gets the same files as
        # before format 2.
        if self.empty:
            return {}
        return {"fault_sessions": self.sessions, "fault_stats": self.stats,
                "fault_outcomes": self.outcomes, "fault_comparison": self.comparison,
                "fault_timeline": self.timeline, "fault_events": self.events,
                "fault_partitions": self.partitions}

    def figures(self, out: Path, archs: Archs) -> list[Path]:
        from spark_analysis.studies.faults import figures

        return figures.draw_faults(self.stats, self.sessions, self.timeline, self.events, out,
                                   archs)

    def headline(self) -> str:
        return section.fault_headline(self.outcomes)

    def section(self) -> str:
        return section.faults_md(self.outcomes, self.comparison, self.empty, self.archs,
                                 self.partitions)


class FaultsStudy:
    name = "faults"
    title = "Faults"

    def compute(self, context: Context) -> FaultTables:
        """No Spark job at all when no run has a fault session."""
        logs, notes, archs = context.logs, context.notes, context.archs
        if logs.faults is None:
            if logs.timeline is not None or logs.fault_events is not None:
                notes.append("timeline.csv or fault_events.csv has rows but no faults.csv "
                             "does; without sessions there is nothing to summarise")
            return FaultTables(archs=archs)
        wide = aggregate.fault_stats(logs.faults)
        sessions = fault_tables.with_keys(aggregate.fault_sessions(logs.faults))
        timeline = (fault_tables.with_policies(aggregate.fault_timeline(logs.timeline), sessions)
                    if logs.timeline is not None else pd.DataFrame())
        events = (fault_tables.with_policies(aggregate.fault_events(logs.fault_events), sessions)
                  if logs.fault_events is not None else pd.DataFrame())
        partitions = (fault_tables.fault_partitions(
            fault_tables.with_policies(aggregate.fault_partitions(logs.fault_partitions),
                                       sessions), archs)
            if logs.fault_partitions is not None else pd.DataFrame())
        aa = int(sessions["side"].isin(AA_LABELS).sum())
        if aa:
            notes.append(f"{aa} fault sessions of A/A calibration runs (labels A/B) are left "
                         "out of the fault tables")
        stats_long = fault_tables.fault_stats(fault_tables.with_keys(wide), archs)
        return FaultTables(
            sessions=sessions[sessions["side"] == "*"].drop(columns=["side"]),
            stats=stats_long,
            outcomes=fault_tables.fault_outcomes(fault_tables.with_keys(wide), archs),
            comparison=fault_tables.fault_comparison(stats_long, archs),
            timeline=timeline[timeline["side"] == "*"].drop(columns=["side"])
            if not timeline.empty else timeline,
            events=events[events["side"] == "*"].drop(columns=["side"])
            if not events.empty else events,
            partitions=partitions, archs=archs,
        )

    def from_tables(self, tables: Mapping[str, pd.DataFrame], archs: Archs) -> FaultTables:
        return FaultTables(sessions=table(tables, "fault_sessions"),
                           stats=table(tables, "fault_stats"),
                           outcomes=table(tables, "fault_outcomes"),
                           comparison=table(tables, "fault_comparison"),
                           timeline=table(tables, "fault_timeline"),
                           events=table(tables, "fault_events"),
                           partitions=table(tables, "fault_partitions"), archs=archs)


STUDY: Study = FaultsStudy()
