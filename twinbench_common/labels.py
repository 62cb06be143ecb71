"""ArchLabels: how one architecture is shown in tables and figures.

The harness's registry (harness/architectures/) gives each architecture its labels and writes
them into every run manifest (key ``architectures``, docs/result-format.md); the analysis
(spark_analysis/archs.py) reads them back from there. This record is the shape both sides agree
on, so its fields are defined once, here.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, kw_only=True)
class ArchLabels:
    # Legends, panel titles and headings: "ZooKeeper".
    display_name: str
    # Table columns and ratios: "ZK" (as in "DSBS/ZK").
    short_name: str
    # Its colour in every figure (a matplotlib colour).
    color: str
    # Its place in tables and figures, lowest first.
    order: int
    # The comparison's reference: every ratio is other / baseline. Exactly one entry has it.
    baseline: bool
    # The coordination.csv column that is its coordination traffic in the cost figure, and what
    # that column counts.
    cost_column: str
    cost_label: str

    def as_manifest(self) -> dict[str, Any]:
        """The manifest's ``architectures.<name>`` value."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(ArchLabels)}


# The manifest keys of an architecture's labels, in declaration order.
LABEL_KEYS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(ArchLabels))


# A regression run's arm of an architecture whose brokers run the base's code is named
# "<arch>@base" (harness/regression writes it, spark_analysis/regress.py pairs by it).
BASE_SUFFIX = "@base"


def base_name(arch: str) -> str:
    return f"{arch}{BASE_SUFFIX}"


def head_of(arm: str) -> str:
    """The head arm a base arm pairs with (itself for a head arm)."""
    return arm.removesuffix(BASE_SUFFIX)
