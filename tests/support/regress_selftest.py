"""``python -m tests.support.regress_selftest`` (``make regress-selftest``): the regression
judged on runs whose answer is known.

Run 1 is ``make regress`` with this tree as its own base: every head/base pair is an A/A pair,
so the check must pass every layer (a failure is a false alarm), and every positive control
must be caught (harness/regression/controls.py). It prints each layer's spread and bands: the
regression's noise on this machine today. Beside them, one more copy of every fetched read in
the shared core (plants/fetch_copy.py) on each twin, reported with what moved, not required.

Run 2 plants a subtle regression: the dsbs twin with a busy loop per request sized so that its
CPU per record grows by about twice run 1's dsbs cost band (harness/regression/plants/
busy_dsbs.py), beside an A/A dsbs pair. The check must catch it in the cost layer and pass the
A/A pair. Together the two runs say what the check cannot see (a change inside its bands) and
that what it reports it has measured.

Exit 0 when all of that holds, 1 when not, 2 on an unusable run (one line).
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from brokers.core.errors import UserError
from harness.regression import base as bases
from harness.regression.__main__ import run_regression
from harness.regression.controls import Control
from spark_analysis import regress
from spark_analysis import regress_layers as L

BUSY_MODULE = "harness.regression.plants.busy_dsbs"
# Run 1's extra plants, reported with the statistic that moved most, not required: a copy of
# each fetched read in the shared core (on 32 B records a fetch reads a few KiB).
REPORTED = tuple(
    Control("fetch-copy", "every fetched read copied once more (shared core)", arch,
            "harness.regression.plants.fetch_copy", ())
    for arch in ("zk", "dsbs"))


def run_and_check(out: Path, workload: str, tries: int | None, tune: bool,
                  archs: Sequence[str] = ("zk", "dsbs"), with_controls: bool = True,
                  extra: Sequence[Control] = ()
                  ) -> tuple[regress.RegressionRun, regress.CheckResult]:
    """A regression run with this tree as its own base, and its check."""
    code = run_regression(str(bases.REPO), workload, out, tries=tries, tune=tune, archs=archs,
                          with_controls=with_controls, extra=extra)
    if code != 0:
        raise UserError(f"the selftest's run in {out} did not complete (exit {code})")
    run = regress.pooled(regress.read_runs([out]))
    return run, regress.check(run)


def of_head(verdicts: Sequence[L.Verdict], head: str) -> list[L.Verdict]:
    return [v for v in verdicts if v.statistic.split(" ", 1)[0] == head]


def spread_lines(verdicts: Sequence[L.Verdict]) -> list[str]:
    """Per layer: the A/A pairs' spread and the band it set (the range over statistics)."""
    lines = []
    for layer in L.LAYERS:
        mine = [v for v in verdicts if v.layer == layer]
        if not mine:
            continue
        bands = [v.band_pct for v in mine if math.isfinite(v.band_pct)]
        spreads = [v.spread for v in mine if math.isfinite(v.spread)]
        worst = max(mine, key=lambda v: abs(v.change_pct) if math.isfinite(v.change_pct)
                    else 0.0)
        what = ("sd of ln(head/base) per pair" if layer in ("cost", "throughput")
                else "sd of per-try differences")
        lines.append(
            f"    {layer:<10} {len(mine):>3} statistics, band ±{min(bands):.1f}%..±"
            f"{max(bands):.1f}%" + (f", {what} {min(spreads):.3f}..{max(spreads):.3f}"
                                    if spreads else "")
            + f"; largest move {worst.statistic} {worst.change_pct:+.1f}%")
    return lines


def false_alarms(verdicts: Sequence[L.Verdict]) -> list[str]:
    return [f"    false alarm in {v.layer}: {v.statistic} {v.change_pct:+.1f}% (band "
            f"±{v.band_pct:.1f}%)" + (f" ({v.note})" if v.note else "")
            for v in verdicts if v.status != L.OK]


def aa_report(run: regress.RegressionRun, result: regress.CheckResult, tries: str) -> bool:
    ok = True
    for head, _ in run.pairs:
        mine = of_head(result.verdicts, head)
        bad = [x for x in result.impossible if x.split(" ", 1)[0] in (head, f"{head}@base")]
        passed = all(v.status == L.OK for v in mine) and not bad
        ok &= passed
        print(f"A/A {head} (head = base, {tries}): "
              + ("passed" if passed else "FAILED: a false alarm"), flush=True)
        print("\n".join(spread_lines(mine) + false_alarms(mine)
                        + [f"    IMPOSSIBLE: {x}" for x in bad]))
    return ok


def subtle_busy_us(result: regress.CheckResult, run: regress.RegressionRun
                   ) -> tuple[float, float]:
    """The subtle plant's busy loop per request, µs, and the dsbs cost band it aims at twice
    (percent), spread over the requests a record costs."""
    cost = [v for v in of_head(result.verdicts, "dsbs") if v.layer == "cost"]
    c = run.counters
    requests = c[(c["arch"] == "dsbs@base") & (c["source"] == "broker")
                 & c["counter"].astype(str).str.startswith("kafka_requests_")]["increase"].sum()
    records = run.coordination[run.coordination["arch"] == "dsbs@base"]["messages"].sum()
    if not cost or not math.isfinite(cost[0].band_pct) or requests <= 0 or records <= 0:
        raise UserError("run 1 measured no dsbs cost band or no requests to size the subtle "
                        "plant by")
    band = cost[0].band_pct
    cpu_per_record_s = cost[0].base / 1000  # the statistic is CPU seconds per 1,000 records
    return 2 * band / 100 * cpu_per_record_s / (requests / records) * 1e6, band


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.support.regress_selftest",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--workload", default="regress")
    parser.add_argument("--tries", type=int, default=None, help="default: the workload's")
    parser.add_argument("--tune", action="store_true",
                        help="run as `make regress` does with TUNE=--tune (twinbench tune)")
    args = parser.parse_args(argv)
    tries = f"{args.tries} tries" if args.tries else "the workload's tries"
    try:
        with tempfile.TemporaryDirectory(prefix="twinbench-selftest-") as tmp:
            run, result = run_and_check(Path(tmp) / "aa", args.workload, args.tries,
                                        args.tune, extra=REPORTED)
            ok = aa_report(run, result, tries)
            print("\n".join(regress.control_lines(result)), flush=True)
            ok &= not result.blind
            busy_us, band = subtle_busy_us(result, run)
            subtle = Control("subtle", f"a {busy_us:.1f} µs busy loop per request (about "
                             f"twice the {band:.1f}% dsbs cost band of run 1)", "dsbs",
                             BUSY_MODULE, ("cost",), busy_us)
            run2, result2 = run_and_check(Path(tmp) / "subtle", args.workload, args.tries,
                                          args.tune, archs=("dsbs",), with_controls=False,
                                          extra=(subtle,))
            ok &= aa_report(run2, result2, tries)
            print("\n".join(regress.control_lines(result2)), flush=True)
            ok &= not result2.blind
    except UserError as exc:
        print(f"twinbench: error: {exc}", file=sys.stderr)
        return 2
    print("regress-selftest: " + ("no false alarm, and every planted regression was caught"
                                  if ok else "FAILED (see above)"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
