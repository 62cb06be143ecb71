"""``python -m tests.support.planted.selftest`` (``make regress-selftest``): proof that the
regression can fail, and that it does not fail when nothing changed.

It runs regression runs whose base is this tree's own clean brokers and whose head arms are
this tree's brokers with a planted regression (a module in this package, launched in the twin's
place; never a switch in the shipped brokers), then judges each head arm against its clean base
as ``make regress`` does (spark_analysis/regress.py). It passes when

* the A/A arms (head = base, the same code) pass every layer: it prints their spread and bands,
  what the regression's noise is on this machine today;
* every plant is caught by the layers it must move: it prints which statistics caught it;
* the subtle plant, a busy loop sized at about twice the dsbs cost band just measured, is
  caught too.

Plants (run 1, every arm interleaved in one run):

* ``zk-extra-read``: one more ZooKeeper read per produced partition (zk): exact.
* ``busy-dsbs``: a 200 µs busy loop per request (dsbs): cost, throughput.
* ``slow-append``: a 50 µs busy loop in every storage append of the shared core, on each twin:
  cost (each twin's own CPU per record; a DSBS/ZK ratio would not move).
* ``fetch-copy``: every fetched read copied once more, in the shared core, on each twin;
  reported with whatever caught it (not required: on 32 B records a fetch reads little).

Run 2: the subtle plant, dsbs against its clean base, with the workload's own tries.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from brokers.core.errors import UserError
from harness import architectures
from harness.architectures.entry import Architecture
from harness.regression import arms
from harness.regression.__main__ import run_arms
from spark_analysis import regress
from spark_analysis import regress_layers as L
from tests.support.planted import BUSY_US_ENV, TWIN_ENV

TWINS = {"zk": "brokers.zk_broker", "dsbs": "brokers.dsbs_broker"}
# How many tries run 1 takes: enough pairs for a band, few enough for CI's time.
GROSS_TRIES = 3


@dataclass(frozen=True)
class Plant:
    name: str
    what: str
    arch: str
    module: str
    # The layers that must fail; () = reported, not required.
    expect: tuple[str, ...]

    @property
    def arm(self) -> str:
        return f"{self.arch}+{self.name}"


PLANTS = (
    Plant("zk-extra-read", "an extra ZooKeeper read per produced partition", "zk",
          "tests.support.planted.zk_extra_read", ("exact",)),
    Plant("busy-dsbs", "a 200 µs busy loop per request", "dsbs",
          "tests.support.planted.busy_dsbs", ("cost", "throughput")),
    Plant("slow-append", "a 50 µs busy loop per storage append (shared core)", "zk",
          "tests.support.planted.slow_append", ("cost",)),
    Plant("slow-append", "a 50 µs busy loop per storage append (shared core)", "dsbs",
          "tests.support.planted.slow_append", ("cost",)),
    Plant("fetch-copy", "every fetched read copied once more (shared core)", "zk",
          "tests.support.planted.fetch_copy", ()),
    Plant("fetch-copy", "every fetched read copied once more (shared core)", "dsbs",
          "tests.support.planted.fetch_copy", ()),
)


def planted(plant: Plant, busy_us: float | None = None) -> Architecture:
    env = {TWIN_ENV: TWINS[plant.arch]}
    if busy_us is not None:
        env[BUSY_US_ENV] = f"{busy_us:.1f}"
    return arms.relaunched(architectures.get(plant.arch), plant.arm, module=plant.module,
                           env=env, display=plant.name)


def clean_base(arch: str) -> Architecture:
    return arms.relaunched(architectures.get(arch), arms.base_name(arch))


def run_and_check(added: Sequence[Architecture], names: Sequence[str],
                  pairs: Sequence[tuple[str, str]], workload: str, out: Path,
                  tries: int | None, tune: bool) -> regress.CheckResult:
    about = {"head": {"commit": None}, "base": {"given": "this tree (clean)", "commit": None},
             "selftest": True}
    code = run_arms(added, names, pairs, workload, out, about, tries=tries, tune=tune)
    if code != 0:
        raise UserError(f"the selftest's run in {out} did not complete (exit {code})")
    return regress.check(regress.pooled(regress.read_runs([out])))


def of_head(result: regress.CheckResult, head: str) -> list[L.Verdict]:
    return [v for v in result.verdicts if v.statistic.split(" ", 1)[0] == head]


def layers_failed(verdicts: Sequence[L.Verdict]) -> set[str]:
    return {v.layer for v in verdicts if v.status != L.OK}


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


def caught_lines(verdicts: Sequence[L.Verdict], limit: int = 3) -> list[str]:
    bad = sorted((v for v in verdicts if v.status != L.OK),
                 key=lambda v: -abs(v.change_pct) if math.isfinite(v.change_pct) else 0.0)
    return [f"    caught by {v.layer}: {v.statistic} {v.change_pct:+.1f}% (band "
            f"±{v.band_pct:.1f}%)" + (f" ({v.note})" if v.note else "") for v in bad[:limit]]


def subtle_busy_us(aa: Sequence[L.Verdict], counts_per_record: float) -> tuple[float, float]:
    """The subtle plant's busy loop per request, µs, and the band it aims at (percent): twice
    the mean dsbs cost band of the A/A arm, spread over the requests a record costs."""
    cost = [v for v in aa if v.layer == "cost"]
    if not cost or counts_per_record <= 0:
        raise UserError("the A/A dsbs arm measured no cost statistic to size the subtle plant")
    band = sum(v.band_pct for v in cost) / len(cost)
    # The cost statistics are CPU seconds per 1,000 records.
    cpu_per_record_s = sum(v.base for v in cost) / len(cost) / 1000
    return 2 * band / 100 * cpu_per_record_s / counts_per_record * 1e6, band


def requests_per_record(run: regress.RegressionRun, arm: str) -> float:
    """Kafka requests the brokers of ``arm`` served per record (every API)."""
    c = run.counters
    mine = c[(c["arch"] == arm) & (c["source"] == "broker")
             & c["counter"].astype(str).str.startswith("kafka_requests_")]
    records = run.coordination[run.coordination["arch"] == arm]["messages"].sum()
    return float(mine["increase"].sum() / records) if records > 0 else 0.0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.support.planted.selftest",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--workload", default="regress")
    parser.add_argument("--tries", type=int, default=None,
                        help="the subtle plant's tries (default: the workload's)")
    parser.add_argument("--tune", action="store_true",
                        help="run as `make regress` does with TUNE=--tune (twinbench tune)")
    args = parser.parse_args(argv)
    ok = True
    try:
        with tempfile.TemporaryDirectory(prefix="twinbench-selftest-") as tmp:
            added = [clean_base("zk"), clean_base("dsbs"), *(planted(p) for p in PLANTS)]
            names = ["zk", "zk@base", "dsbs", "dsbs@base", *(p.arm for p in PLANTS)]
            pairs = [("zk", "zk@base"), ("dsbs", "dsbs@base"),
                     *((p.arm, arms.base_name(p.arch)) for p in PLANTS)]
            out = Path(tmp) / "gross"
            result = run_and_check(added, names, pairs, args.workload, out, GROSS_TRIES,
                                   args.tune)
            for arch in ("zk", "dsbs"):
                mine = of_head(result, arch)
                impossible = [x for x in result.impossible
                              if x.split(" ", 1)[0] in (arch, arms.base_name(arch))]
                passed = not layers_failed(mine) and not impossible
                ok &= passed
                print(f"A/A {arch} (head = base, {GROSS_TRIES} tries): "
                      + ("passed" if passed else "FAILED: a false alarm"), flush=True)
                print("\n".join(spread_lines(mine) + ([] if passed else caught_lines(mine))))
            for plant in PLANTS:
                mine = of_head(result, plant.arm)
                failed = layers_failed(mine)
                caught = set(plant.expect) <= failed if plant.expect else bool(failed)
                required = bool(plant.expect)
                ok &= caught or not required
                verdict = ("CAUGHT" if caught else "NOT CAUGHT") + (
                    f" (must fail: {', '.join(plant.expect)})" if required
                    else " (reported, not required)")
                print(f"{plant.arm}: {plant.what}: {verdict}", flush=True)
                print("\n".join(caught_lines(mine) or [
                    "    nothing left its band; cost moved "
                    + ", ".join(f"{v.statistic} {v.change_pct:+.1f}% (band ±{v.band_pct:.1f}%)"
                                for v in mine if v.layer == "cost")]))
            # The subtle plant: sized from the A/A dsbs arm of this run.
            run1 = regress.pooled(regress.read_runs([out]))
            busy_us, band = subtle_busy_us(of_head(result, "dsbs"),
                                           requests_per_record(run1, "dsbs@base"))
            subtle = Plant("subtle", f"a {busy_us:.1f} µs busy loop per request (about twice "
                           f"the {band:.1f}% cost band)", "dsbs",
                           "tests.support.planted.busy_dsbs", ("cost",))
            out2 = Path(tmp) / "subtle"
            result2 = run_and_check([clean_base("dsbs"), planted(subtle, busy_us)],
                                    [subtle.arm, "dsbs@base"], [(subtle.arm, "dsbs@base")],
                                    args.workload, out2, args.tries, args.tune)
            mine = of_head(result2, subtle.arm)
            caught = "cost" in layers_failed(mine)
            ok &= caught
            print(f"{subtle.arm}: {subtle.what}: "
                  + ("CAUGHT" if caught else "NOT CAUGHT") + " (must fail: cost)", flush=True)
            print("\n".join(caught_lines(mine) or spread_lines(mine)))
    except UserError as exc:
        print(f"twinbench: error: {exc}", file=sys.stderr)
        return 2
    print("regress-selftest: " + ("no false alarm, and every planted regression was caught"
                                  if ok else "FAILED (see above)"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
