"""The faults study's figures (format 2), PNG + SVG in the style of spark_analysis/plotting.py.

* faults-<case>: throughput through one fault case. Columns ZooKeeper | DSBS (one per
  architecture, in their order), rows
  acknowledged (produced) | consumed records/s; the two architectures share both axes, so a
  dip is compared at a glance. Every try is a thin line, the mean over tries a thick one; each
  is smoothed over SMOOTH_S (a moving mean: single 0.1 s buckets are mostly Poisson noise of
  the batching). Produced and consumed get separate rows rather than two colours in one panel:
  with every try drawn, four overlaid families would hide the dip they are there to show.
* faults-summary: detection, unavailability (longest produce gap) and group recovery per
  case, ZooKeeper beside DSBS: bars = mean, error bars = 95% t interval over tries, dots =
  the tries themselves (a handful per case, so the reader sees the spread, not just a bar).

Fault markers: one vertical line per schedule step (kill, restart, ...) at the mean over tries
of the time it was injected (``at_s``), with a light band from the earliest to the latest try.
The tries are laid over each other on the session's clock, so one marker per step matches the
thick mean line; the band shows how far the individual tries' markers would have scattered
(the injector's jitter is milliseconds, the band is usually invisible - when it is not, that
is worth seeing). Openers are red, closers green.
"""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.artist import Artist
from matplotlib.ticker import FuncFormatter
from matplotlib.transforms import blended_transform_factory

from spark_analysis.archs import DEFAULT, Archs
from spark_analysis.plotting import human, save, slug, subtitle
from spark_analysis.schema import FAULT_KEY
from spark_analysis.studies.faults.tables import METRIC_TITLES, case_labels, with_keys

# Width of the moving mean over the timeline's buckets (seconds).
SMOOTH_S = 0.5
OPENERS = frozenset({"kill", "pause", "partition", "stop-zookeeper", "kill-zookeeper"})
OPENER_COLOR = "#C44E52"
CLOSER_COLOR = "#55A868"
SUMMARY_METRICS = ("detection_s", "produce_gap_s", "group_recovery_s")
SERIES = (("produced", "acknowledged (produced)"), ("consumed", "consumed"))
# A row's axis stops at this multiple of the target rate when a burst would exceed it.
OFF_SCALE = 3.0
TRY_KEY = ["run_id", "try"]
# The summary's file name; a case of the same name gets another (draw_faults).
SUMMARY = "faults-summary"


def rates(timeline: pd.DataFrame, smooth_s: float = SMOOTH_S) -> pd.DataFrame:
    """Per session (FAULT_KEY x arch x run x try) and bucket: produced and consumed records/s,
    smoothed by a centred moving mean over ``smooth_s``.

    A bucket missing inside a session's span is a bucket in which nothing happened (0), so
    each session is laid on its full grid before smoothing. ``k`` is the bucket index, the
    key the mean over tries aligns on."""
    cols = [*FAULT_KEY, "arch", *TRY_KEY, "k", "t_s", "bucket_s", "produced", "consumed"]
    if timeline.empty:
        return pd.DataFrame(columns=cols)
    frames = []
    for key, grp in timeline.groupby([*FAULT_KEY, "arch", *TRY_KEY], sort=False):
        bucket = float(grp["bucket_s"].iloc[0])
        if not bucket > 0:
            continue
        k = np.rint(grp["t_s"].to_numpy(float) / bucket).astype(int)
        counts = pd.DataFrame({"produced": grp["produced"].fillna(0).to_numpy(float),
                               "consumed": grp["consumed"].fillna(0).to_numpy(float)}, index=k)
        counts = counts.groupby(level=0).sum()
        counts = counts.reindex(range(int(counts.index.min()), int(counts.index.max()) + 1),
                                fill_value=0.0)
        window = max(1, round(smooth_s / bucket))
        smooth = counts.rolling(window, center=True, min_periods=1).mean() / bucket
        part = smooth.reset_index(names="k")
        for name, value in zip([*FAULT_KEY, "arch", *TRY_KEY], key, strict=True):
            part[name] = value
        part["t_s"] = part["k"] * bucket
        part["bucket_s"] = bucket
        frames.append(part)
    if not frames:
        return pd.DataFrame(columns=cols)
    return pd.concat(frames, ignore_index=True)[cols]


def mean_over_tries(session_rates: pd.DataFrame, col: str) -> pd.DataFrame:
    """The mean over tries of one series, bucket by bucket (columns t_s and v).

    A try whose timeline has ended contributes 0, not nothing: its session was over (every
    record consumed), so averaging only the tries still running would make the tail of the
    mean jump each time one ends."""
    wide = session_rates.pivot_table(index="k", columns=TRY_KEY, values=col, aggfunc="sum")
    bucket = float(session_rates["bucket_s"].iloc[0])
    return pd.DataFrame({"t_s": wide.index.to_numpy(float) * bucket,
                         "v": wide.fillna(0.0).mean(axis=1).to_numpy(float)})


def markers(events: pd.DataFrame) -> pd.DataFrame:
    """One marker per case x arch x schedule step: mean, earliest and latest ``at_s`` over the
    tries, and how many tries could not carry the action out."""
    cols = [*FAULT_KEY, "arch", "step", "action", "target", "at_mean", "at_min", "at_max",
            "tries", "failed"]
    if events.empty:
        return pd.DataFrame(columns=cols)
    ev = events.assign(_failed=events["result"].fillna("ok") != "ok")
    out = (ev.groupby([*FAULT_KEY, "arch", "step", "action", "target"], dropna=False)
           .agg(at_mean=("at_s", "mean"), at_min=("at_s", "min"), at_max=("at_s", "max"),
                tries=("at_s", "count"), failed=("_failed", "sum"))
           .reset_index())
    return out[cols]


def _draw_markers(ax: plt.Axes, marks: pd.DataFrame, label: bool) -> None:
    trans = blended_transform_factory(ax.transData, ax.transAxes)
    for m in marks.itertuples(index=False):
        if not math.isfinite(m.at_mean):
            continue
        color = OPENER_COLOR if m.action in OPENERS else CLOSER_COLOR
        if m.at_max > m.at_min:
            ax.axvspan(m.at_min, m.at_max, color=color, alpha=0.12, linewidth=0)
        ax.axvline(m.at_mean, color=color, linewidth=1.0, linestyle="--", zorder=1)
        if label:
            # "stop-zookeeper zookeeper" says it twice; a broker or server target is news.
            named = isinstance(m.target, str) and m.target and m.target != "zookeeper"
            text = f"{m.action} {m.target}" if named else str(m.action)
            if m.failed:
                text += f" (failed in {int(m.failed)} tries)"
            # Inside the outage, where throughput is low and the top of the panel is empty:
            # an opener's label to the right of its line, a closer's to the left (and a little
            # lower, so a short outage does not stack them).
            opener = m.action in OPENERS
            ax.text(m.at_mean, 0.97 if opener else 0.86, f" {text} ", transform=trans,
                    ha="left" if opener else "right", va="top", fontsize=7, color=color,
                    bbox={"facecolor": "white", "alpha": 0.75, "linewidth": 0, "pad": 1.0})


def _cap_row(axes: list[plt.Axes], peaks: list[tuple[float, float] | None],
             rate: float | None) -> None:
    """Keep a row's scale on the steady state: when a burst (the backlog a closer releases)
    exceeds OFF_SCALE x the target rate, the axis stops there and the panel says where the
    mean peaked, instead of flattening the dip the figure is about."""
    top = max((p[0] for p in peaks if p is not None), default=0.0)
    if rate is None or not rate > 0 or top <= OFF_SCALE * rate:
        for ax in axes:
            ax.set_ylim(bottom=0)
        return
    cap = OFF_SCALE * rate
    for ax, peak in zip(axes, peaks, strict=True):
        ax.set_ylim(0, cap)
        if peak is not None and peak[0] > cap:
            ax.text(0.99, 0.03, f"mean off scale: peak {peak[0]:,.0f}/s at {peak[1]:.1f} s",
                    transform=ax.transAxes, ha="right", va="bottom", fontsize=7,
                    color="#333333",
                    bbox={"facecolor": "white", "alpha": 0.75, "linewidth": 0, "pad": 1.0})


def timeline_figure(case_rates: pd.DataFrame, case_marks: pd.DataFrame, title: str,
                    caption: str, name: str, out: Path, rate: float | None = None,
                    archs: Archs = DEFAULT) -> list[Path]:
    """faults-<case> for one case: 2 x N panels (produced / consumed x ZooKeeper / DSBS ...);
    ``rate`` is the sessions' target rate (records/s), drawn as a reference line."""
    fig, axes = plt.subplots(2, len(archs), figsize=(5.25 * len(archs), 6.0), sharex=True,
                             sharey="row", squeeze=False)
    # Per row, per architecture: the mean's peak (value, time) for _cap_row.
    peaks: list[list[tuple[float, float] | None]] = [[None] * len(archs) for _ in SERIES]
    for c, a in enumerate(archs):
        arch = a.name
        arch_rates = case_rates[case_rates["arch"] == arch]
        tries = arch_rates.groupby(TRY_KEY).ngroups if not arch_rates.empty else 0
        for r, (col, what) in enumerate(SERIES):
            ax = axes[r][c]
            if r == 0:
                ax.set_title(f"{a.display_name}" + (f" ({tries} tries)" if tries else ""),
                             fontsize=9)
            if c == 0:
                ax.set_ylabel(f"{what}\n(records/s)")
            if r == 1:
                ax.set_xlabel("seconds from the session's start (first produce request)")
            ax.grid(alpha=0.3)
            ax.set_axisbelow(True)
            if arch_rates.empty:
                ax.text(0.5, 0.5, f"n/a: not run on {a.display_name}", transform=ax.transAxes,
                        ha="center", va="center", fontsize=9, color="#555555")
                continue
            for _k, one in arch_rates.groupby(TRY_KEY):
                ax.plot(one["t_s"], one[col], color=a.color, linewidth=0.7, alpha=0.35)
            mean = mean_over_tries(arch_rates, col)
            ax.plot(mean["t_s"], mean["v"], color=a.color, linewidth=2.2)
            if not mean.empty:
                i = int(np.argmax(mean["v"].to_numpy(float)))
                peaks[r][c] = (float(mean["v"].iloc[i]), float(mean["t_s"].iloc[i]))
            if rate is not None and rate > 0:
                ax.axhline(rate, color="#777777", linewidth=0.8, linestyle=":", zorder=1)
            _draw_markers(ax, case_marks[case_marks["arch"] == arch], label=(r == 0))
    for r in range(len(SERIES)):
        _cap_row(list(axes[r]), peaks[r], rate)
    for ax in axes.flat:
        ax.yaxis.set_major_formatter(FuncFormatter(human))
    key = [plt.Line2D([], [], color="#777777", linewidth=0.7, alpha=0.6),
           plt.Line2D([], [], color="#777777", linewidth=2.2),
           plt.Line2D([], [], color="#777777", linewidth=0.8, linestyle=":"),
           plt.Line2D([], [], color=OPENER_COLOR, linestyle="--", linewidth=1.0),
           plt.Line2D([], [], color=CLOSER_COLOR, linestyle="--", linewidth=1.0)]
    fig.legend(key, ["each try", "mean over tries", "target rate",
                     "fault injected (mean over tries)", "fault undone (mean over tries)"],
               loc="lower center", ncol=5, fontsize=8, frameon=False, bbox_to_anchor=(0.5, 0))
    fig.suptitle(f"{title}\n{caption}", fontsize=10)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    return save(fig, out, name)


def summary_figure(stats_long: pd.DataFrame, sessions: pd.DataFrame, out: Path,
                   name: str = SUMMARY, archs: Archs = DEFAULT) -> list[Path]:
    """faults-summary: detection, unavailability and group recovery per case, ZK vs DSBS, 95% CIs.

    One row per measure (sharing the case axis). The y axis follows the tries and the means,
    not the intervals: with 2-3 tries a t interval can be ten times the spread of the data,
    and would squash everything else; an interval that leaves the panel ends in a caret."""
    if stats_long.empty:
        return []
    names, setting = case_labels(stats_long)
    keys = list(names)
    x = np.arange(len(keys))
    width, offsets = archs.offsets()
    fig, axes = plt.subplots(len(SUMMARY_METRICS), 1, sharex=True,
                             figsize=(max(7.5, 1.0 * len(keys) + 3.5),
                                      2.3 * len(SUMMARY_METRICS) + 1.2))
    for ax, metric in zip(np.atleast_1d(axes), SUMMARY_METRICS, strict=True):
        sub = stats_long[stats_long["metric"] == metric]
        index = {(*(r[k] for k in FAULT_KEY), r["arch"]): r for _, r in sub.iterrows()}
        top = 0.0
        his: list[tuple[float, float]] = []  # (x, upper end of the interval)
        for a, offset in zip(archs, offsets, strict=True):
            arch = a.name
            pos = x + offset
            for p, key in zip(pos, keys, strict=True):
                r = index.get((*key, arch))
                sessions_n = int(r["sessions"]) if r is not None else 0
                if r is None or sessions_n == 0 or int(r["n"]) == 0:
                    ax.text(p, 0, "n/a" if sessions_n == 0 else "none", rotation=90,
                            ha="center", va="bottom", fontsize=7, color="#555555")
                    continue
                mean = float(r["mean"])
                err = None
                if int(r["n"]) > 1 and math.isfinite(r["ci_lo"]):
                    # Durations are never negative: clip the interval's lower end at 0.
                    err = [[mean - max(0.0, float(r["ci_lo"]))], [float(r["ci_hi"]) - mean]]
                    his.append((p, float(r["ci_hi"])))
                ax.bar(p, mean, width, color=a.color, yerr=err, capsize=4,
                       error_kw={"elinewidth": 1.2, "ecolor": "#333333"})
                top = max(top, mean)
                if not sessions.empty:
                    mask = (sessions["arch"] == arch) & sessions[metric].notna()
                    for k, v in zip(FAULT_KEY, key, strict=True):
                        mask &= sessions[k] == v
                    vals = sessions.loc[mask, metric].to_numpy(float)
                    if len(vals):
                        jitter = np.linspace(-0.08, 0.08, len(vals)) if len(vals) > 1 else [0.0]
                        ax.scatter(p + np.asarray(jitter), vals, s=12, color="black",
                                   zorder=5, linewidth=0)
                        top = max(top, float(vals.max()))
        ceiling = top * 1.3 if top > 0 else 1.0
        ax.set_ylim(0, ceiling)
        for p, hi in his:
            if hi > ceiling:
                ax.plot(p, ceiling, marker="^", color="#333333", markersize=5, clip_on=False,
                        zorder=6)
        ax.set_title(METRIC_TITLES[metric], fontsize=9)
        ax.set_ylabel("seconds")
        ax.grid(axis="y", alpha=0.3)
        ax.set_axisbelow(True)
    last = np.atleast_1d(axes)[-1]
    last.set_xticks(x, [names[k] for k in keys], rotation=20, ha="right", fontsize=8)
    last.set_xlim(-0.6, len(keys) - 0.4)  # room for the outer bars' "n/a" labels
    handles: list[Artist] = [plt.Rectangle((0, 0), 1, 1, color=a.color) for a in archs]
    handles += [plt.Line2D([], [], marker="o", linestyle="", color="black", markersize=4),
                plt.Line2D([], [], marker="^", linestyle="", color="#333333", markersize=5)]
    np.atleast_1d(axes)[0].legend(
        handles, [*(f"{a.display_name} (mean ± 95% CI)" for a in archs), "one try",
                  "interval continues above"],
        fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    sub = (subtitle(setting["workload"], setting["offset_commit"], setting["metadata_check"])
           if setting is not None else "several workloads / settings")
    fig.suptitle("Detection, unavailability and consumer-group recovery per fault "
                 f"case\n{sub}\nn/a: case not run on that architecture · none: no try yielded"
                 " a value", fontsize=10)
    fig.tight_layout()
    return save(fig, out, name)


def draw_faults(stats_long: pd.DataFrame, sessions: pd.DataFrame, timeline: pd.DataFrame,
                events: pd.DataFrame, out: Path, archs: Archs = DEFAULT) -> list[Path]:
    """faults-<case> per case and faults-summary; [] when there were no fault sessions."""
    if stats_long.empty:
        return []
    out.mkdir(parents=True, exist_ok=True)
    # The frames may come back from CSV (Study.from_tables), where an empty key is NaN.
    stats_long, sessions, timeline, events = (
        with_keys(df) for df in (stats_long, sessions, timeline, events))
    paths: list[Path] = []
    all_rates = rates(timeline)
    all_marks = markers(events)
    names, _ = case_labels(stats_long)
    used: set[str] = {SUMMARY}
    for key, label in names.items():
        def pick(df: pd.DataFrame, key: tuple[str, ...] = key) -> pd.DataFrame:
            if df.empty:
                return df
            mask = np.ones(len(df), dtype=bool)
            for k, v in zip(FAULT_KEY, key, strict=True):
                mask &= (df[k] == v).to_numpy()
            return df[mask]

        case_rates = pick(all_rates)
        if case_rates.empty:
            continue
        base = f"faults-{slug(label)}"
        fname, i = base, 2
        while fname in used:
            fname, i = f"{base}-{i}", i + 1
        used.add(fname)
        k = dict(zip(FAULT_KEY, key, strict=True))
        caption = (f"{subtitle(k['workload'], k['offset_commit'], k['metadata_check'])}"
                   f" · records per {SMOOTH_S:g} s moving window")
        case_sessions = pick(sessions)
        rate = (float(case_sessions["rate"].mean())
                if not case_sessions.empty and case_sessions["rate"].notna().any() else None)
        paths += timeline_figure(case_rates, pick(all_marks),
                                 f"Fault case {label}: throughput through the fault",
                                 caption, fname, out, rate=rate, archs=archs)
    paths += summary_figure(stats_long, sessions, out, archs=archs)
    return paths
