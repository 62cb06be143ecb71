"""``python -m harness.nemesis``: seeded fault schedules against every replicating architecture.

``python -m harness.nemesis [--workload queue|transactions] [--arch zk,dsbs] [--seeds 1,2,3 |
--runs N] [--duration 40] [--out results/nemesis]`` runs each seed against each architecture
(architectures interleaved seed by seed), prints a line per run and, at the end, a table per
architecture: schedules run, records acknowledged (transactions ended, for the transactions
workload), and every kind of violation found (``checker.py``, ``txn_checker.py``). A run with a
violation prints its seed, its schedule and examples, and fails when the architecture claims
that guarantee (``checker.claims``); ``--seeds <seed>`` replays the schedule
(fault timing against a live cluster is not exactly reproducible, the schedule is). The result
file (``nemesis-<UTC time>.json``, format 1) holds every run. Exit status 1 when any run found
a violation. Needs root (network namespaces) and confluent-kafka.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from brokers.core.errors import KafkaError, UserError
from harness import architectures
from harness.bench.common import write_result
from harness.cluster import netns
from harness.nemesis import transactions, txn_checker
from harness.nemesis.checker import KINDS
from harness.nemesis.run import BROKERS, PARTITIONS, Outcome, run
from harness.nemesis.schedule import parse

FORMAT_VERSION = 2  # 2: config.workload; transactions runs


def _replicating() -> list[str]:
    return [a for a in architectures.under_test() if architectures.get(a).replicates]


def table(outcomes: list[Outcome]) -> str:
    """One row per architecture: runs, acknowledged records, and each kind of violation."""
    heads = ["arch", "schedules", "steps", "acknowledged", *KINDS, "not recovered"]
    rows = []
    for arch in dict.fromkeys(o.arch for o in outcomes):
        mine = [o for o in outcomes if o.arch == arch]
        counts = [sum(o.counts()[k] for o in mine) for k in KINDS]
        rows.append([arch, str(len(mine)), str(sum(len(o.schedule) for o in mine)),
                     str(sum(o.acked for o in mine)), *map(str, counts),
                     str(sum(not o.recovered for o in mine))])
    widths = [max(len(r[i]) for r in [heads, *rows]) for i in range(len(heads))]
    return "\n".join("  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True))
                     for r in [heads, *rows])


def txn_table(outcomes: list[transactions.TxnOutcome]) -> str:
    """One row per architecture: runs, transactions by outcome, and each kind of violation."""
    heads = ["arch", "schedules", "committed", "aborted", "unknown", "copied",
             *txn_checker.KINDS, "not recovered"]
    rows = []
    for arch in dict.fromkeys(o.arch for o in outcomes):
        mine = [o for o in outcomes if o.arch == arch]
        counts = [sum(o.counts()[k] for o in mine) for k in txn_checker.KINDS]
        rows.append([arch, str(len(mine)), *(str(sum(getattr(o, f) for o in mine)) for f in
                                           ("committed", "aborted", "unknown", "copied")),
                     *map(str, counts), str(sum(not o.recovered for o in mine))])
    widths = [max(len(r[i]) for r in [heads, *rows]) for i in range(len(heads))]
    return "\n".join("  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True))
                     for r in [heads, *rows])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.nemesis",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--workload", choices=("queue", "transactions"), default="queue",
                        help="queue: an acks=all producer and a committing group (run.py); "
                             "transactions: a transactional producer and a "
                             "consume-transform-produce worker, faults aimed at transaction "
                             "coordinators too (transactions.py)")
    parser.add_argument("--arch", default=",".join(_replicating()),
                        help="comma-separated architectures (default: every one that "
                             "replicates)")
    parser.add_argument("--seeds", help="comma-separated seeds (default: --runs random ones)")
    parser.add_argument("--runs", type=int, default=3, help="random seeds to run")
    parser.add_argument("--duration", type=float, default=40.0,
                        help="seconds of faults per run (then everything heals)")
    parser.add_argument("--schedule", help="replay these steps, as a run printed them "
                        "(\"3.0s kill 0, 5.1s cut 2->1, ...\"), with the first seed's number")
    parser.add_argument("--out", type=Path, default=Path("results/nemesis"))
    parser.add_argument("--keep", type=Path, help="keep each run's broker logs and data "
                        "under this directory (<arch>-<seed>/), to trace a violation")
    args = parser.parse_args(argv)
    archs = [a.strip() for a in args.arch.split(",") if a.strip()]
    for a in archs:
        if a not in _replicating():
            raise UserError(f"--arch {a}: not a replicating architecture (choose from "
                            f"{', '.join(_replicating())})")
    if args.seeds:
        try:
            seeds = [int(s) for s in args.seeds.split(",")]
        except ValueError:
            raise UserError(f"--seeds {args.seeds!r}: expected comma-separated integers") from None
    else:
        if args.runs < 1:
            raise UserError("--runs must be at least 1")
        seeds = [random.randrange(1 << 30) for _ in range(args.runs)]
    try:
        steps = parse(args.schedule) if args.schedule else None
    except ValueError as exc:
        raise UserError(f"--schedule: {exc}") from None
    if steps is not None:
        seeds = seeds[:1]
    if not 5 <= args.duration <= 3600:
        raise UserError("--duration must be between 5 and 3600 seconds")
    if (reason := netns.available()) is not None:
        raise UserError(f"the nemesis cuts brokers off with network namespaces: {reason}")
    started = time.time()
    outcomes: list[Outcome] = []
    txn_outcomes: list[transactions.TxnOutcome] = []
    for i, seed in enumerate(seeds):
        for arch in archs if i % 2 == 0 else archs[::-1]:
            with _workdir(args.keep, arch, seed) as work:
                if args.workload == "transactions":
                    t = transactions.run(arch, seed, args.duration, Path(work), steps=steps)
                    txn_outcomes.append(t)
                    _report(t, f"{t.committed} committed, {t.aborted} aborted, {t.unknown} "
                               f"unknown, {t.copied} copied")
                    continue
                o = run(arch, seed, args.duration, Path(work), steps=steps)
            outcomes.append(o)
            _report(o, f"{o.acked} acknowledged, {o.delivered} handed to the group, "
                       f"{o.commits} commits")
    print(txn_table(txn_outcomes) if txn_outcomes else table(outcomes))
    runs = [o.as_json() for o in (txn_outcomes or outcomes)]
    path = write_result(args.out, "nemesis", "nemesis", format_version=FORMAT_VERSION,
                        config={"workload": args.workload, "architectures": archs,
                                "seeds": seeds, "duration_s": args.duration,
                                "brokers": BROKERS, "partitions": PARTITIONS,
                                "replication_factor": 3, "min_insync_replicas": 2},
                        body={"runs": runs}, started=started)
    print(f"wrote {path}")
    return 1 if any(o.failed() for o in outcomes) or any(t.failed() for t in txn_outcomes) \
        else 0


@contextlib.contextmanager
def _workdir(keep: Path | None, arch: str, seed: int) -> Iterator[str]:
    """A run's data directory: a temporary one, or ``keep/<arch>-<seed>`` kept after it."""
    if keep is None:
        with tempfile.TemporaryDirectory(prefix=f"nemesis-{arch}-") as temporary:
            yield temporary
        return
    kept = keep / f"{arch}-{seed}"
    if kept.exists():
        raise UserError(f"--keep: {kept} exists already")
    kept.mkdir(parents=True)
    yield str(kept)


def _report(o: Outcome | transactions.TxnOutcome, what: str) -> None:
    status = "FAILED" if o.failed() else "ok" if not any(o.found.values()) else \
        "ok (violations counted, not claimed by the architecture)"
    print(f"{o.arch} seed {o.seed}: {status}: {what}, "
          f"{'recovered' if o.recovered else 'NOT recovered'}, {o.seconds:.0f} s", flush=True)
    if any(o.found.values()):
        print(f"  schedule: {', '.join(o.schedule)}")
        for kind, ex in o.as_json()["examples"].items():
            print(f"  {kind} ({o.counts()[kind]}): {'; '.join(ex)}")


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (UserError, KafkaError) as exc:
        print(f"nemesis: error: {exc}", file=sys.stderr)
        sys.exit(2)
