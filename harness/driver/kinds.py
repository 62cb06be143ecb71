"""Session kinds: a study whose sessions replace the paper's, as the driver runs it.

A study's entry (harness/studies) names its session kind as "module:attribute" (``sessions``);
the kind plans the sessions (``schedule``: epochs of sessions, as plan.py does the paper's)
and runs one (``run``), writing its rows to the side's run log. What it may ask of the run in
progress is ``RunState``: the workload, the run log of a side, where to report time measured,
an error or data loss. The runner (runner.py) knows no kind by name.
"""

from __future__ import annotations

import importlib
from typing import Any, Protocol

from harness import studies
from harness.cluster.external import ExternalCluster
from harness.cluster.running import ProcessCluster
from harness.driver import plan
from harness.driver.load import Load
from harness.runlog import RunLog
from harness.workload import Workload


class ClusterDied(RuntimeError):
    """A cluster process exited during a run: nothing further can be measured."""


class RunState(Protocol):
    """The run in progress, as a session kind sees it."""

    @property
    def workload(self) -> Workload: ...

    def add_timed(self, seconds: float) -> None:
        """Seconds spent inside measured phases (the rest of the run is the harness's)."""
        ...

    def note(self, text: str) -> None:
        """A line above the progress bar (rich markup)."""
        ...

    def session_error(self, message: str) -> None:
        """A session could not run: one error line, the run marked incomplete."""
        ...

    def data_lost(self, session: plan.Session, log: RunLog, shown: str, message: str) -> None:
        """A session lost, reordered or corrupted acknowledged data: said loudly
        (``message``), its cell failed in the side's manifest, and ``shown`` among the run's
        failed cells (its exit status)."""
        ...

    def could_not_run(self, what: str, cluster: ProcessCluster | ExternalCluster,
                      exc: BaseException) -> None:
        """A session that raised: one error line, the run incomplete; a dead broker ends it."""
        ...

    def summarise(self, side: plan.Side, records: list[dict[str, Any]],
                  coordination: dict[str, Any] | None) -> None:
        """A session's records.csv and coordination.csv rows, for the run's summary table."""
        ...


class SessionKind(Protocol):
    def schedule(self, workload: Workload, sides: list[plan.Side]) -> list[plan.Epoch]:
        """Every session of the workload, grouped into epochs (clusters), in order."""
        ...

    def fresh_clusters(self, session: plan.Session) -> tuple[int, int] | None:
        """(brokers, standby brokers) when the session needs clusters of its own size, else
        None (the workload's brokers)."""
        ...

    async def run(self, run: RunState, cluster: ProcessCluster | ExternalCluster, load: Load,
                  session: plan.Session, log: RunLog, topic: str) -> None:
        """One session on ``topic`` (a fresh name), its rows into ``log``."""
        ...


def session_kind(workload: Workload) -> SessionKind | None:
    """The session kind of the study whose sessions replace the paper's, if the workload uses
    one."""
    for entry in studies.entries():
        if entry.sessions is not None and workload.study(entry) is not None:
            module, _, attr = entry.sessions.partition(":")
            kind: SessionKind = getattr(importlib.import_module(module), attr)
            return kind
    return None


def schedule(workload: Workload, sides: list[plan.Side]) -> list[plan.Epoch]:
    """The run's epochs: its session kind's, or the paper's grid."""
    kind = session_kind(workload)
    return kind.schedule(workload, sides) if kind is not None else plan.grid_schedule(
        workload, sides)
