"""The exactly-once study: what transactions cost each architecture, each transaction size
beside the same work without transactions."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from spark_analysis.archs import DEFAULT, Archs
from spark_analysis.studies.transactions import aggregate, section
from spark_analysis.studies.transactions import tables as txn_tables
from spark_analysis.study import Context, Study, table


def _empty() -> pd.DataFrame:
    return pd.DataFrame()


@dataclass
class TransactionsTables:
    """``stats``: long, every measure per cell x side x architecture with its 95% CI;
    ``throughput``: records/s in transactions over records/s without, per cell and
    architecture (Fieller). Both empty when the runs had no transactions sessions."""

    stats: pd.DataFrame = field(default_factory=_empty)
    throughput: pd.DataFrame = field(default_factory=_empty)
    archs: Archs = DEFAULT

    @property
    def empty(self) -> bool:
        return bool(self.stats.empty)

    def tables(self) -> dict[str, pd.DataFrame]:
        if self.empty:
            return {}
        return {"transactions_stats": self.stats, "transactions_throughput": self.throughput}

    def figures(self, out: Path, archs: Archs) -> list[Path]:
        return []

    def headline(self) -> str:
        return section.transactions_headline(self.throughput, self.archs)

    def section(self) -> str:
        return section.transactions_md(self.stats, self.throughput, self.archs)


class TransactionsStudy:
    name = "transactions"
    title = "Exactly-once"

    def compute(self, context: Context) -> TransactionsTables:
        """No Spark job at all when no run has a transactions session."""
        frame = context.logs.table("transactions")
        if frame is None:
            return TransactionsTables(archs=context.archs)
        rows, aa, failed = aggregate.session_rows(frame)
        if aa:
            context.notes.append(f"{aa} exactly-once sessions of A/A calibration runs (labels "
                                 "A/B) are left out of the exactly-once tables")
        if failed:
            context.notes.append(f"{failed} exactly-once sessions whose reader did not read "
                                 "every record exactly once are left out of the exactly-once "
                                 "tables (the runs' failed cells)")
        sessions = txn_tables.per_session(rows)
        long = txn_tables.transactions_stats(sessions, context.archs)
        return TransactionsTables(stats=long,
                                  throughput=txn_tables.throughput(long, context.archs),
                                  archs=context.archs)

    def from_tables(self, tables: Mapping[str, pd.DataFrame],
                    archs: Archs) -> TransactionsTables:
        return TransactionsTables(stats=table(tables, "transactions_stats"),
                                  throughput=table(tables, "transactions_throughput"),
                                  archs=archs)


STUDY: Study = TransactionsStudy()
