"""The positive controls of a regression run: head with a known regression planted, run beside
head and base in the same run, each judged against head as head is judged against base.

A check that passes says "nothing moved beyond the bands"; the controls say how large a move
this run, on this machine, today, would have seen. A control its layers do not catch makes the
run inconclusive (spark_analysis/regress.py says so and the check fails): bands that wide could
hide a real regression as well.

The controls (plants in harness/regression/plants):

* ``zk+extra-read``: one more ZooKeeper read per produced partition: the exact layer.
* ``zk+slow-append``, ``dsbs+slow-append``: a busy loop in every storage append of the shared
  core, on each twin: the cost layer of that twin (a DSBS/ZK ratio would not move).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from harness import architectures
from harness.architectures.entry import Architecture
from harness.regression import arms
from harness.regression.plants import BUSY_US_ENV, TWIN_ENV
from harness.regression.plants.slow_append import DEFAULT_US as APPEND_US

# The module each twin's brokers run as (a shared-core plant runs it after its patch).
TWINS = {"zk": "brokers.zk_broker", "dsbs": "brokers.dsbs_broker"}


@dataclass(frozen=True)
class Control:
    name: str
    # What was planted, for the report.
    what: str
    # The architecture whose head arm it is judged against.
    arch: str
    # The plant's entry point (python -m).
    module: str
    # The layers that must fail, all of them.
    expect: tuple[str, ...]
    # CPU per call of a busy plant, µs (None: the plant has no size).
    busy_us: float | None = None

    @property
    def arm(self) -> str:
        return f"{self.arch}+{self.name}"

    def entry(self) -> Architecture:
        env = {TWIN_ENV: TWINS[self.arch]}
        if self.busy_us is not None:
            env[BUSY_US_ENV] = f"{self.busy_us:.1f}"
        return arms.relaunched(architectures.get(self.arch), self.arm, module=self.module,
                               env=env, display=self.name)

    def describe(self) -> dict[str, Any]:
        """Its entry in regression.json (what spark_analysis/regress.py judges it by)."""
        return {"arm": self.arm, "against": self.arch, "expect": list(self.expect),
                "what": self.what}


# The zk twin's CPU per record is larger and noisier than dsbs's (its brokers also serve
# ZooKeeper watches), so the same plant moves it less: 250 µs was caught by +19% against a
# ±17% band in one CI run. 500 µs keeps that control well outside the band (docs/regression.md).
ZK_APPEND_US = 2 * APPEND_US

CONTROLS = (
    Control("extra-read", "one more ZooKeeper read per produced partition", "zk",
            "harness.regression.plants.zk_extra_read", ("exact",)),
    Control("slow-append", f"a {ZK_APPEND_US:g} µs busy loop per storage append (shared core)",
            "zk", "harness.regression.plants.slow_append", ("cost",), ZK_APPEND_US),
    Control("slow-append", f"a {APPEND_US:g} µs busy loop per storage append (shared core)",
            "dsbs", "harness.regression.plants.slow_append", ("cost",), APPEND_US),
)


def for_archs(archs: Sequence[str]) -> list[Control]:
    """The controls of the architectures a run compares (none for one without a plant)."""
    return [c for c in CONTROLS if c.arch in archs]
