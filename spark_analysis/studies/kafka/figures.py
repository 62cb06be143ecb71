"""The Real Kafka study's figure, PNG + SVG in the style of spark_analysis/plotting.py.

* kafka-four-<workload>-<policies>: records/s of every architecture side by side, one panel
  per scenario (rows) and role (columns), a group of bars per cell (record size x batch) in
  each. Bars are means over tries, error bars the 95% t interval (the tries themselves are in
  the table). The twins and the two Kafkas share each panel's axis, so the
  gap between them, and between each pair's two coordinators, reads at a glance.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.ticker import FuncFormatter

from spark_analysis.archs import Archs
from spark_analysis.plotting import human, save, slug, subtitle

SCENARIOS = ("split", "streaming")
ROLES = ("production", "consumption")


def draw_four(four: pd.DataFrame, out: Path, archs: Archs) -> list[Path]:
    if four.empty:
        return []
    paths: list[Path] = []
    present = [a for a in archs if a.name in set(four["arch"])]
    key = ["workload", "offset_commit", "metadata_check"]
    for (workload, oc, mc), group in four.groupby(key, sort=False):
        cells = (group[["msg_size", "batch"]].drop_duplicates()
                 .sort_values(["msg_size", "batch"]).itertuples(index=False))
        cells = list(cells)
        fig, axes = plt.subplots(len(SCENARIOS), len(ROLES), figsize=(10, 6.5), squeeze=False)
        width = 0.8 / max(1, len(present))
        for i, scenario in enumerate(SCENARIOS):
            for j, role in enumerate(ROLES):
                ax = axes[i][j]
                mine = group[(group["scenario"] == scenario) & (group["role"] == role)]
                for k, a in enumerate(present):
                    xs, ys, lo, hi = [], [], [], []
                    for x, (size, batch) in enumerate(cells):
                        r = mine[(mine["arch"] == a.name) & (mine["msg_size"] == size)
                                 & (mine["batch"] == batch)]
                        if r.empty:
                            continue
                        m = float(r["mean"].iloc[0])
                        xs.append(x + (k - (len(present) - 1) / 2) * width)
                        ys.append(m)
                        lo.append(m - float(r["ci_lo"].iloc[0]) if int(r["n"].iloc[0]) > 1
                                  else 0.0)
                        hi.append(float(r["ci_hi"].iloc[0]) - m if int(r["n"].iloc[0]) > 1
                                  else 0.0)
                    ax.bar(xs, ys, width, color=a.color,
                           label=a.display_name if (i, j) == (0, 0) else None,
                           yerr=np.nan_to_num([lo, hi]), capsize=3, error_kw={"lw": 0.8})
                ax.set_xticks(range(len(cells)),
                              [f"{size} B x {batch}" for size, batch in cells])
                ax.set_title(f"{scenario}, {role}", fontsize=10)
                ax.yaxis.set_major_formatter(FuncFormatter(human))
                ax.set_ylabel("records/s")
                ax.grid(axis="y", alpha=0.3)
        fig.legend(loc="upper center", ncol=len(present), frameon=False,
                   bbox_to_anchor=(0.5, 1.0))
        fig.suptitle(subtitle(str(workload), str(oc), str(mc)), y=0.94, fontsize=9)
        fig.tight_layout(rect=(0, 0, 1, 0.92))
        paths += save(fig, out, f"kafka-four-{slug(str(workload))}-{slug(f'{oc}-{mc}')}")
    return paths
