"""The paper study: the DSBS paper's experiments (split and streaming, closed loop, plaintext)
on our twins, beside the paper's own numbers."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from spark_analysis.archs import DEFAULT, Archs
from spark_analysis.cost import coordination_cost
from spark_analysis.rows import paper_only
from spark_analysis.studies.paper import aggregate, printed, section
from spark_analysis.studies.paper import tables as paper_tables
from spark_analysis.study import Context, Study, table


def _empty() -> pd.DataFrame:
    return pd.DataFrame()


@dataclass
class PaperTables:
    """The paper study's tables; ``cell_stats`` is empty when no run measured its scenarios.

    ``cell_stats`` (long: n/mean/sd per cell x arch x side x metric) and ``tries`` (per try)
    feed ``appendix`` (the paper's layout, one table per grid and architecture) and
    ``comparison`` (every other architecture beside the baseline, the paper's ratio beside
    ours); ``aa`` and ``noise`` are the A/A calibration; ``latency``, ``latency_distribution``
    and ``coordination`` are per cell; ``printed`` is the paper's appendix (long)."""

    cell_stats: pd.DataFrame = field(default_factory=_empty)
    tries: pd.DataFrame = field(default_factory=_empty)
    comparison: pd.DataFrame = field(default_factory=_empty)
    # DSBS/ZK in two steps through the Raft twin (empty unless a run measured all three).
    decomposition: pd.DataFrame = field(default_factory=_empty)
    appendix: dict[str, pd.DataFrame] = field(default_factory=dict)
    aa: pd.DataFrame = field(default_factory=_empty)
    noise: pd.DataFrame = field(default_factory=_empty)
    latency: pd.DataFrame = field(default_factory=_empty)
    latency_distribution: pd.DataFrame = field(default_factory=_empty)
    coordination: pd.DataFrame = field(default_factory=_empty)
    printed: pd.DataFrame = field(default_factory=_empty)
    # The most tries any cell has (the appendix shows MAX_TRY_COLUMNS of them).
    max_try: int = 0
    # records.csv rows of the paper's scenarios.
    input_rows: int = 0
    archs: Archs = DEFAULT

    @property
    def empty(self) -> bool:
        return bool(self.cell_stats.empty)

    def tables(self) -> dict[str, pd.DataFrame]:
        # Always written, empty or not: every report has had these files since format 1.
        return {
            "cell_stats": self.cell_stats,
            "comparison": self.comparison,
            "decomposition": self.decomposition,
            "latency": self.latency,
            "latency_distribution": self.latency_distribution,
            "coordination_cost": self.coordination,
            "aa_calibration": self.aa,
            "noise_floor": self.noise,
            **{f"appendix_{name}": t for name, t in self.appendix.items()},
        }

    def figures(self, out: Path, archs: Archs) -> list[Path]:
        from spark_analysis.studies.paper import figures

        return figures.draw(self.comparison, self.latency_distribution, self.coordination,
                            out, archs)

    def headline(self) -> str:
        return section.headline(self.comparison, self.archs)

    def section(self) -> str:
        return section.paper_md(appendix=self.appendix, max_try=self.max_try,
                                input_rows=self.input_rows, comparison=self.comparison,
                                decomposition=self.decomposition,
                                latency=self.latency, coordination=self.coordination,
                                aa=self.aa, noise=self.noise, archs=self.archs)


class PaperStudy:
    name = "paper"
    title = "The DSBS paper's experiments"

    def compute(self, context: Context) -> PaperTables:
        logs, archs, records = context.logs, context.archs, context.records
        cell_stats, cell_latency = aggregate.cell_stats(records)
        tries = aggregate.per_try(records)
        rps_n = cell_stats.loc[cell_stats["metric"] == "rps", "n"]
        max_try = int(rps_n.max()) if not rps_n.empty else 0
        coordination = paper_only(logs.coordination) if logs.coordination is not None else None
        cost = (coordination_cost(coordination, records)
                if coordination is not None else pd.DataFrame())
        hists = (aggregate.latency_histograms(paper_only(logs.latency), records)
                 if logs.latency is not None else pd.DataFrame())
        paper_long = printed.load_paper()
        ratios = printed.paper_ratios(paper_long)
        appendix = {}
        for grid in paper_tables.PAPER_TABLES:
            for arch in archs.names:
                t = paper_tables.appendix(tries, cell_stats, grid, arch)
                if not t.empty:
                    appendix[f"{grid}_{arch}"] = t
        aa = paper_tables.aa_calibration(cell_stats)
        return PaperTables(
            cell_stats=cell_stats, tries=tries,
            comparison=paper_tables.comparison(cell_stats, ratios, archs), appendix=appendix,
            decomposition=paper_tables.decomposition(cell_stats),
            aa=aa, noise=paper_tables.noise_floor(aa),
            latency=paper_tables.latency(cell_latency),
            latency_distribution=paper_tables.latency_distribution(hists),
            coordination=paper_tables.coordination(cost), printed=paper_long, max_try=max_try,
            input_rows=int(cell_stats.loc[cell_stats["metric"] == "rps", "rows"].sum()),
            archs=archs)

    def from_tables(self, tables: Mapping[str, pd.DataFrame], archs: Archs) -> PaperTables:
        return PaperTables(comparison=table(tables, "comparison"),
                           decomposition=table(tables, "decomposition"),
                           latency_distribution=table(tables, "latency_distribution"),
                           coordination=table(tables, "coordination_cost"), archs=archs)


STUDY: Study = PaperStudy()
