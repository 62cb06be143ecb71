"""The rtt study's figures (format 6), PNG + SVG in the style of spark_analysis/plotting.py.

rtt-<table>-<size>B-b<batch>-<policies>: the throughput ratio of every other architecture to the
baseline (DSBS/ZK) against the round-trip time added between hosts, one panel per scenario and role.
Measured: markers at the ratio of the means, error bars = its 95% Fieller interval over tries
(none with a single try). Model (tables.py): a dashed line of the same colour, predicted
from the sweep's rtt-0 sessions and their counters; a dotted horizontal line is its limit at
large rtt (round trips per record, baseline over other). The x axis is linear up to 1 ms and
logarithmic beyond (symlog), so 0, 0.5 and 1 ms stay apart from 5 and 10; the y axis ends at
1.5x the largest ratio drawn, so an interval of a few noisy tries may run off it (the table
has its bounds).
"""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.ticker import FixedLocator, FuncFormatter

from spark_analysis.archs import DEFAULT, Archs
from spark_analysis.plotting import save, slug

PANELS = (("split", "production"), ("split", "consumption"),
          ("streaming", "production"), ("streaming", "consumption"))


def _ms(v: float, _pos: object = None) -> str:
    return f"{v:g}"


def sweep_figure(cmp: pd.DataFrame, out: Path, name: str, title: str,
                 archs: Archs = DEFAULT) -> list[Path]:
    panels = [p for p in PANELS if ((cmp["scenario"] == p[0]) & (cmp["role"] == p[1])).any()]
    if not panels:
        return []
    fig, axes = plt.subplots(1, len(panels), figsize=(3.5 * len(panels), 3.4), squeeze=False)
    rtts = sorted(cmp["rtt_ms"].astype(float).unique())
    for ax, (scenario, role) in zip(axes[0], panels, strict=True):
        sub = cmp[(cmp["scenario"] == scenario) & (cmp["role"] == role)]
        for o in archs.others:
            g = sub[sub["other"] == o.name].sort_values("rtt_ms")
            if g.empty:
                continue
            x = g["rtt_ms"].astype(float).to_numpy()
            y = g["ratio"].astype(float).to_numpy()
            lo = [yy - c if math.isfinite(c) else 0.0
                  for yy, c in zip(y, g["ratio_lo"].astype(float), strict=True)]
            hi = [c - yy if math.isfinite(c) else 0.0
                  for yy, c in zip(y, g["ratio_hi"].astype(float), strict=True)]
            ax.errorbar(x, y, yerr=[lo, hi], color=o.color, marker="o", ms=4, lw=0,
                        elinewidth=1.2, capsize=3, label=f"{archs.ratio_name(o)} measured")
            ax.plot(x, g["ratio_model"].astype(float), color=o.color, ls="--", lw=1.3,
                    label="model")
            limit = g["ratio_limit"].astype(float).mean()
            if math.isfinite(limit):
                ax.axhline(limit, color=o.color, ls=":", lw=1, label=f"limit {limit:.2g}")
        ax.axhline(1.0, color="0.6", lw=0.8)
        shown = pd.concat([sub["ratio"], sub["ratio_model"], sub["ratio_limit"]]).astype(float)
        shown = shown[shown.apply(math.isfinite)]
        if not shown.empty:  # a few tries' interval can be huge: cut at the frame
            ax.set_ylim(0, max(1.2, float(shown.max()) * 1.5))
        ax.set_xscale("symlog", linthresh=1.0)
        ax.set_xlim(-0.1, max(rtts) * 1.15 if rtts and max(rtts) > 0 else 1.0)
        ax.xaxis.set_major_locator(FixedLocator(rtts))
        ax.xaxis.set_major_formatter(FuncFormatter(_ms))
        ax.set_xlabel("round-trip time added (ms)", fontsize=8)
        ax.set_title(f"{scenario} {role}", fontsize=9)
        ax.grid(True, alpha=0.3)
        ax.tick_params(labelsize=8)
    axes[0][0].set_ylabel("throughput ratio", fontsize=8)
    axes[0][0].legend(fontsize=7)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return save(fig, out, name)


def draw_rtt(cmp: pd.DataFrame, out: Path, archs: Archs = DEFAULT) -> list[Path]:
    """rtt-* per workload and policy combination; [] without round-trip-time sweeps."""
    if cmp.empty:
        return []
    out.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    keys = ["workload", "table", "msg_size", "batch", "offset_commit", "metadata_check"]
    groups = list(cmp.groupby(keys, dropna=False))
    several = len({k[0] for k, _ in groups}) > 1
    for (workload, table, size, batch, commit, check), g in groups:
        policies = f"{commit}+{check}"
        name = "rtt-" + (f"{slug(str(workload))}-" if several else "") + slug(
            f"{table}-{size}B-b{batch}-{policies}")
        title = (f"Throughput ratio vs round-trip time, measured (95% CI) and "
                 f"modelled · {size} B x {batch} · {policies}")
        paths += sweep_figure(g, out, name, title, archs)
    return paths
