"""The architectures among the inputs and how to show them: names, colours, order, baseline.

They are defined by the harness's registry (harness/architectures/), which this package may
not import: the harness writes each measured architecture's labels into the run manifests
(``architectures``, docs/result-format.md) and ``Archs.from_manifests`` reads them there. Run
logs written before that key carry no labels; ``BUILTIN`` labels zk and dsbs for them (a unit
test holds it equal to the registry's entries). An architecture named by a run (``arch``,
``run_arches``) but described nowhere gets plain labels: its name, a colour of its own, after
the others, never the baseline.

The set shown: zk and dsbs always (the pair every run log so far implies; a side that did not
run shows as n/a, as before), then every other architecture the inputs name. The baseline is
the comparison's reference: every ratio is other / baseline (DSBS/ZK).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from twinbench_common.errors import UserError
from twinbench_common.labels import LABEL_KEYS, ArchLabels
from twinbench_common.runlog import COORDINATION

# Colours for architectures whose manifests give none (after the built-in pair's).
_PALETTE = ("#55A868", "#8172B2", "#937860", "#DA8BC3", "#8C8C8C", "#CCB974", "#64B5CD")


@dataclass(frozen=True, kw_only=True)
class ArchLabel(ArchLabels):
    """How one architecture is shown (the manifest's ``architectures.<name>``, plus its name)."""

    name: str


# The labels of runs written before manifests carried them (the zk and dsbs entries of
# harness/architectures/ at the time the key was introduced).
BUILTIN: tuple[ArchLabel, ...] = (
    ArchLabel(name="zk", display_name="ZooKeeper", short_name="ZK", color="#4C72B0", order=0,
              baseline=True, cost_column="coord_messages", cost_label="ZooKeeper requests"),
    ArchLabel(name="dsbs", display_name="DSBS", short_name="DSBS", color="#DD8452", order=1,
              baseline=False, cost_column="coord_messages", cost_label="gossip packets"),
)
# coordination.csv's columns of earlier versions -> the current column that replaced them.
_CURRENT_COLUMN: dict[str, str] = {old: c.name for c in COORDINATION.columns for old in c.was}
_TYPES: dict[str, type | tuple[type, ...]] = {
    "display_name": str, "short_name": str, "color": str, "order": int, "baseline": bool,
    "cost_column": str, "cost_label": str}


def validate(value: Any, where: str) -> dict[str, dict[str, Any]]:
    """A manifest's ``architectures`` value, checked: name -> labels; a UserError otherwise."""
    if not isinstance(value, dict):
        raise UserError(f"{where}: architectures is not an object")
    for name, labels in value.items():
        if not isinstance(labels, dict):
            raise UserError(f"{where}: architectures.{name} is not an object")
        for key in LABEL_KEYS:
            v = labels.get(key)
            wrong = not isinstance(v, _TYPES[key]) or (key == "order" and isinstance(v, bool))
            if wrong:
                raise UserError(f"{where}: architectures.{name}.{key} is {v!r}, expected "
                                f"{getattr(_TYPES[key], '__name__', _TYPES[key])}")
    return value


@dataclass(frozen=True)
class Archs:
    """The architectures to show, in order; exactly one of them the baseline."""

    labels: tuple[ArchLabel, ...]

    @classmethod
    def from_manifests(cls, manifests: Iterable[Mapping[str, Any]],
                       reference: str | None = None) -> Archs:
        """Built-in zk and dsbs, overridden and extended by the manifests' labels (a later
        manifest wins for the same name; run ids sort by time) and by the architectures they
        name without labels. ``reference`` (``twinbench analyze --reference``) names the
        baseline, whatever the labels say: two external clusters (kafka-zk, kafka-kraft) are
        compared with each other that way, not each with a zk twin that did not run."""
        known: dict[str, ArchLabel] = {a.name: a for a in BUILTIN}
        named: list[str] = []
        for m in manifests:
            for name, labels in (m.get("architectures") or {}).items():
                known[name] = ArchLabel(name=name, **{k: labels[k] for k in LABEL_KEYS})
                # A manifest from before coordination.csv's generic columns names its own.
                column = _CURRENT_COLUMN.get(known[name].cost_column, known[name].cost_column)
                known[name] = dataclasses.replace(known[name], cost_column=column)
            named += [str(m.get("arch")), *(str(a) for a in m.get("run_arches") or ())]
        for name in dict.fromkeys(named):
            if name not in known and name != "None":
                i = len(known) - len(BUILTIN)
                known[name] = ArchLabel(
                    name=name, display_name=name, short_name=name,
                    color=_PALETTE[i % len(_PALETTE)],
                    order=max(a.order for a in known.values()) + 1, baseline=False,
                    cost_column="coordination_ops", cost_label="coordination messages")
        ordered = sorted(known.values(), key=lambda a: (a.order, a.name))
        bases = [a for a in ordered if a.baseline]
        # One reference: the one asked for, else the first in order that says it is one (zk
        # when nobody says so).
        base = bases[0].name if bases else BUILTIN[0].name
        if reference is not None:
            if reference not in known:
                raise UserError(f"--reference {reference}: no run names that architecture "
                                f"(the runs name {', '.join(a.name for a in ordered)})")
            base = reference
        return cls(tuple(_with_baseline(a, a.name == base) for a in ordered))

    def __iter__(self) -> Iterator[ArchLabel]:
        return iter(self.labels)

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, name: str) -> ArchLabel:
        for a in self.labels:
            if a.name == name:
                return a
        raise KeyError(name)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.labels)

    @property
    def baseline(self) -> ArchLabel:
        return next(a for a in self.labels if a.baseline)

    @property
    def others(self) -> tuple[ArchLabel, ...]:
        """Every architecture compared with the baseline, in order."""
        return tuple(a for a in self.labels if not a.baseline)

    def rank(self, name: object) -> float:
        """Sort key of an arch column's value (unknown names last)."""
        return next((float(i) for i, a in enumerate(self.labels) if a.name == name), math.inf)

    def offsets(self, width: float = 0.76) -> tuple[float, list[float]]:
        """Bar width and each architecture's offset from a group's centre, side by side."""
        w = width / len(self.labels)
        return w, [(i - (len(self.labels) - 1) / 2) * w for i in range(len(self.labels))]

    def ratio_name(self, other: ArchLabel) -> str:
        """``DSBS/ZK``."""
        return f"{other.short_name}/{self.baseline.short_name}"


def _with_baseline(a: ArchLabel, baseline: bool) -> ArchLabel:
    return a if a.baseline == baseline else dataclasses.replace(a, baseline=baseline)


# When no run says otherwise: zk and dsbs, as every run log before the labels.
DEFAULT = Archs.from_manifests(())
