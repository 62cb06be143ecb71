"""``make sim-raft``: the Raft core over thousands of seeded fault schedules.

Each seed is one simulated cluster (1, 3 or 5 voters, some learners; loss, duplication,
reordering; crashes, restarts, pauses, partitions and one-sided cuts; snapshots) run by
``brokers.raft_broker.raft.sim.run_seed``, which checks election safety, log matching, leader
completeness, state-machine safety, no acknowledged entry lost and convergence after the heal.
The first failure stops the run with its seed, options, schedule and replay line; otherwise one
summary line. ``make test`` runs a 500-seed sample of the same (tests/unit/brokers/raft_broker/
raft/test_sim.py)."""

from __future__ import annotations

import argparse
import sys
import time

from brokers.raft_broker.raft.sim import SimFailure, run_seed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m harness.bench.raft_sim", description=__doc__)
    ap.add_argument("--seeds", type=int, default=5000, help="how many seeds (default 5000)")
    ap.add_argument("--first", type=int, default=0, help="the first seed (default 0)")
    ap.add_argument("--steps", type=int, default=400,
                    help="steps of faults before the heal (default 400)")
    args = ap.parse_args(argv)
    if args.seeds < 1 or args.steps < 1 or args.first < 0:
        ap.error("--seeds and --steps must be at least 1, --first at least 0")
    t0 = time.monotonic()
    committed = leaders = snapshots = 0
    slowest = 0
    for seed in range(args.first, args.first + args.seeds):
        try:
            report = run_seed(seed, args.steps)
        except SimFailure as exc:
            print(f"seed {seed} FAILED\n{exc}", file=sys.stderr)
            return 1
        committed += report.committed
        leaders += report.leaders
        snapshots += report.snapshots_installed
        slowest = max(slowest, report.converge_steps)
    print(f"{args.seeds} seeds ({args.first}..{args.first + args.seeds - 1}, {args.steps} "
          f"steps each) safe: {committed} entries committed, {leaders} leaderships, "
          f"{snapshots} snapshots installed, converged within {slowest} steps of the heal; "
          f"{time.monotonic() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
