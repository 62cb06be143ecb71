"""The Raft core under random fault schedules on the simulated cluster (sim.py): hundreds of
short seeds, each checking election safety, log matching, leader completeness, state-machine
safety, acknowledged proposals and linearizable reads, then convergence after the heal.

Every seed draws its own cluster (1, 3 or 5 voters, 0-2 learners), network (loss,
duplication, reordering), Raft settings and faults. A failure's message holds the seed, the
options and the schedule; replay one seed with::

    RAFT_SEED=123 pytest -s tests/unit/brokers/raft_broker/raft/test_sim.py::test_one_seed

(``RAFT_STEPS`` sets its length, 300 by default; ``-s`` prints its report), or
``pytest 'tests/unit/brokers/raft_broker/raft/test_sim.py::test_seed[seed123]'``, or
``run_seed(123)`` from ``brokers.raft_broker.raft.sim``. ``RAFT_SEEDS=N`` runs the first N
seeds instead of 500.
"""

from __future__ import annotations

import os

import pytest

from brokers.raft_broker.raft import sim as simmod
from brokers.raft_broker.raft.log import RaftLog
from brokers.raft_broker.raft.sim import SimFailure, SimReport, run_seed

SEEDS = int(os.environ.get("RAFT_SEEDS", "500"))
STEPS = 300


@pytest.mark.parametrize("seed", range(SEEDS), ids=lambda s: f"seed{s}")
def test_seed(seed: int) -> None:
    report = run_seed(seed, STEPS)
    assert report.committed > 0


def test_one_seed() -> None:
    """Replays ``RAFT_SEED`` (``RAFT_STEPS`` long) with its report printed; seed 0 unset, so
    the test never skips (CI fails a run that skips)."""
    report = run_seed(int(os.environ.get("RAFT_SEED", "0")),
                      int(os.environ.get("RAFT_STEPS", str(STEPS))))
    print(report.describe())
    print(report)


def test_the_seeds_exercise_what_they_check() -> None:
    """Faults that matter happen: leaders change, followers get snapshots, reads are served,
    proposals are acknowledged, and convergence after the heal takes a while sometimes."""
    reports: list[SimReport] = [run_seed(seed, STEPS) for seed in range(40)]
    assert sum(r.snapshots_installed for r in reports) > 0
    assert any(r.leaders > 2 for r in reports)
    assert any(r.max_term > 3 for r in reports)
    assert sum(r.reads for r in reports) > 10 * len(reports)
    assert all(r.acknowledged > 0 for r in reports)
    assert any(r.options.learners for r in reports)
    assert any(not r.options.config.pre_vote for r in reports)
    assert any(r.converge_steps > 20 for r in reports)


def test_a_seed_replays_exactly() -> None:
    assert run_seed(7, STEPS) == run_seed(7, STEPS)


def test_a_broken_node_fails_with_the_seed_and_schedule(monkeypatch: pytest.MonkeyPatch) -> None:
    # Votes granted whatever the candidate's log: a leader may lack committed entries.
    monkeypatch.setattr(RaftLog, "is_up_to_date", lambda self, index, term: True)
    for seed in range(50):
        try:
            run_seed(seed, STEPS)
        except SimFailure as failure:
            text = str(failure)
            assert f"seed={seed} " in text
            assert "schedule:" in text
            assert f"RAFT_SEED={seed}" in text
            return
    pytest.fail("the checker missed a node that votes for stale logs")


def test_an_exception_inside_a_run_carries_the_seed(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(self: simmod.SimCluster) -> None:
        raise KeyError("inside")

    monkeypatch.setattr(simmod.SimCluster, "converged", boom)
    with pytest.raises(SimFailure, match=r"(?s)KeyError.*seed=3 "):
        run_seed(3, 20)
