"""A short sample of the nemesis on every replicating architecture: a random seed (printed) of
kills, pauses, restarts and one- and two-sided cuts for ``TWINBENCH_NEMESIS_S`` seconds (20 by
default) under an acks=all producer and a committing consumer group, then the checker; and the
same aimed at transaction coordinators too, under a transactional producer and a
consume-transform-produce worker, then the transactional checks (every transaction whole in
every partition, acknowledged ends held, the copy exactly once, nothing left open).

The long runs are ``make nemesis`` (harness/nemesis, docs/replication.md). A failure prints the
seed and the schedule; ``TWINBENCH_NEMESIS_SEED=<seed>`` replays the schedule here.
"""

from __future__ import annotations

import os
import random

import pytest

from harness.cluster import netns
from harness.nemesis import transactions
from harness.nemesis.run import run
from tests.support.clusters import REPLICATING

DURATION_S = float(os.environ.get("TWINBENCH_NEMESIS_S", "20"))

pytestmark = [pytest.mark.integration, pytest.mark.multi_broker, pytest.mark.replicated,
              pytest.mark.slow, pytest.mark.timeout(300 + 2 * DURATION_S)]


def a_seed(label: str) -> int:
    """The run's seed (printed; ``TWINBENCH_NEMESIS_SEED`` replays one), once the run can
    happen here."""
    pytest.importorskip("confluent_kafka")
    if (reason := netns.available()) is not None:
        pytest.skip(reason)
    seed = int(os.environ.get("TWINBENCH_NEMESIS_SEED", random.randrange(1 << 30)))
    print(f"\n{label}: seed {seed}")
    return seed


@pytest.mark.parametrize("arch", REPLICATING)
def test_a_random_fault_schedule_breaks_no_claimed_guarantee(arch, tmp_path):
    seed = a_seed(f"nemesis {arch}")
    outcome = run(arch, seed, DURATION_S, tmp_path)
    print(f"nemesis {arch}: seed {seed}: {outcome.acked} acknowledged, {outcome.delivered} "
          f"handed to the group, {outcome.commits} commits; violations {outcome.counts()}")
    assert outcome.acked > 0 and outcome.commits > 0
    # What the architecture claims (harness/nemesis/checker.py, ``claims``); the rest is
    # printed above and counted by ``make nemesis``.
    assert not outcome.failed(), (f"seed {seed} schedule {outcome.schedule}: "
                                  f"{outcome.as_json()['examples']}")


@pytest.mark.timeout(600 + 2 * DURATION_S)
@pytest.mark.parametrize("arch", REPLICATING)
def test_faults_at_transaction_coordinators_leave_no_transaction_half_done(arch, tmp_path):
    seed = a_seed(f"nemesis transactions {arch}")
    outcome = transactions.run(arch, seed, DURATION_S, tmp_path)
    print(f"nemesis transactions {arch}: seed {seed}: {outcome.committed} committed, "
          f"{outcome.aborted} aborted, {outcome.unknown} unknown, {outcome.copied} copied; "
          f"violations {outcome.counts()}")
    assert outcome.committed > 0 and outcome.aborted > 0 and outcome.copied > 0
    assert not outcome.failed(), (f"seed {seed} schedule {outcome.schedule}: "
                                  f"{outcome.as_json()['examples']}")
