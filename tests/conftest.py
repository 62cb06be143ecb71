"""Suite-wide collection rules, and CI's rule that nothing is skipped.

`make test` samples the large matrices; the whole of each runs from its own make target. Tests
beyond the sample carry one of the markers below and are deselected, not skipped, unless the
marker's environment variable is 1 (its make target sets it), so a run of the suite lists no
skip for what it chose not to run. Every deselection records its reason
(tests/support/selection.py); on CI a skip, or a deselection without a reason, fails the run.
"""

from __future__ import annotations

import os

import pytest

from tests.support import selection

# marker -> the environment variable that selects its tests, and the make target setting it
# (tests/unit/test_script_paths.py holds the Makefile to these targets).
OPT_IN = {
    "hosts_full": ("TWINBENCH_HOSTS_FULL", "make test-hosts"),
    "scale": ("TWINBENCH_SCALE", "make test-scale"),
    "security_full": ("TWINBENCH_SECURITY_FULL", "make test-security"),
}

# pytester: the tests of this file's own rules run a small suite (tests/unit/test_selection.py).
pytest_plugins = ["pytester"]

_UNEXPLAINED: pytest.StashKey[list[str]] = pytest.StashKey()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    off = {m: target for m, (var, target) in OPT_IN.items() if os.environ.get(var) != "1"}

    def reason(item: pytest.Item) -> str | None:
        for marker, target in off.items():
            if item.get_closest_marker(marker):
                return f"beyond make test's sample; `{target}` runs it"
        return None

    if off:
        selection.deselect(config, items, reason)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None:
        return
    lines = selection.unexplained(session.config, reporter)
    session.config.stash[_UNEXPLAINED] = lines
    if lines and selection.in_ci() and exitstatus in (pytest.ExitCode.OK,
                                                      pytest.ExitCode.NO_TESTS_COLLECTED):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, exitstatus: int,
                            config: pytest.Config) -> None:
    lines = config.stash.get(_UNEXPLAINED, [])
    if not lines:
        return
    verdict = ("FAILED: CI runs every test (CI=true)" if selection.in_ci()
               else "not run here (on CI, with CI=true, this fails the run)")
    terminalreporter.section(f"{len(lines)} tests {verdict}", sep="!", red=True, bold=True)
    for line in lines:
        terminalreporter.line(line)
