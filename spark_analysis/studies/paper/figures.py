"""The paper study's figures (matplotlib, PNG + SVG), drawn from its tables only.

fig01-fig12 are the DSBS paper's twelve figures (ZK vs DSBS, one panel each; every architecture
of the comparison side by side), with error bars from the tries (95% confidence interval of the
mean) and the paper's printed averages drawn as markers beside our bars; they keep the paper's
numbers. The study's own figures are named after it: paper-ratio-vs-policy (how the DSBS/ZK
ratio moves with the coordination policy), paper-latency-distribution (merged HDR histograms),
paper-coordination-cost. Names, colours and order come from the run manifests
(spark_analysis/archs.py), never from here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; never needs a display (CI, notebooks over SSH)
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.ticker import FuncFormatter, NullFormatter

from spark_analysis.archs import DEFAULT, Archs
from spark_analysis.plotting import human, save, subtitle
from spark_analysis.schema import PER_1K
from spark_analysis.studies.paper.tables import primary_group

UNITS = {"rps": "records/s", "kbps": "payload kB/s (the paper's \"kbps\")"}
ROLE_TITLE = {"production": "Production", "consumption": "Consumption"}


@dataclass(frozen=True)
class PaperFigure:
    number: int
    role: str
    metric: str
    scenario: str
    table: str  # size_grid (x = message size) or batch_sweep (x = batch)

    @property
    def slug(self) -> str:
        by = "-batch" if self.table == "batch_sweep" else ""
        return f"fig{self.number:02d}-{self.role}-{self.metric}{by}-{self.scenario}"


PAPER_FIGURES: tuple[PaperFigure, ...] = (
    PaperFigure(1, "production", "rps", "split", "size_grid"),
    PaperFigure(2, "production", "rps", "streaming", "size_grid"),
    PaperFigure(3, "production", "kbps", "split", "size_grid"),
    PaperFigure(4, "production", "kbps", "streaming", "size_grid"),
    PaperFigure(5, "consumption", "rps", "split", "size_grid"),
    PaperFigure(6, "consumption", "rps", "streaming", "size_grid"),
    PaperFigure(7, "consumption", "kbps", "split", "size_grid"),
    PaperFigure(8, "consumption", "kbps", "streaming", "size_grid"),
    PaperFigure(9, "production", "rps", "split", "batch_sweep"),
    PaperFigure(10, "production", "rps", "streaming", "batch_sweep"),
    PaperFigure(11, "consumption", "rps", "split", "batch_sweep"),
    PaperFigure(12, "consumption", "rps", "streaming", "batch_sweep"),
)


def paper_figure(comparison: pd.DataFrame, spec: PaperFigure, out: Path,
                 archs: Archs = DEFAULT) -> list[Path]:
    """One of the paper's figures; [] when the runs hold no such cells."""
    group = primary_group(comparison.assign(side="*"), spec.table)
    if group is None:
        return []
    workload, oc, mc = group
    sub = comparison[(comparison["table"] == spec.table) & (comparison["workload"] == workload)
                     & (comparison["offset_commit"] == oc) & (comparison["metadata_check"] == mc)
                     & (comparison["scenario"] == spec.scenario)
                     & (comparison["role"] == spec.role) & (comparison["metric"] == spec.metric)]
    if sub.empty:
        return []
    axis = "batch" if spec.table == "batch_sweep" else "msg_size"
    sub = sub.sort_values(axis)
    cells = sub.drop_duplicates("cell_id")
    labels = [f"{v}" if axis == "batch" else f"{v} B" for v in cells[axis]]
    x = np.arange(len(cells))
    shown = Archs(tuple(a for a in archs if f"{a.name}_mean" in sub))
    width, offsets = shown.offsets()
    fig, ax = plt.subplots(figsize=(7.2, 4.2))
    values: list[float] = []
    for a, offset in zip(shown, offsets, strict=True):
        # One row per cell: a pair's block of the comparison (the baseline is in every one).
        part = (sub.dropna(subset=[f"{a.name}_n"]).drop_duplicates("cell_id")
                .set_index("cell_id").reindex(cells["cell_id"]))
        mean = part[f"{a.name}_mean"].to_numpy(float)
        # Throughput is never negative; with 2 tries t(0.975, 1) = 12.7 makes the interval reach
        # below zero, which would only draw the axis away from the data.
        lo = mean - np.clip(part[f"{a.name}_ci_lo"].to_numpy(float), 0.0, None)
        hi = part[f"{a.name}_ci_hi"].to_numpy(float) - mean
        err = np.nan_to_num(np.vstack([lo, hi]), nan=0.0)
        pos = x + offset
        ax.bar(pos, mean, width, color=a.color,
               label=f"{a.display_name} (ours, mean ± 95% CI)",
               yerr=err, capsize=4, error_kw={"elinewidth": 1.2, "ecolor": "#333333"})
        paper_vals = (part[f"paper_{a.name}"].to_numpy(float) if f"paper_{a.name}" in part
                      else np.full(len(cells), np.nan))
        if np.isfinite(paper_vals).any():
            ax.scatter(pos, paper_vals, marker="D", s=46, color=a.color,
                       edgecolor="black", linewidth=1.0, zorder=5,
                       label=f"{a.display_name} (paper's average)")
            values += [v for v in paper_vals if np.isfinite(v)]
        values += list(mean + err[1])
    positive = [v for v in values if v > 0]
    if positive and max(positive) / min(positive) > 25:
        # Ours and the paper's hardware differ by orders of magnitude: a linear axis would flatten
        # one of them to nothing.
        ax.set_yscale("log")
    else:
        ax.set_ylim(bottom=0)
    ax.yaxis.set_major_formatter(FuncFormatter(human))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_xticks(x, labels)
    ax.set_xlabel("batch size (records per request), 32-byte messages" if axis == "batch"
                  else "message size (bytes), batch 20")
    scale = ", log scale" if ax.get_yscale() == "log" else ""
    ax.set_ylabel(f"{ROLE_TITLE[spec.role].lower()} throughput\n({UNITS[spec.metric]}{scale})")
    what = "vs batch size" if axis == "batch" else "by message size"
    ax.set_title(f"Fig. {spec.number}: {ROLE_TITLE[spec.role]} {spec.metric} {what}, "
                 f"{spec.scenario}\n{subtitle(workload, oc, mc)}", fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return save(fig, out, spec.slug)


def ratio_vs_policy(comparison: pd.DataFrame, out: Path, archs: Archs = DEFAULT
                    ) -> list[Path]:
    """paper-ratio-vs-policy for each architecture compared with the baseline (one figure,
    unless several are: then one per architecture, its name in the file's)."""
    pairs = [a for a in archs.others if f"{a.name}_n" in comparison]
    paths: list[Path] = []
    for a in pairs:
        block = comparison[comparison[f"{a.name}_n"].notna()]
        slug = "paper-ratio-vs-policy" + ("" if len(pairs) == 1 else f"-{a.name}")
        paths += _ratio_vs_policy(block, out, archs.ratio_name(a), slug)
    return paths


def _ratio_vs_policy(comparison: pd.DataFrame, out: Path, ratio: str, slug: str
                     ) -> list[Path]:
    """paper-ratio-vs-policy: the ``ratio`` (DSBS/ZK) of rps (Fieller 95% CI) for each
    coordination policy combination."""
    sub = comparison[(comparison["table"] == "policy") & (comparison["metric"] == "rps")]
    if sub.empty:
        return []
    sub = sub.copy()
    sub["policy"] = sub["offset_commit"] + "\n" + sub["metadata_check"]
    policies = list(dict.fromkeys(sub.sort_values(["offset_commit", "metadata_check"])["policy"]))
    series = [(s, r) for s in ("split", "streaming") for r in ("production", "consumption")]
    fig, ax = plt.subplots(figsize=(max(6.0, 1.5 * len(policies) + 3), 4.2))
    markers = {"production": "o", "consumption": "s"}
    colors = {"split": "#2A9D8F", "streaming": "#8E5EA2"}
    step = 0.16
    for j, (scen, role) in enumerate(series):
        part = sub[(sub["scenario"] == scen) & (sub["role"] == role)].set_index("policy")
        xs, ys, los, his = [], [], [], []
        for i, pol in enumerate(policies):
            if pol not in part.index:
                continue
            row = part.loc[pol]
            if isinstance(row, pd.DataFrame):
                row = row.iloc[0]
            xs.append(i + (j - 1.5) * step)
            ys.append(row["ratio"])
            lo, hi = row["ratio_ci_lo"], row["ratio_ci_hi"]
            los.append(row["ratio"] - lo if math.isfinite(lo) else 0.0)
            his.append(hi - row["ratio"] if math.isfinite(hi) else 0.0)
        if xs:
            ax.errorbar(xs, ys, yerr=[los, his], fmt=markers[role], color=colors[scen],
                        capsize=3, label=f"{scen} {role}")
    ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--")
    ax.text(-0.45, 1.0, "no difference", va="bottom", ha="left", fontsize=8)
    ax.set_xticks(range(len(policies)), policies, fontsize=8)
    ax.set_xlabel("coordination policy (offset_commit / metadata_check)")
    ax.set_ylabel(f"throughput ratio {ratio.replace('/', ' / ')} (records/s)")
    ax.set_title(f"{ratio} ratio as coordination leaves the data path\n"
                 "(points: ratio of means; bars: Fieller 95% CI)", fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return save(fig, out, slug)


def _pick_latency_cell(dist: pd.DataFrame) -> pd.DataFrame:
    """A representative cell: the paper's 32-byte batch-20 size-grid cell when present."""
    for table, size, batch in (("size_grid", 32, 20), ("size_grid", None, 20), (None, None, None)):
        sub = dist
        if table:
            sub = sub[sub["table"] == table]
        if size:
            sub = sub[sub["msg_size"] == size]
        if batch:
            sub = sub[sub["batch"] == batch]
        if not sub.empty:
            first = sub.iloc[0]
            return dist[(dist["workload"] == first["workload"])
                        & (dist["cell_id"] == first["cell_id"])
                        & (dist["offset_commit"] == first["offset_commit"])
                        & (dist["metadata_check"] == first["metadata_check"])]
    return dist.iloc[0:0]


def latency_distributions(dist: pd.DataFrame, out: Path, archs: Archs = DEFAULT
                          ) -> list[Path]:
    """paper-latency-distribution: request latency percentile curves, ZK vs DSBS, one panel per
    scenario x role."""
    dist = dist[dist["kind"] == "request"] if not dist.empty else dist
    cell = _pick_latency_cell(dist)
    if cell.empty:
        return []
    fig, axes = plt.subplots(2, 2, figsize=(9.5, 6.4), sharex=True)
    ticks = [50, 90, 99, 99.9, 99.99]
    for r, scen in enumerate(("split", "streaming")):
        for c, role in enumerate(("production", "consumption")):
            ax = axes[r][c]
            for a in archs:
                part = cell[(cell["scenario"] == scen) & (cell["role"] == role)
                            & (cell["arch"] == a.name) & (cell["percentile"] < 100)]
                if part.empty:
                    continue
                part = part.sort_values("percentile")
                # x = 1/(1-p): the usual HDR plot that stretches the tail.
                x = 1.0 / (1.0 - part["percentile"].to_numpy(float) / 100.0)
                ax.plot(x, part["value_us"].to_numpy(float) / 1000.0, marker=".",
                        color=a.color, label=a.display_name)
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xticks([1 / (1 - t / 100) for t in ticks], [f"{t:g}%" for t in ticks])
            ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))
            ax.yaxis.set_minor_formatter(NullFormatter())
            ax.set_title(f"{scen} · {role}", fontsize=9)
            ax.grid(alpha=0.3, which="both")
            if c == 0:
                ax.set_ylabel("request latency (ms)")
            if r == 1:
                ax.set_xlabel("percentile")
    axes[0][0].legend(loc="upper left", fontsize=8)
    first = cell.iloc[0]
    fig.suptitle(f"Request latency distribution, {first['cell_id']} (all tries merged)\n"
                 f"{subtitle(first['workload'], first['offset_commit'], first['metadata_check'])}",
                 fontsize=10)
    fig.tight_layout()
    return save(fig, out, "paper-latency-distribution")


def coordination_cost(cost: pd.DataFrame, out: Path, archs: Archs = DEFAULT) -> list[Path]:
    """paper-coordination-cost: coordination traffic per 1,000 messages by message size (size
    grid): each architecture's own measure of it (its labels' cost_column, coord_messages: ZooKeeper
    requests, gossip packets ...; its cost_label says which)."""
    if cost.empty:
        return []
    group = primary_group(cost.assign(side="*"), "size_grid")
    if group is None:
        return []
    workload, oc, mc = group
    sub = cost[(cost["table"] == "size_grid") & (cost["workload"] == workload)
               & (cost["offset_commit"] == oc) & (cost["metadata_check"] == mc)]
    fig, axes = plt.subplots(1, 2, figsize=(9.5, 3.8), sharey=True)
    for ax, scen in zip(axes, ("split", "streaming"), strict=True):
        part = sub[sub["scenario"] == scen]
        sizes = sorted(part["msg_size"].unique())
        x = np.arange(len(sizes))
        width, offsets = archs.offsets()
        for a, offset in zip(archs, offsets, strict=True):
            col = PER_1K[a.cost_column]
            vals = [part[(part["arch"] == a.name) & (part["msg_size"] == s)][col].mean()
                    for s in sizes]
            ax.bar(x + offset, vals, width, color=a.color,
                   label=f"{a.display_name}: {a.cost_label}")
        ax.set_xticks(x, [f"{s} B" for s in sizes])
        ax.set_xlabel("message size (bytes), batch 20")
        ax.set_title(scen, fontsize=9)
        ax.grid(axis="y", alpha=0.3)
        ax.set_axisbelow(True)
    axes[0].set_ylabel("coordination messages per 1,000 records")
    axes[1].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.suptitle(f"Coordination cost\n{subtitle(workload, oc, mc)}", fontsize=10)
    fig.tight_layout()
    return save(fig, out, "paper-coordination-cost")


def draw(comparison: pd.DataFrame, latency_distribution: pd.DataFrame,
         coordination: pd.DataFrame, out: Path, archs: Archs = DEFAULT) -> list[Path]:
    """Every figure the tables allow; returns the PNG and SVG paths written."""
    out.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    if not comparison.empty:
        for spec in PAPER_FIGURES:
            paths += paper_figure(comparison, spec, out, archs)
        paths += ratio_vs_policy(comparison, out, archs)
    paths += latency_distributions(latency_distribution, out, archs)
    paths += coordination_cost(coordination, out, archs)
    return paths
