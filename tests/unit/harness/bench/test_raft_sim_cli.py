"""``make sim-raft``'s command: a few seeds end in one summary line; bad arguments in one."""

from __future__ import annotations

import pytest

from harness.bench import raft_sim


def test_seeds_run_and_say_so_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert raft_sim.main(["--seeds", "3", "--first", "10", "--steps", "60"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and out[0].startswith("3 seeds (10..12, 60 steps each) safe:")


def test_bad_arguments_are_one_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        raft_sim.main(["--seeds", "0"])
    assert exc.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].endswith(
        "--seeds and --steps must be at least 1, --first at least 0")
