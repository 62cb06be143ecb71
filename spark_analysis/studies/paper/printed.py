"""The DSBS paper's own numbers (its appendix, long format) for side-by-side comparison.

``spark_analysis/paper_appendix.csv`` holds the paper's appendix tables (docs/architecture.md
cites the paper) in long format, shipped with the package so a report can always show the
paper beside our numbers. The paper says ``stream`` where our logs say ``streaming``; it is
renamed on load so the two join on equal keys.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from spark_analysis import stats

# Package data of spark_analysis itself (pyproject.toml ships spark_analysis/*.csv).
PAPER_CSV = Path(__file__).resolve().parents[2] / "paper_appendix.csv"
PAPER_KEY = ["table", "scenario", "role", "msg_size", "batch", "metric"]
# The paper's two systems as its appendix names them: its baseline and the one it proposes.
PAPER_ARCHS = ("zk", "dsbs")
# The columns paper_ratios adds for them (their printed averages).
PAPER_COLUMNS = [f"paper_{a}" for a in PAPER_ARCHS]


def load_paper(path: Path = PAPER_CSV) -> pd.DataFrame:
    """Long table: table, arch, scenario, role, msg_size, batch, try ('1'..'4', 'avg'), metric,
    value."""
    df = pd.read_csv(path, dtype={"try": str})
    df["scenario"] = df["scenario"].replace({"stream": "streaming"})
    return df


def paper_means(paper: pd.DataFrame) -> pd.DataFrame:
    """The paper's printed averages: one row per PAPER_KEY x arch."""
    avg = paper[paper["try"] == "avg"]
    return avg.pivot_table(index=PAPER_KEY, columns="arch", values="value").reset_index()


def paper_ratios(paper: pd.DataFrame) -> pd.DataFrame:
    """Per PAPER_KEY: the paper's DSBS and ZK averages, their ratio, and - since the paper
    printed its tries - the Welch p-value it never reported."""
    base, other = PAPER_ARCHS
    tries = paper[paper["try"] != "avg"]
    printed = paper_means(paper).set_index(PAPER_KEY)
    rows = []
    for key, grp in tries.groupby(PAPER_KEY):
        z = grp.loc[grp["arch"] == base, "value"]
        d = grp.loc[grp["arch"] == other, "value"]
        if z.empty or d.empty:
            continue
        w = stats.welch(d.mean(), d.std(ddof=1), len(d), z.mean(), z.std(ddof=1), len(z))
        # The ratio of the averages the paper printed (what a reader of the paper sees).
        base_avg, other_avg = printed.loc[key, base], printed.loc[key, other]
        rows.append({**dict(zip(PAPER_KEY, key, strict=True)),
                     **dict(zip(PAPER_COLUMNS, (base_avg, other_avg), strict=True)),
                     "paper_ratio": other_avg / base_avg, "paper_p": w.p})
    return pd.DataFrame(rows, columns=[*PAPER_KEY, *PAPER_COLUMNS, "paper_ratio", "paper_p"])
