"""The figures' shared style: number format, file pair, subtitle and file-name slugs.

Every study draws with matplotlib into PNG + SVG pairs through ``save``, so the report and the
notebook find the same files whichever study drew them. Names, colours and order of the
architectures come from the run manifests (spark_analysis/archs.py), never from here.
"""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; never needs a display (CI, notebooks over SSH)
import matplotlib.pyplot as plt


def human(v: float, _pos: object = None) -> str:
    """An axis tick for people: 1.5k, 2M."""
    if v >= 1e6:
        return f"{v / 1e6:g}M"
    if v >= 1e3:
        return f"{v / 1e3:g}k"
    return f"{v:g}"


def save(fig: plt.Figure, out: Path, slug: str) -> list[Path]:
    """``fig`` as ``<slug>.png`` and ``<slug>.svg`` in ``out``; closes it."""
    paths = [out / f"{slug}.png", out / f"{slug}.svg"]
    fig.savefig(paths[0], dpi=130, bbox_inches="tight")
    fig.savefig(paths[1], bbox_inches="tight")
    plt.close(fig)
    return paths


def subtitle(workload: str, oc: str, mc: str) -> str:
    return f"workload {workload} · offset_commit={oc} · metadata_check={mc}"


def slug(name: str) -> str:
    """A file-name-safe form of a name (a fault case, a workload, a cell)."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "case"
