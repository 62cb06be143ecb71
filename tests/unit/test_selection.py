"""CI's no-skip rule (tests/support/selection.py), run on a small suite of its own."""

from __future__ import annotations

import pytest

from tests.conftest import OPT_IN

pytestmark = pytest.mark.filesystem

SUITE = """
import pytest

def test_runs():
    pass

@pytest.mark.skip(reason="no kcat on this machine")
def test_skipped():
    pass

@pytest.mark.scale
def test_big():
    pass
"""


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    # The suite's own hooks, as the real tests/conftest.py has them.
    pytester.makeconftest("from tests.conftest import *  # noqa: F403\n")
    pytester.makeini("[pytest]\nmarkers =\n    scale: opt-in\n")
    pytester.makepyfile(test_suite=SUITE)
    return pytester


def test_on_ci_a_skip_fails_the_run_and_is_named(suite: pytest.Pytester,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    monkeypatch.delenv("TWINBENCH_SCALE", raising=False)
    result = suite.runpytest()
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*1 tests FAILED: CI runs every test*",
                                 "skipped *test_skipped*no kcat on this machine*"])
    # The opt-in test was deselected with its documented target: not a failure.
    assert "test_big" not in result.stdout.str().split("FAILED: CI")[1]


def test_off_ci_the_same_list_is_a_warning(suite: pytest.Pytester,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    result = suite.runpytest()
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*1 tests not run here*", "skipped *test_skipped*"])


def test_on_ci_a_deselection_without_a_reason_fails(suite: pytest.Pytester,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    result = suite.runpytest("-k", "not skipped")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["deselected *test_skipped*no documented reason*"])


def test_on_ci_nothing_skipped_passes(pytester: pytest.Pytester,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    pytester.makeconftest("from tests.conftest import *  # noqa: F403\n")
    pytester.makepyfile(test_ok="def test_ok():\n    pass\n")
    assert pytester.runpytest().ret == pytest.ExitCode.OK


def test_every_opt_in_target_is_in_the_makefile() -> None:
    from pathlib import Path

    makefile = (Path(__file__).resolve().parents[2] / "Makefile").read_text(encoding="utf-8")
    for marker, (_var, target) in OPT_IN.items():
        name = target.removeprefix("make ")
        assert f"\n{name}:" in makefile, f"{marker}: no `{name}` target in the Makefile"
