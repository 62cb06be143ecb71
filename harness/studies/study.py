"""Study: one kind of experiment, as the workload file, the run and the run log know it.

A workload file has a core (cells, clients, tries, policies: harness/workload.py) and, for
each kind of experiment beyond the paper's closed-loop sessions, a block of its own: faults,
metadata scenarios, rate searches, round-trip-time sweeps, a security sweep, sampled metrics.
Each is a study: a package under harness/studies with one entry here (its registry is
harness/studies/__init__.py). The entry owns what the file may say under its keys (``parse``,
with every default and check), how the manifest records it, what a run on a cluster
twinbench did not start or on hosts cannot do with it, the broker settings it needs, the
run-log tables only it writes, and, for a study whose sessions replace the paper's (faults,
metadata), where its session plan and runner are (``sessions``: imported when a run needs them,
as they pull in the driver). The analysis has the same studies on its side
(spark_analysis/studies).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from harness.schema import Ctx
from twinbench_common.runlog import Table

C = TypeVar("C")


def _nothing(config: Any) -> None:
    return None


def _no_args(config: Any) -> tuple[str, ...]:
    return ()


@dataclass(frozen=True)
class Study(Generic[C]):
    # Its name: in the registry, and the key of its part of a parsed workload.
    name: str
    # One line for --help and the docs.
    summary: str
    # The top-level workload keys it owns.
    keys: tuple[str, ...]
    # Its part of a workload (ctx, the whole document, the core fields parsed so far): valid,
    # defaults filled in; None when the file does not use it. Checks against other blocks
    # read the document.
    parse: Callable[[Ctx, Mapping[str, Any], Mapping[str, Any]], C | None]
    # Its keys in the manifest's ``workload``, as the file would give them (parsed, defaults
    # filled in); from None when the workload does not use it.
    manifest: Callable[[C | None], dict[str, Any]]
    # Run-log tables only its sessions write (twinbench_common.runlog).
    tables: tuple[Table, ...] = ()
    # The scenario of its sessions when they replace the paper's (faults, metadata): a
    # workload using it runs those only.
    scenario: str | None = None
    # Why a run against a cluster twinbench did not start (--bootstrap), or on the hosts of a
    # hosts file, cannot do it: one line, or None when it can.
    refuse_external: Callable[[C], str | None] = _nothing
    refuse_hosts: Callable[[C], str | None] = _nothing
    # Broker settings it needs, as the core brokers' command-line flags.
    broker_args: Callable[[C], tuple[str, ...]] = _no_args
    # Its own sessions instead of the paper's: "module:attribute" of its SessionKind
    # (harness/driver/kinds.py).
    sessions: str | None = None
