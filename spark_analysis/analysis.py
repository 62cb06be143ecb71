"""What the job hands its callers: every study's result, plus the runs, notes, architectures and
timings, and the two tables that belong to no study (runs, architectures).

``results`` holds each study's result under its registry name, in report order. The properties
name what the callers (the CLI, the notebook, the tests) read of the studies: a new study needs
none, its result is ``analysis.results[name]``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

import pandas as pd

from spark_analysis.archs import Archs
from spark_analysis.loader import RunInfo
from spark_analysis.study import StudyResult

if TYPE_CHECKING:
    from spark_analysis.studies.faults.study import FaultTables
    from spark_analysis.studies.latency.study import LatencyTables
    from spark_analysis.studies.metadata.study import MetadataTables
    from spark_analysis.studies.paper.study import PaperTables
    from spark_analysis.studies.qos.study import QosTables
    from spark_analysis.studies.rtt.study import RttTables
    from spark_analysis.studies.security.study import SecurityTables


@dataclass
class Analysis:
    runs: list[RunInfo]
    notes: list[str]
    # The architectures shown and how (from the run manifests, spark_analysis/archs.py).
    archs: Archs
    # Registry name -> the study's result, in report order (spark_analysis/studies/).
    results: dict[str, StudyResult]
    timings: dict[str, float] = field(default_factory=dict)

    # --- each study's result -------------------------------------------------------------------
    @property
    def paper(self) -> PaperTables:
        return cast("PaperTables", self.results["paper"])

    @property
    def security(self) -> SecurityTables:
        return cast("SecurityTables", self.results["security"])

    @property
    def qos(self) -> QosTables:
        return cast("QosTables", self.results["qos"])

    @property
    def open_loop(self) -> LatencyTables:
        """The latency study's result (``latency`` is the paper's latency percentiles)."""
        return cast("LatencyTables", self.results["latency"])

    @property
    def faults(self) -> FaultTables:
        return cast("FaultTables", self.results["faults"])

    @property
    def metadata(self) -> MetadataTables:
        return cast("MetadataTables", self.results["metadata"])

    @property
    def rtt(self) -> RttTables:
        return cast("RttTables", self.results["rtt"])

    # --- the paper study's tables, as the callers have always read them -------------------------
    @property
    def cell_stats(self) -> pd.DataFrame:
        return self.paper.cell_stats

    @property
    def tries(self) -> pd.DataFrame:
        return self.paper.tries

    @property
    def comparison(self) -> pd.DataFrame:
        return self.paper.comparison

    @property
    def appendix(self) -> dict[str, pd.DataFrame]:
        return self.paper.appendix

    @property
    def aa(self) -> pd.DataFrame:
        return self.paper.aa

    @property
    def noise(self) -> pd.DataFrame:
        return self.paper.noise

    @property
    def latency(self) -> pd.DataFrame:
        return self.paper.latency

    @property
    def latency_distribution(self) -> pd.DataFrame:
        return self.paper.latency_distribution

    @property
    def coordination(self) -> pd.DataFrame:
        return self.paper.coordination

    @property
    def max_try(self) -> int:
        return self.paper.max_try

    @property
    def input_rows(self) -> int:
        return self.paper.input_rows

    # --- the latency study's ----------------------------------------------------------------------
    @property
    def latency_curves(self) -> pd.DataFrame:
        return self.open_loop.curves

    @property
    def max_rates(self) -> pd.DataFrame:
        return self.open_loop.max_rates


def runs_table(runs: Sequence[RunInfo]) -> pd.DataFrame:
    rows = []
    for r in runs:
        m = r.manifest
        rows.append({
            "run_id": r.run_id, "arch": r.arch, "label": r.label, "workload": r.workload,
            "started_at": m.get("started_at"), "incomplete": r.incomplete,
            "failed_cells": " ".join(r.failed_cells),
            "git_commit": (m.get("git") or {}).get("commit"),
            "cpu_model": (m.get("host") or {}).get("cpu_model"),
            "cpu_count": (m.get("host") or {}).get("cpu_count"),
            "policies": " ".join(f"{k}={v}" for k, v in (m.get("policies") or {}).items()),
        })
    return pd.DataFrame(rows)


def architectures_table(archs: Archs) -> pd.DataFrame:
    """How the report shows each architecture (figures.read_archs reads it back)."""
    return pd.DataFrame([dataclasses.asdict(a) for a in archs])
