"""The latency study's figures: latency-throughput curves of open-loop sessions, PNG + SVG in
the style of spark_analysis/plotting.py.

latency-<workload>-<table>-<size>B-b<batch>: one figure per (workload, size, batch), one panel
per policy combination (the paper's policies beside cached checks, when the run swept them).
x: the achieved rate (records/s), y: end-to-end latency from intended send to consumption; both
log scale. Each architecture in its colour: p99 solid with circles, p50 dashed with squares,
each point the mean over tries with its 95% t interval as a band. A point whose producers fell
behind their schedule in some try is drawn hollow: its latency belongs to a rate the client did
not keep.
"""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.ticker import FuncFormatter, NullFormatter

from spark_analysis.archs import DEFAULT, Archs
from spark_analysis.plotting import human, save, slug


def _ms(v: float, _pos: object = None) -> str:
    return f"{v / 1000:g} ms" if v < 1e6 else f"{v / 1e6:g} s"


def draw_latency(curves: pd.DataFrame, out: Path, archs: Archs = DEFAULT) -> list[Path]:
    if curves.empty:
        return []
    paths: list[Path] = []
    figure_key = ["workload", "table", "msg_size", "batch"]
    for (workload, table, size, batch), fig_rows in curves.groupby(figure_key, sort=False):
        panels = list(fig_rows.groupby(["offset_commit", "metadata_check"], sort=False))
        fig, axes = plt.subplots(1, len(panels), figsize=(6.2 * len(panels), 4.4),
                                 squeeze=False, sharey=True)
        for ax, ((oc, mc), rows) in zip(axes[0], panels, strict=True):
            _panel(ax, rows, archs)
            ax.set_title(f"offset_commit={oc} · metadata_check={mc}", fontsize=9)
        axes[0][0].set_ylabel("end-to-end latency (intended send → consumed)")
        fig.suptitle(f"Latency at a given load: {size} B records, batch {batch} "
                     f"(workload {workload})", fontsize=11)
        fig.tight_layout()
        paths += save(fig, out, f"latency-{slug(f'{workload}-{table}-{size}B-b{batch}')}")
    return paths


def _panel(ax: plt.Axes, rows: pd.DataFrame, archs: Archs) -> None:
    for arch, g in rows.groupby("arch", sort=False):
        label = archs[str(arch)] if str(arch) in archs.names else None
        color = label.color if label else "grey"
        name = label.display_name if label else str(arch)
        g = g.sort_values("achieved_rate")
        x = g["achieved_rate"].to_numpy(float)
        for pct, style, marker in (("p99", "-", "o"), ("p50", "--", "s")):
            y = g[f"e2e_{pct}_us"].to_numpy(float)
            lo = g[f"e2e_{pct}_ci_lo"].to_numpy(float)
            hi = g[f"e2e_{pct}_ci_hi"].to_numpy(float)
            ax.plot(x, y, style, color=color, label=f"{name} {pct}")
            kept = (g["behind"] == 0).to_numpy()
            ax.scatter(x[kept], y[kept], marker=marker, color=color, zorder=3, s=22)
            ax.scatter(x[~kept], y[~kept], marker=marker, facecolors="none",
                       edgecolors=color, zorder=3, s=22)
            ok = [math.isfinite(a) and math.isfinite(b) and a > 0 for a, b in zip(lo, hi,
                                                                                   strict=True)]
            if any(ok):
                ax.fill_between(x, [a if k else v for a, v, k in zip(lo, y, ok, strict=True)],
                                [b if k else v for b, v, k in zip(hi, y, ok, strict=True)],
                                color=color, alpha=0.15, linewidth=0)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(human))
    ax.yaxis.set_major_formatter(FuncFormatter(_ms))
    # Log axes label their minor ticks too; over less than a decade they collide.
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("achieved rate (records/s, all producers)")
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=8)

