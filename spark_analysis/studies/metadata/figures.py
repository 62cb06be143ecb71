"""The metadata study's figures (format 5), PNG + SVG in the style of spark_analysis/plotting.py.

metadata-<case>: one panel per headline measure of the case's kind (``tables.HEADLINE``), cost
against the size swept, both axes logarithmic: a power law is a straight line and its slope the
exponent (``tables.scaling``). ZooKeeper and
DSBS are drawn side by side in every panel (their colours, markers at the means, error bars =
95% t interval over tries; none with a single try). A mean of 0 (zk brokers send nothing at
rest) cannot be drawn on a log axis: the point is left out (the table has it); a lower bound at
or below 0 is drawn clipped at ``CLIP`` of the mean.
"""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

from spark_analysis.archs import DEFAULT, Archs
from spark_analysis.plotting import human, save, slug
from spark_analysis.studies.metadata.tables import HEADLINE, METRIC_TITLES, SIZE_TITLES

# A lower 95% bound at or below 0 (2-3 tries of a noisy measure) has no place on a log axis:
# its bar stops at this fraction of the mean, open-ended (the table has the bound).
CLIP = 0.1


def case_figure(stats_long: pd.DataFrame, workload: str, case: str, kind: str, out: Path,
                archs: Archs = DEFAULT, name: str | None = None) -> list[Path]:
    """metadata-<case> for one case; [] when none of its headline measures has a positive mean."""
    sub = stats_long[(stats_long["workload"] == workload) & (stats_long["case"] == case)]
    metrics = [m for m in HEADLINE.get(kind, ()) if
               (sub.loc[sub["metric"] == m, "mean"] > 0).any()]
    if not metrics:
        return []
    fig, axes = plt.subplots(1, len(metrics), figsize=(3.6 * len(metrics), 3.4),
                             squeeze=False)
    for ax, m in zip(axes[0], metrics, strict=True):
        for a in archs:
            g = sub[(sub["metric"] == m) & (sub["arch"] == a.name) & (sub["mean"] > 0)]
            if g.empty:
                continue
            g = g.sort_values("n")
            x = g["n"].astype(float).to_numpy()
            y = g["mean"].astype(float).to_numpy()
            lo = [0.0 if not math.isfinite(c) else yy - max(c, yy * CLIP)
                  for yy, c in zip(y, g["ci_lo"].astype(float), strict=True)]
            hi = [c - yy if math.isfinite(c) else 0.0
                  for yy, c in zip(y, g["ci_hi"].astype(float), strict=True)]
            ax.errorbar(x, y, yerr=[lo, hi], color=a.color, marker="o", ms=4, lw=1.4,
                        capsize=3, label=a.display_name)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(METRIC_TITLES.get(m, m), fontsize=9)
        ax.set_xlabel(SIZE_TITLES.get(kind, "n"), fontsize=8)
        sizes = sorted(sub["n"].astype(float).unique())
        ax.xaxis.set_major_locator(FixedLocator(sizes))
        ax.xaxis.set_major_formatter(FuncFormatter(human))
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.grid(True, which="major", alpha=0.3)
        ax.tick_params(labelsize=8)
    axes[0][0].legend(fontsize=8)
    fig.suptitle(f"Metadata {case}: cost vs {SIZE_TITLES.get(kind, 'size')} "
                 f"(log-log, 95% CI over tries)", fontsize=10)
    fig.text(0.5, -0.02, f"workload {workload} · kind {kind}", ha="center", fontsize=8)
    fig.tight_layout()
    return save(fig, out, name or f"metadata-{slug(case)}")


def draw_metadata(stats_long: pd.DataFrame, out: Path, archs: Archs = DEFAULT) -> list[Path]:
    """metadata-<case> per case; [] when there were no metadata sessions."""
    if stats_long.empty:
        return []
    out.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    cases = stats_long[["workload", "case", "kind"]].drop_duplicates()
    # Two workloads may name a case alike: then the file names say which workload.
    several = cases["workload"].nunique() > 1
    for workload, case, kind in cases.itertuples(index=False):
        name = (f"metadata-{slug(str(workload))}-{slug(str(case))}" if several
                else f"metadata-{slug(str(case))}")
        paths += case_figure(stats_long, str(workload), str(case), str(kind), out, archs, name)
    return paths
