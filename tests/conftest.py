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
    # `make test` runs the suite in two workers (pytest-xdist, --dist loadgroup): a file's tests
    # stay in one worker, so a module's fixture (a cluster, a run) is made once; the contract
    # suite groups by architecture instead (tests/contract/conftest.py), so each
    # architecture's shared cluster starts once.
    for item in items:
        path = item.nodeid.partition("::")[0]
        if not path.startswith("tests/contract/"):
            item.add_marker(pytest.mark.xdist_group(path))


# Under pytest-xdist the workers collect and deselect, and the controller never sees their
# deselections: each worker sends its unexplained ones home (``workeroutput``), and the
# controller adds them to its own list.
_DESELECTED: pytest.StashKey[list[str]] = pytest.StashKey()
_FROM_WORKERS: pytest.StashKey[set[str]] = pytest.StashKey()


def pytest_deselected(items: list[pytest.Item]) -> None:
    if items:
        items[0].config.stash.setdefault(_DESELECTED, []).extend(i.nodeid for i in items)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:  # type: ignore[no-untyped-def]
    lines = getattr(node, "workeroutput", {}).get("unexplained", [])
    node.config.stash.setdefault(_FROM_WORKERS, set()).update(lines)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    if hasattr(config, "workeroutput"):  # an xdist worker
        reasons = config.stash.get(selection.REASONS, {})
        config.workeroutput["unexplained"] = [
            f"deselected {n}: no documented reason (a -k/-m selection?)"
            for n in config.stash.get(_DESELECTED, []) if n not in reasons]
        return
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None:
        return
    lines = selection.unexplained(config, reporter)
    lines += sorted(config.stash.get(_FROM_WORKERS, set()) - set(lines))
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
