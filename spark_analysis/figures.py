"""The report's figures: every study draws its own (studies/<name>/figures.py, in the style of
plotting.py); this module asks each study's result for them, and redraws them from the CSVs
an analysis wrote, without Spark.

File names say which study drew them: the paper study keeps the DSBS paper's fig01-fig12 and
names the rest paper-*; every other figure is <study>-<what> (faults-kill-leader, rtt-...).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from spark_analysis import studies
from spark_analysis.analysis import Analysis
from spark_analysis.archs import DEFAULT, ArchLabel, Archs
from spark_analysis.study import StudyResult


def draw_all(analysis: Analysis, out: Path) -> list[Path]:
    """Every study's figures, in report order; the PNG and SVG paths written."""
    out.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    for result in analysis.results.values():
        paths += result.figures(out, analysis.archs)
    return paths


def read_archs(report_dir: Path) -> Archs:
    """The architectures as the analysis that wrote ``report_dir`` showed them
    (architectures.csv; reports written before that file: zk and dsbs)."""
    path = report_dir / "architectures.csv"
    if not path.is_file():
        return DEFAULT
    rows = pd.read_csv(path, keep_default_na=False).to_dict("records")
    return Archs(tuple(ArchLabel(**{k: v.item() if hasattr(v, "item") else v
                                    for k, v in r.items()}) for r in rows))


def read_tables(report_dir: Path) -> dict[str, pd.DataFrame]:
    """Every CSV ``twinbench analyze`` wrote into ``report_dir``, by file stem (an empty table
    as an empty frame)."""
    def read(path: Path) -> pd.DataFrame:
        if path.stat().st_size <= 1:
            return pd.DataFrame()
        try:
            return pd.read_csv(path, keep_default_na=True)
        except pd.errors.EmptyDataError:
            return pd.DataFrame()

    return {p.stem: read(p) for p in sorted(report_dir.glob("*.csv"))}


def read_results(report_dir: Path) -> dict[str, StudyResult]:
    """Every study's result again from the CSVs in ``report_dir`` (Study.from_tables), enough
    to draw its figures; registry name -> result, in report order."""
    tables = read_tables(report_dir)
    archs = read_archs(report_dir)
    return {s.name: s.from_tables(tables, archs) for s in studies.every()}


def redraw(report_dir: Path, out: Path | None = None) -> list[Path]:
    """The figures of the analysis that wrote ``report_dir``, from its CSVs alone, into
    ``out`` (default: the same directory)."""
    target = out or report_dir
    target.mkdir(parents=True, exist_ok=True)
    archs = read_archs(report_dir)
    paths: list[Path] = []
    for result in read_results(report_dir).values():
        paths += result.figures(target, archs)
    return paths
