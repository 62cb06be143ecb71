"""The report's number format and Markdown pieces every study's section uses.

``fmt`` and ``md_table`` make every table of report.md; the rest are the phrases several
sections share: an interval, a cell's name with its policies, the pairs of a comparison table
(the baseline beside each other architecture), a side's mean ± sd (n) and its interval, or why
there is none.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

from spark_analysis.archs import ArchLabel, Archs


def fmt(v: object, digits: int = 3) -> str:
    """Numbers for people: thousands separators, 3 significant digits below 1000."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if isinstance(v, float) and math.isinf(v):
        return "∞" if v > 0 else "-∞"
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, int | float):
        if abs(v) >= 1000:
            return f"{v:,.0f}"
        return f"{v:.{digits}g}"
    return str(v)


def md_table(df: pd.DataFrame, columns: Sequence[str] | None = None) -> str:
    if df.empty:
        return "_(no data)_\n"
    cols = list(columns or df.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for row in df[cols].itertuples(index=False):
        lines.append("| " + " | ".join(fmt(v).replace("|", "/") for v in row) + " |")
    return "\n".join(lines) + "\n"


def interval(lo: float, hi: float) -> str:
    return f"[{fmt(lo)}, {fmt(hi)}]"


def cell_text(row: pd.Series) -> str:
    """A cell's id, with its policies when they are not the paper's (or it is a policy cell)."""
    text = f"{row['cell_id']}"
    if row["table"] == "policy" or str(row["offset_commit"]) != "every_fetch" \
            or str(row["metadata_check"]) != "per_request":
        text += f" ({row['offset_commit']}, {row['metadata_check']})"
    return text


def pairs(cmp: pd.DataFrame, archs: Archs, marker: str = "n"
          ) -> list[tuple[ArchLabel, pd.DataFrame]]:
    """(other architecture, its rows) for every pair a comparison table holds (one block of
    rows per architecture compared with the baseline)."""
    return [(a, cmp[cmp[f"{a.name}_{marker}"].notna()]) for a in archs.others
            if f"{a.name}_{marker}" in cmp]


def side_text(sessions: int, n: int, mean: float, sd: float) -> str:
    """mean ± sd (n), or why there is none: ``n/a`` = the case was not run on this architecture
    (it does not apply to it), ``none`` = it ran but no try yielded this duration."""
    if sessions == 0:
        return "n/a"
    if n == 0:
        return "none"
    if n == 1:
        return f"{fmt(mean)} (n=1)"
    return f"{fmt(mean)} ± {fmt(sd)} ({n})"


def ci_text(sessions: int, n: int, lo: float, hi: float) -> str:
    """The interval beside ``side_text``: n/a, -, no interval of one try, or [lo, hi]."""
    if sessions == 0:
        return "n/a"
    if n == 0:
        return "-"
    if n == 1:
        return "n=1: no interval"
    return interval(lo, hi)
