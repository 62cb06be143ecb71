"""harness.bench.profile's summary of py-spy's raw stacks (pure)."""

from __future__ import annotations

import pytest

from harness.bench.profile import summarise

RAW = """\
main (cli.py:1);run (loop.py:9) 60
main (cli.py:1);run (loop.py:9);dispatch (server.py:280) 30
main (cli.py:1);run (loop.py:9);dispatch (server.py:280);append (log.py:228) 10
not a stack line
"""


def test_self_and_inclusive_shares_of_the_samples() -> None:
    s = summarise(RAW)
    assert s.samples == 100
    assert s.self_top[0] == ("run (loop.py:9)", pytest.approx(0.6))
    assert dict(s.self_top)["append (log.py:228)"] == pytest.approx(0.1)
    inclusive = dict(s.inclusive_top)
    # Frames on every stack say nothing and are left out.
    assert "main (cli.py:1)" not in inclusive and "run (loop.py:9)" not in inclusive
    assert inclusive["dispatch (server.py:280)"] == pytest.approx(0.4)
    assert "40.0%  dispatch (server.py:280)" in s.text()


def test_nothing_sampled_is_an_empty_summary() -> None:
    assert summarise("").samples == 0 and summarise("").self_top == []
