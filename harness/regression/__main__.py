"""``python -m harness.regression``: a code-vs-code regression run, or accepting a base.

    python -m harness.regression run [--base REF|DIR] [--workload regress] --out DIR
                                     [--tries N] [--arch zk,dsbs] [--tune] [--no-controls]
    python -m harness.regression accept [REF] --reason TEXT

``run`` writes one run log per arm (head, base, the positive controls) under ``--out`` and
``regression.json`` (what was compared, and what each control must fail);
``python -m spark_analysis.regress check DIR`` judges it. Exit 2 with one line on bad input.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from brokers.core.errors import UserError
from harness import architectures
from harness.architectures.entry import Architecture
from harness.regression import accepted, arms, controls
from harness.regression import base as bases
from twinbench_common.labels import base_name


def run_arms(arms_added: Sequence[Architecture], names: Sequence[str],
             pairs: Sequence[tuple[str, str]], workload: str, out: Path,
             about: dict[str, Any], *, tries: int | None = None, tune: bool = False) -> int:
    """Run ``workload`` on the arms ``names`` (registered ones and ``arms_added``),
    interleaved, and write ``regression.json`` (``about``, the arms and which pairs the check
    compares: head arm, base arm). Returns the run's exit code."""
    from harness.driver import RunOptions, run
    from harness.workload import load_workload

    out.mkdir(parents=True, exist_ok=True)
    (out / "regression.json").write_text(json.dumps({
        "kind": "twinbench.regression", "version": 1, "workload": workload, **about,
        "arms": list(names), "pairs": [list(p) for p in pairs]}, indent=2) + "\n")
    with architectures.registered(*arms_added), contextlib.redirect_stdout(sys.stderr):
        outcome = run(RunOptions(arch=",".join(names), workload=load_workload(workload),
                                 out=out, tries=tries, progress=False, tune=tune))
    return outcome.exit_code


def arm_order(archs: Sequence[str], chosen: Sequence[controls.Control]) -> list[str]:
    """The arms in the order a try runs them: heads first, bases last in reverse, controls
    between. The driver runs the next try's arms in reverse, so each head arm and its base arm
    hold mirror positions (first and last, second and second-to-last ...): neither is always
    the one in the middle, or the one that follows another architecture's session. (Measured:
    with a base arm always in the middle of three, A/A throughput pairs of 70 ms sessions
    differed by a steady 4%.)"""
    return [*archs, *(c.arm for c in chosen), *(base_name(a) for a in reversed(archs))]


def run_regression(base: str, workload: str, out: Path, *, tries: int | None = None,
                   archs: Sequence[str] = ("zk", "dsbs"), tune: bool = False,
                   with_controls: bool = True,
                   extra: Sequence[controls.Control] = ()) -> int:
    """Head and base arms of ``archs`` and the controls (controls.py; ``extra`` ones too),
    interleaved; returns the run's exit code."""
    tree = bases.prepare(base)
    entries = [architectures.get(a) for a in archs]
    chosen = [*(controls.for_archs(archs) if with_controls else ()), *extra]
    added = [arms.relaunched(e, base_name(e.name), python=tree.python, env=tree.env())
             for e in entries] + [c.entry() for c in chosen]
    names = arm_order([e.name for e in entries], chosen)
    pairs = [(e.name, base_name(e.name)) for e in entries]
    about = {"head": {"commit": bases.head_commit()}, "base": tree.manifest(),
             "same_brokers": bases.same_brokers(tree),
             "controls": [c.describe() for c in chosen]}
    return run_arms(added, names, pairs, workload, out, about, tries=tries, tune=tune)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.regression",
                                     description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="head against base, interleaved, one run log per arm")
    r.add_argument("--base", default=None, metavar="REF|DIR",
                   help="what to compare with (default: the accepted base, "
                        "results/baseline/base.json)")
    r.add_argument("--workload", default="regress")
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--tries", type=int, default=None)
    r.add_argument("--arch", default="zk,dsbs", help="the architectures (comma-separated)")
    r.add_argument("--tune", action="store_true")
    r.add_argument("--no-controls", action="store_true",
                   help="leave out the positive controls (harness/regression/controls.py): "
                        "faster, but the check cannot say what size of change it would see")
    a = sub.add_parser("accept", help="accept REF's costs: make it the default base")
    a.add_argument("ref", nargs="?", default="HEAD")
    a.add_argument("--reason", required=True)
    args = parser.parse_args(argv)
    try:
        if args.command == "accept":
            doc = accepted.write(bases.resolve(args.ref), args.reason)
            print(f"accepted {doc['commit'][:12]} as the regression's base: {accepted.FILE}")
            return 0
        if args.tries is not None and args.tries < 2:
            raise UserError("--tries must be at least 2: the bands come from the spread of "
                            "the pairs")
        base = args.base or accepted.ref()
        return run_regression(base, args.workload, args.out, tries=args.tries,
                              archs=[x.strip() for x in args.arch.split(",") if x.strip()],
                              tune=args.tune, with_controls=not args.no_controls)
    except UserError as exc:
        print(f"twinbench: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
