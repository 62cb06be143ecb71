"""What a run of the suite chose not to run, and why: the record behind CI's no-skip rule.

A green `make test` must mean every test ran. Two ways out of running remain legitimate, and
each leaves its reason here when it deselects:

* opt-in matrices beyond make test's sample (markers ``hosts_full``, ``scale``,
  ``security_full``), each run whole by a documented make target;
* tests that do not apply to one architecture (a multi-broker test on the single-node one, a
  replication test on an architecture that does not replicate).

When ``CI`` is true (``.ci/run`` sets it), the session fails if any test was skipped, or was
deselected without one of these reasons (a stray ``-k``/``-m``, a conftest that drops tests on
its own); outside CI the same list is printed as a warning. The failure names every test and
its reason, so the fix (install the missing tool, or give the deselection its target) is the
first thing a reader sees.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest

# nodeid -> why it was deselected, for this session.
REASONS: pytest.StashKey[dict[str, str]] = pytest.StashKey()


def in_ci() -> bool:
    """True on CI (``CI=true``, as GitHub Actions, GitLab and .ci/run set it)."""
    return os.environ.get("CI", "").strip().lower() in {"true", "1", "yes"}


def deselect(config: pytest.Config, items: list[pytest.Item],
             reason: Callable[[pytest.Item], str | None]) -> None:
    """Deselect every item ``reason`` gives a reason for, recording that reason."""
    keep: list[pytest.Item] = []
    drop: list[pytest.Item] = []
    reasons = config.stash.setdefault(REASONS, {})
    for item in items:
        why = reason(item)
        if why is None:
            keep.append(item)
        else:
            reasons[item.nodeid] = why
            drop.append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def unexplained(config: pytest.Config, reporter: pytest.TerminalReporter) -> list[str]:
    """One line per test that was skipped, or deselected with no recorded reason."""
    reasons = config.stash.get(REASONS, {})
    lines = []
    for report in reporter.stats.get("skipped", []):
        where = getattr(report, "nodeid", "?")
        longrepr = getattr(report, "longrepr", None)
        # A skip's longrepr is (file, line, "Skipped: reason").
        why = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else longrepr
        lines.append(f"skipped {where}: {why}")
    for item in reporter.stats.get("deselected", []):
        nodeid = getattr(item, "nodeid", str(item))
        if nodeid not in reasons:
            lines.append(f"deselected {nodeid}: no documented reason (a -k/-m selection?)")
    return lines
