"""harness.bench.commit_cost without a cluster: its arguments are refused in one line before
anything starts, and its CPU reading is this process's own."""

from __future__ import annotations

import os

import pytest

from brokers.core.errors import UserError
from harness.bench import commit_cost


@pytest.mark.parametrize(("argv", "says"), [
    (["--commits", "5"], "--commits must be at least 10"),
    (["--rounds", "0"], "--rounds must be at least 1"),
    (["--sweep", "dsbs.offset_commit_acks"], "expected NAME.KEY=V1,V2"),
    (["--option", "nodot=1"], "expected NAME.KEY=VALUE"),
])
def test_bad_arguments_are_one_clear_error(argv: list[str], says: str) -> None:
    with pytest.raises(UserError, match=says):
        commit_cost.main(argv)


def test_cpu_seconds_reads_a_process_own_clock() -> None:
    spent = os.times()
    got = commit_cost.cpu_seconds(os.getpid())
    assert abs(got - (spent.user + spent.system)) < 0.05
