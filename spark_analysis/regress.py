"""The regression check: head against base, per architecture, layer by layer.

What each layer compares and how its band is set is ``regress_layers.py`` (pure); this module
reads a regression run's directories, pairs each head arm with its base arm, judges, and prints
one small table per layer. Run directories are read as plain CSV (no Spark: CI pays seconds, not
a JVM start), validated by the same code as the analysis's (``loader.validate_runs``).

A regression run is one ``python -m harness.regression run`` (``make regress``): one run log
per arm (``zk``, ``zk@base``, ``dsbs``, ``dsbs@base``, and the positive controls such as
``dsbs+slow-append``) sharing a start time and a seed, and ``regression.json`` saying what was
compared and what each control must fail. Several runs given together are pooled, session by
session, as one longer run would be.

Commands::

    python -m spark_analysis.regress check RUN_DIR... [--out DIR]

Exit 0 = every layer within its band and every positive control caught, 1 = a regression (or
a statistic without data), or a control not caught (the run could not have seen a change of that
size: inconclusive), 2 = unusable input (one ``twinbench: error:`` line).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from spark_analysis import regress_layers as L
from twinbench_common import runlog
from twinbench_common.errors import UserError

# --- reading a regression run -------------------------------------------------------------------


@dataclass(frozen=True)
class Control:
    """A positive control (harness/regression/controls.py): ``arm`` is head with a known
    regression planted, judged against ``against`` (head); every layer of ``expect`` must
    fail."""

    arm: str
    against: str
    expect: tuple[str, ...]
    what: str


@dataclass
class RegressionRun:
    """Every arm's sessions of one (or several pooled) regression runs."""

    workload: str
    arms: list[str]
    run_ids: list[str]
    records: pd.DataFrame
    coordination: pd.DataFrame
    counters: pd.DataFrame
    host: dict[str, Any] = field(default_factory=dict)
    # regression.json of the run: what was compared (head and base commits), if present.
    about: dict[str, Any] = field(default_factory=dict)

    @property
    def controls(self) -> list[Control]:
        """The positive controls regression.json lists whose arms ran."""
        return [Control(str(c["arm"]), str(c["against"]), tuple(c.get("expect") or ()),
                        str(c.get("what") or ""))
                for c in self.about.get("controls") or ()
                if c.get("arm") in self.arms and c.get("against") in self.arms]

    @property
    def pairs(self) -> list[tuple[str, str]]:
        """(head arm, base arm) pairs: as regression.json lists them, else by name (``zk`` with
        ``zk@base``)."""
        listed = self.about.get("pairs")
        if listed:
            return [(str(h), str(b)) for h, b in listed if h in self.arms and b in self.arms]
        return L.pairs_of(self.arms)


def read_runs(paths: Sequence[Path]) -> list[RegressionRun]:
    """The regression runs under ``paths``, one per run invocation (its run logs share a start
    time and a seed), oldest first."""
    from spark_analysis.loader import read_pandas, validate_runs

    found = validate_runs(paths)
    groups: dict[tuple[str, str], list[Any]] = {}
    for run in found.runs:
        key = (str(run.manifest.get("started_at")), str(run.manifest.get("seed")))
        groups.setdefault(key, []).append(run)
    out = []
    for key in sorted(groups):
        runs = groups[key]
        arms = sorted({r.arch for r in runs})
        ids = ", ".join(r.run_id for r in runs)
        about_file = Path(str(runs[0].path)).parent / "regression.json"
        about = json.loads(about_file.read_text("utf-8")) if about_file.is_file() else {}
        if not L.pairs_of(arms) and not about.get("pairs"):
            raise UserError(f"runs {ids}: no architecture ran as both head and base (arms "
                            f"{', '.join(arms)}); a regression run is 'make regress' (python -m "
                            "harness.regression run)")
        workloads = {r.workload for r in runs}
        if len(workloads) != 1:
            raise UserError(f"runs {ids} mix workloads")
        frames: dict[str, list[pd.DataFrame]] = {"records": [], "coordination": [],
                                                 "counters": []}
        for r in runs:
            for table in (runlog.RECORDS, runlog.COORDINATION, runlog.COUNTERS):
                frames[table.name].append(read_pandas(r, table))
        records = pd.concat(frames["records"], ignore_index=True)
        # Fault sessions and failed cells measure something else.
        records = records[(records["scenario"] != "faults") & (records["status"] == "ok")]
        out.append(RegressionRun(
            workload=workloads.pop(), arms=arms, run_ids=sorted(r.run_id for r in runs),
            records=records,
            coordination=pd.concat(frames["coordination"], ignore_index=True),
            counters=pd.concat(frames["counters"], ignore_index=True),
            host=dict(runs[0].manifest.get("host") or {}), about=about))
    return out


def pooled(runs: Sequence[RegressionRun]) -> RegressionRun:
    """Several regression runs read as one (their sessions keep their own try numbers, so a
    run's key gets the run's position)."""
    if len(runs) == 1:
        return runs[0]
    if len({r.workload for r in runs}) != 1:
        raise UserError("the runs to check are not all of one workload")

    def tag(frames: list[pd.DataFrame]) -> pd.DataFrame:
        tagged = []
        for i, f in enumerate(frames):
            f = f.copy()
            f["try"] = f["try"].astype(str) + f"@{i}"
            tagged.append(f)
        return pd.concat(tagged, ignore_index=True)

    first = runs[0]
    return RegressionRun(first.workload, sorted({a for r in runs for a in r.arms}),
                         sorted(i for r in runs for i in r.run_ids),
                         tag([r.records for r in runs]), tag([r.coordination for r in runs]),
                         tag([r.counters for r in runs]), first.host, first.about)


# --- checking ----------------------------------------------------------------------------------


@dataclass
class ControlResult:
    control: Control
    verdicts: list[L.Verdict]
    impossible: list[str] = field(default_factory=list)

    @property
    def failed_layers(self) -> set[str]:
        return {v.layer for v in self.verdicts if v.status != L.OK} | (
            {"zookeeper"} if self.impossible else set())

    @property
    def caught(self) -> bool:
        return set(self.control.expect) <= self.failed_layers


@dataclass
class CheckResult:
    verdicts: list[L.Verdict]
    # Sessions where the brokers claimed more ZooKeeper requests than ZooKeeper received.
    impossible: list[str] = field(default_factory=list)
    controls: list[ControlResult] = field(default_factory=list)

    def layer(self, name: str) -> list[L.Verdict]:
        return [v for v in self.verdicts if v.layer == name]

    def failed(self, name: str) -> bool:
        if name == "zookeeper" and self.impossible:
            return True
        return any(v.status != L.OK for v in self.layer(name))

    @property
    def regressed(self) -> bool:
        return bool(self.impossible) or any(v.status != L.OK for v in self.verdicts)

    @property
    def blind(self) -> list[ControlResult]:
        """The controls this run did not catch: it could have missed a change that size."""
        return [c for c in self.controls if not c.caught]

    @property
    def ok(self) -> bool:
        return not self.regressed and not self.blind


def judge(run: RegressionRun, pairs: Sequence[tuple[str, str]], family: int
          ) -> tuple[list[L.Verdict], list[str]]:
    """Verdicts of ``pairs``, with each layer's Bonferroni count taken as ``family`` pairs'
    worth of statistics (a control is judged as if it were one more architecture of the
    check, so its bands are the check's)."""
    verdicts: list[L.Verdict] = []
    impossible: list[str] = []
    counts = L.per_try_counts(run.coordination, run.counters)
    exact: list[L.CountStat] = []
    zookeeper: list[L.CountStat] = []
    cost: list[L.RatioStat] = []
    throughput: list[L.RatioStat] = []
    for head, base in pairs:
        exact += L.exact_stats(counts, head, base)
        z, bad = L.zookeeper_stats(counts, head, base)
        zookeeper += z
        impossible += bad
        cost += L.cost_stats(run.coordination, head, base)
        throughput += L.throughput_stats(run.records, head, base)
    scale = max(family, 1) / max(len(pairs), 1)
    for layer, stats in (("exact", exact), ("zookeeper", zookeeper)):
        for s in stats:
            k = L.t_multiplier(L.LAYER_ALPHA[layer], round(len(stats) * scale), len(s.diffs))
            verdicts.append(L.count_verdict(layer, s, k))
    for layer, ratios in (("cost", cost), ("throughput", throughput)):
        for r in ratios:
            k = L.t_multiplier(L.LAYER_ALPHA[layer], round(len(ratios) * scale), len(r.logs))
            verdicts.append(L.ratio_verdict(layer, r, k))
    return verdicts, impossible


def check(run: RegressionRun) -> CheckResult:
    """Every head arm against its base; every control against its head."""
    family = max(len(run.pairs), 1)
    verdicts, impossible = judge(run, run.pairs, family)
    controls = [ControlResult(c, *judge(run, [(c.arm, c.against)], family))
                for c in run.controls]
    return CheckResult(verdicts, impossible, controls)


def _fmt(x: float) -> str:
    if not math.isfinite(x):
        return "-"
    return f"{x:.4g}" if abs(x) < 1e4 else f"{x:,.0f}"


def layer_table(result: CheckResult, name: str, limit: int = 6) -> list[str]:
    """One layer: every cost and throughput statistic; for the counts, the failing ones, else
    those closest to their tolerance."""
    verdicts = result.layer(name)
    bad = [v for v in verdicts if v.status != L.OK]
    if name in ("exact", "zookeeper"):
        what = ("counts per 1,000 records" if name == "exact" else
                "ZooKeeper packets beyond the brokers' requests, per 1,000 records")
        head = f"{name}: {len(verdicts)} {what}, each head against base: "
        shown = bad or sorted(verdicts, key=lambda v: -abs(v.head - v.base)
                              / max(v.tolerance, 1e-12))[:limit]
        lines = [head + (f"{len(bad)} outside" if bad else
                         "all within" if verdicts else "none measured")]
        for line in result.impossible if name == "zookeeper" else []:
            lines.append(f"  IMPOSSIBLE: {line}")
    else:
        unit = "CPU per record" if name == "cost" else "records/s"
        lines = [f"{name}: head/base {unit}, geometric mean over the pairs; band from the "
                 "pairs' own spread (A/A sd of ln ratio): "
                 + (f"{len(bad)} outside" if bad else "all within")]
        shown = verdicts
    width = max([len(v.statistic) for v in shown] + [9])
    spread = "pair sd" if name in ("cost", "throughput") else "try sd"
    lines.append(f"  {'statistic':<{width}}  {'base':>9}  {'head':>9}  {'change':>8}  "
                 f"{'band':>8}  {'n':>3}  {spread:>8}  verdict")
    for v in shown[:max(limit, len(bad))] if name in ("exact", "zookeeper") else shown:
        change = f"{v.change_pct:+.1f}%" if math.isfinite(v.change_pct) else "-"
        band = f"±{v.band_pct:.1f}%" if math.isfinite(v.band_pct) else "-"
        sd = (f"{v.spread:.3f}" if math.isfinite(v.spread) else "-")
        lines.append(f"  {v.statistic:<{width}}  {_fmt(v.base):>9}  {_fmt(v.head):>9}  "
                     f"{change:>8}  {band:>8}  {v.n:>3}  {sd:>8}  {v.status}"
                     + (f" ({v.note})" if v.note else ""))
    return lines


def _machine(host: dict[str, Any]) -> str:
    cond = host.get("conditions") or {}
    bg = host.get("background") or {}
    flag = cond.get("tuned")
    tuned = "tuning unknown" if flag is None else "tuned" if flag else "untuned"
    load = (f", others used {bg['background_cpu_mean']:.0%} of it"
            if bg.get("background_cpu_mean") is not None else "")
    return f"{host.get('cpu_model', '?')} x{host.get('cpu_count', '?')}, {tuned}{load}"


def summarize(result: CheckResult, run: RegressionRun) -> str:
    failed = [n for n in L.LAYERS if result.failed(n)]
    base = run.about.get("base") or {}
    head = (run.about.get("head") or {}).get("commit") or "?"
    what = (f"head {str(head)[:12]} against base {base.get('given', '?')} "
            f"({str(base.get('commit') or base.get('path') or '?')[:12]})")
    same = run.about.get("same_brokers")
    lines = [f"regression, {what}, workload {run.workload}, {len(run.pairs)} architectures "
             f"(family-wise false-failure rate <= {L.ALPHA:.0%}): "
             + ("REGRESSION in " + ", ".join(failed) if failed
                else "INCONCLUSIVE: within the bands, but a control was not caught (bands this "
                     "wide could hide a regression that size)" if result.blind
                else "all layers within their bands"
                + ("; every control caught" if result.controls else ""))]
    if same:
        lines.append("  the brokers' code is the same on both sides: an A/A comparison")
    lines.append(f"machine: {_machine(run.host)}")
    bg = (run.host.get("background") or {}).get("background_cpu_mean")
    if bg is not None and bg > 0.10:
        lines.append(f"  warning: other processes used {bg:.0%} of the machine during the "
                     "sessions; a cost or throughput verdict may be theirs, not the code's")
    for name in L.LAYERS:
        lines.extend(layer_table(result, name))
    lines.extend(control_lines(result))
    return "\n".join(lines)


def control_lines(result: CheckResult) -> list[str]:
    """Each positive control: caught or not, by the statistic that moved most in each layer it
    must fail (what size of change this run could see)."""
    if not result.controls:
        return []
    lines = ["controls: head with a known regression planted, against head; each must fail "
             "its layers"]
    for c in result.controls:
        if c.control.expect:
            lines.append(f"  {c.control.arm}: {c.control.what}; must fail "
                         f"{', '.join(c.control.expect)}: "
                         + ("caught" if c.caught else "NOT CAUGHT"))
        else:
            failed = sorted(c.failed_layers)
            lines.append(f"  {c.control.arm}: {c.control.what}; reported, not required: "
                         + (f"caught by {', '.join(failed)}" if failed else "not caught"))
        for layer in c.control.expect or ("cost",):
            mine = [v for v in c.verdicts if v.layer == layer and math.isfinite(v.change_pct)]
            if not mine:
                lines.append(f"    {layer}: not measured")
                continue
            v = max(mine, key=lambda v: abs(v.change_pct) / max(v.band_pct, 1e-9))
            lines.append(f"    {layer}: {v.statistic} {v.change_pct:+.1f}% (band "
                         f"±{v.band_pct:.1f}%) {v.status}")
    return lines


def markdown(result: CheckResult, run: RegressionRun) -> str:
    return "\n".join(["## Regression: head against base", "", "```", summarize(result, run),
                      "```", ""])


def verdict_frame(result: CheckResult) -> pd.DataFrame:
    """Every verdict; ``judged`` is ``head`` for the check's own, else the control's arm."""
    rows = [(v, "head") for v in result.verdicts] + [
        (v, c.control.arm) for c in result.controls for v in c.verdicts]
    return pd.DataFrame([{"judged": who, **asdict(v), "change_pct": v.change_pct,
                          "band_pct": v.band_pct} for v, who in rows])


def failed_statistics(result: CheckResult) -> set[str]:
    """What failed, one name per statistic (``layer: statistic``): what a confirming run must
    fail again."""
    out = {f"{v.layer}: {v.statistic}" for v in result.verdicts if v.status != L.OK}
    return out | ({"zookeeper: brokers' requests beyond ZooKeeper's"} if result.impossible
                  else set())


def confirmed(result: CheckResult, earlier: set[str]) -> tuple[bool, str]:
    """Whether this run confirms an earlier run's failure: a real regression moves the same
    statistic in both runs, while noise fails a different one each time. (On this 2-core
    machine two runs in a row have each failed one statistic, a throughput ratio in one and a
    CPU cost in the other, more often than the 1% family-wise rate of each promises; the same
    statistic twice is what a change of the code does.) Controls not caught still fail the
    run: it could have missed a change that size."""
    again = failed_statistics(result) & earlier
    if again:
        return False, "confirmed: failed in both runs: " + "; ".join(sorted(again))
    if result.regressed:
        return not result.blind, ("not confirmed: this run failed other statistics than the "
                                  "first (noise, not a regression): "
                                  + "; ".join(sorted(failed_statistics(result))))
    return not result.blind, "not confirmed: this run is within the bands"


def run_check(paths: Sequence[Path], out: Path | None = None, *,
              failed_out: Path | None = None, confirm: Path | None = None
              ) -> tuple[bool, str]:
    run = pooled(read_runs(paths))
    result = check(run)
    text = summarize(result, run)
    if failed_out is not None:
        failed_out.write_text("".join(f"{s}\n" for s in sorted(failed_statistics(result))),
                              "utf-8")
    ok = result.ok
    if confirm is not None:
        earlier = {line for line in confirm.read_text("utf-8").splitlines() if line}
        ok, said = confirmed(result, earlier)
        text += "\n" + said
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        verdict_frame(result).to_csv(out / "regression.csv", index=False)
        report = out / "report.md"
        if report.is_file():
            with report.open("a", encoding="utf-8") as f:
                f.write("\n" + markdown(result, run))
    return ok, text


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m spark_analysis.regress",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("check",))
    parser.add_argument("runs", nargs="+", type=Path, metavar="RUN_DIR")
    parser.add_argument("--out", type=Path, default=None, help="also write regression.csv here")
    parser.add_argument("--failed-out", type=Path, default=None, metavar="FILE",
                        help="write the statistics that failed here, one a line")
    parser.add_argument("--confirm", type=Path, default=None, metavar="FILE",
                        help="a confirming run: fail only if a statistic FILE lists (an earlier "
                        "run's --failed-out) fails again, or a control is not caught")
    args = parser.parse_intermixed_args(argv)
    try:
        ok, text = run_check(args.runs, args.out, failed_out=args.failed_out,
                             confirm=args.confirm)
        print(text)
        return 0 if ok else 1
    except UserError as exc:
        print(f"twinbench: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
