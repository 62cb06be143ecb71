"""The security study: what TLS and SASL cost each architecture, from the workloads that ran
every cell on a plaintext and a secured cluster."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from spark_analysis.archs import DEFAULT, Archs
from spark_analysis.studies.security import aggregate, section
from spark_analysis.studies.security import tables as security_tables
from spark_analysis.study import Context, Study, table


def _empty() -> pd.DataFrame:
    return pd.DataFrame()


@dataclass
class SecurityTables:
    """``cost``: secured over plaintext per architecture; ``between``: the architectures
    compared at each security level (plaintext included); both empty without secured runs."""

    cost: pd.DataFrame = field(default_factory=_empty)
    between: pd.DataFrame = field(default_factory=_empty)
    archs: Archs = DEFAULT

    @property
    def empty(self) -> bool:
        return bool(self.cost.empty and self.between.empty)

    def tables(self) -> dict[str, pd.DataFrame]:
        if self.empty:
            return {}
        return {"security_cost": self.cost, "security_between": self.between}

    def figures(self, out: Path, archs: Archs) -> list[Path]:
        return []

    def headline(self) -> str:
        return ""

    def section(self) -> str:
        return section.security_md(self.cost, self.between, self.archs)


class SecurityStudy:
    name = "security"
    title = "Security"

    def compute(self, context: Context) -> SecurityTables:
        secured = [r for r in context.logs.runs if r.security != "none"]
        if secured:
            levels = ", ".join(sorted({r.security for r in secured}))
            context.notes.append(f"{len(secured)} runs measured secured clusters ({levels}); "
                                 "their rows are in the Security section only, beside the "
                                 "plaintext runs of the same workloads")
        long = aggregate.security_stats(context.logs.records)
        return SecurityTables(cost=security_tables.cost(long),
                              between=security_tables.between(long, context.archs),
                              archs=context.archs)

    def from_tables(self, tables: Mapping[str, pd.DataFrame], archs: Archs) -> SecurityTables:
        return SecurityTables(cost=table(tables, "security_cost"),
                              between=table(tables, "security_between"), archs=archs)


STUDY: Study = SecurityStudy()
