"""``twinbench analyze``: the body of the subcommand (harness/cli.py only parses arguments).

Kept here so the harness does not import Spark at start-up: ``twinbench run`` should not pay for
the PySpark import, and the analysis owns its own command line behaviour.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from spark_analysis.job import DEFAULT_RUNS
from twinbench_common.errors import UserError


def analyze_command(args: argparse.Namespace) -> int:
    from spark_analysis import regress
    from spark_analysis.job import analyze
    from spark_analysis.session import build_session

    runs: list[str | Path] = list(args.runs) or [DEFAULT_RUNS]
    if args.check_regression:
        from spark_analysis.storage import is_uri

        if any(is_uri(str(r)) for r in runs):
            raise UserError("--check-regression reads local run directories, not URIs")
    started = time.perf_counter()
    spark = build_session(args.master)
    analysis = analyze(runs, args.out, spark=spark, figures=not args.no_figures,
                       reference=args.reference)
    elapsed = time.perf_counter() - started
    sessions = (f", {len(analysis.faults.sessions):,} fault sessions"
                if not analysis.faults.empty else "")
    print(f"analyzed {len(analysis.runs)} runs ({analysis.input_rows:,} rows{sessions}) in"
          f" {elapsed:.1f} s: {args.out / 'report.md'}")
    if args.check_regression:
        # Appends its tables to report.md, so the report shows the verdicts too.
        ok, text = regress.run_check([Path(r) for r in runs], args.out)
        print(text)
        if not ok:
            return 1
    return 0
