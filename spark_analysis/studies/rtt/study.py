"""The rtt study: the DSBS/ZK ratio against the network's round-trip time (format 6,
workload ``rtt_ms``), measured and predicted by the round-trip model."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from spark_analysis.archs import DEFAULT, Archs
from spark_analysis.rows import RTT_CELL
from spark_analysis.studies.rtt import aggregate, section
from spark_analysis.studies.rtt import tables as rtt_tables
from spark_analysis.study import Context, Study, table


def _empty() -> pd.DataFrame:
    return pd.DataFrame()


@dataclass
class RttTables:
    """Round-trip-time sweeps (format 6); all empty when the runs had none.

    ``sessions``: one row per session x role with its round trips (the model's input);
    ``stats``: per sweep point x rtt x arch, records/s with its CI and the model's prediction;
    ``comparison``: the baseline (ZooKeeper) beside every other architecture per point and
    rtt, measured and modelled ratios."""

    sessions: pd.DataFrame = field(default_factory=_empty)
    stats: pd.DataFrame = field(default_factory=_empty)
    comparison: pd.DataFrame = field(default_factory=_empty)
    archs: Archs = DEFAULT

    @property
    def empty(self) -> bool:
        return bool(self.sessions.empty)

    def tables(self) -> dict[str, pd.DataFrame]:
        if self.empty:
            return {}
        return {"rtt_sessions": self.sessions, "rtt_stats": self.stats,
                "rtt_comparison": self.comparison}

    def figures(self, out: Path, archs: Archs) -> list[Path]:
        from spark_analysis.studies.rtt import figures

        return figures.draw_rtt(self.comparison, out, archs)

    def headline(self) -> str:
        return section.rtt_headline(self.comparison)

    def section(self) -> str:
        return section.rtt_md(self.comparison, self.archs)


class RttStudy:
    name = "rtt"
    title = "Round-trip time"

    def compute(self, context: Context) -> RttTables:
        """One small Spark job when no run swept rtt."""
        logs, archs = context.logs, context.archs
        sessions = aggregate.rtt_sessions(logs.records, logs.coordination)
        if sessions.empty:
            return RttTables(archs=archs)
        ids = set(sessions["run_id"])
        counters = aggregate.read_counters([r for r in logs.runs if r.run_id in ids], RTT_CELL)
        with_trips = rtt_tables.round_trips(sessions, counters)
        st = rtt_tables.predict(rtt_tables.rtt_stats(with_trips))
        return RttTables(with_trips, st, rtt_tables.rtt_comparison(st, archs), archs=archs)

    def from_tables(self, tables: Mapping[str, pd.DataFrame], archs: Archs) -> RttTables:
        return RttTables(sessions=table(tables, "rtt_sessions"), stats=table(tables, "rtt_stats"),
                         comparison=table(tables, "rtt_comparison"), archs=archs)


STUDY: Study = RttStudy()
