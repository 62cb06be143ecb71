"""The QoS study's figures (format 8), PNG + SVG in the style of spark_analysis/plotting.py.

qos-<workload>-<scenario>: the Kafka + Prometheus paper's Table II as curves, one panel
per measure it reports (CPU, memory, bytes in and out per second, total time, errors per
second, disk available) against the case's message count (log axis). Every side is a line
(architecture colour; plaintext solid, secured dashed) with 95% error bars over tries; the
paper's printed values are black crosses on a second y axis where its units put them orders of
magnitude away from ours (its memory, total time and CPU), on the same axis otherwise.
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
from spark_analysis.studies.qos.tables import MEASURES, side_name

# The paper's panels in its order: (our measure, the paper's metric).
PANELS = tuple((m, p) for m, (_, p) in MEASURES.items() if p is not None)
# A paper value this many times away from our means gets an axis of its own.
OWN_AXIS = 20.0


def qos_figure(stats_long: pd.DataFrame, paper: pd.DataFrame, workload: str, scenario: str,
               out: Path, archs: Archs = DEFAULT) -> list[Path]:
    sub = stats_long[(stats_long["workload"] == workload) & (stats_long["scenario"] == scenario)
                     & stats_long["messages"].notna()]
    if sub.empty:
        return []
    cases = sorted(sub["messages"].astype(float).unique())
    fig, axes = plt.subplots(2, 4, figsize=(14, 6.4), squeeze=False)
    flat = list(axes.flat)
    for ax, (measure, paper_metric) in zip(flat, PANELS, strict=False):
        mine = sub[sub["measure"] == measure]
        for (arch, security), g in mine.groupby(["arch", "security"], sort=False):
            g = g.sort_values("messages")
            color = archs[arch].color if arch in archs.names else "grey"
            y = g["mean"].astype(float).to_numpy()
            lo = [yy - c if math.isfinite(c) else 0.0 for yy, c in zip(y, g["ci_lo"],
                                                                       strict=True)]
            hi = [c - yy if math.isfinite(c) else 0.0 for yy, c in zip(y, g["ci_hi"],
                                                                       strict=True)]
            ax.errorbar(g["messages"].astype(float), y, yerr=[lo, hi], color=color,
                        ls="-" if security == "none" else "--", marker="o", ms=3.5, lw=1.3,
                        capsize=2, label=side_name(str(arch), str(security), archs))
        printed = paper[(paper["metric"] == paper_metric) & paper["messages"].isin(cases)]
        ours = mine["mean"].abs()
        scale = (ours[ours > 0].median() / printed["value"][printed["value"] > 0].median()
                 if (ours > 0).any() and (printed["value"] > 0).any() else 1.0)
        target = ax.twinx() if not 1 / OWN_AXIS < scale < OWN_AXIS else ax
        target.plot(printed["messages"], printed["value"], "kx", ms=7, mew=1.6,
                    label="paper (Kafka)")
        if target is not ax:
            target.set_ylabel("paper's value", fontsize=7)
            target.tick_params(labelsize=7)
        ax.set_xscale("log")
        ax.xaxis.set_major_locator(FixedLocator(cases))
        ax.xaxis.set_major_formatter(FuncFormatter(human))
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_title(MEASURES[measure][0], fontsize=9)
        ax.set_xlabel("messages", fontsize=8)
        ax.grid(True, alpha=0.3)
        ax.tick_params(labelsize=8)
    for ax in flat[len(PANELS):]:
        ax.axis("off")
    handles, labels = flat[0].get_legend_handles_labels()
    handles.append(plt.Line2D([], [], color="k", marker="x", ls="", ms=7, mew=1.6))
    labels.append("paper (Kafka, SASL+SSL)")
    flat[-1].legend(handles, labels, loc="center", fontsize=8)
    fig.suptitle("The Kafka + Prometheus paper's QoS measures (its Table II) vs "
                 "message count, ours with 95% CI over tries", fontsize=10)
    fig.text(0.5, -0.01, f"workload {workload} · {scenario}", ha="center", fontsize=8)
    fig.tight_layout()
    return save(fig, out, f"qos-{slug(workload)}-{slug(scenario)}")


def draw_qos(stats_long: pd.DataFrame, paper: pd.DataFrame, out: Path,
             archs: Archs = DEFAULT) -> list[Path]:
    """qos-<workload>-<scenario> per workload and scenario; [] when no session sampled the
    brokers' metrics."""
    if stats_long.empty:
        return []
    out.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    for workload, scenario in stats_long[["workload", "scenario"]].drop_duplicates() \
            .itertuples(index=False):
        paths += qos_figure(stats_long, paper, str(workload), str(scenario), out, archs)
    return paths
