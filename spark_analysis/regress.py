"""CI regression against a committed baseline, in layers (exact, cost, throughput).

What each layer measures and how its band is set is ``regress_layers.py`` (pure); this module
reads run directories, writes and reads the baseline file, checks, and prints one small table
per layer. Run directories are read as plain CSV (no Spark: CI pays seconds, not a JVM start);
they are validated by the same code as the analysis's (``loader.validate_runs``).

A regression run is one ``twinbench run --arch both --workload regress``: two run logs (zk and
dsbs) sharing a start time and a seed. ``write`` takes the K calibration runs ``make baseline``
made (K >= 2, all of one workload); ``check`` takes one regression run (several are pooled,
session by session, as one longer run would be).

Commands::

    python -m spark_analysis.regress write [--baseline results/baseline] RUN_DIR...
    python -m spark_analysis.regress check [--baseline results/baseline] RUN_DIR...
    python -m spark_analysis.regress noise RUN_DIR...   # K runs: where the throughput spread
                                                        # comes from (pairs vs runs)

Exit 0 = every layer within its band, 1 = a layer failed (or a statistic is missing), 2 =
unusable input (one ``twinbench: error:`` line).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from spark_analysis import regress_layers as L
from spark_analysis.archs import Archs
from twinbench_common import runlog
from twinbench_common.errors import UserError

BASELINE_FILE = "baseline.json"
DEFAULT_BASELINE = Path("results/baseline")
BASELINE_KIND = "twinbench.ratio-baseline"
BASELINE_VERSION = 2


# --- reading regression runs -------------------------------------------------------------------


@dataclass
class RegressionRun:
    """One or more ``--arch both`` runs of one workload, as the layers read them."""

    workload: str
    base: str        # the comparison's reference architecture (zk)
    other: str       # the architecture compared with it (dsbs)
    run_ids: list[str]
    records: pd.DataFrame
    coordination: pd.DataFrame
    counters: pd.DataFrame
    host: dict[str, Any] = field(default_factory=dict)

    def exact(self) -> pd.DataFrame:
        return L.exact_stats(self.coordination, self.counters)

    def cost(self) -> dict[str, float]:
        return L.cost_stats(self.coordination, self.base, self.other)

    def throughput(self) -> dict[str, float]:
        return L.throughput_stats(self.records, self.base, self.other)


def read_runs(paths: Sequence[Path]) -> list[RegressionRun]:
    """The regression runs under ``paths``, one per ``twinbench run`` invocation (its run logs
    share a start time and a seed), oldest first."""
    from spark_analysis.loader import read_pandas, validate_runs

    found = validate_runs(paths)
    groups: dict[tuple[str, str], list[Any]] = {}
    for run in found.runs:
        if run.label:
            raise UserError(f"run {run.run_id} is labelled {run.label!r}: the regression reads "
                            "plain --arch both runs")
        key = (str(run.manifest.get("started_at")), str(run.manifest.get("seed")))
        groups.setdefault(key, []).append(run)
    out = []
    for key in sorted(groups):
        runs = groups[key]
        archs = Archs.from_manifests(r.manifest for r in runs)
        names = {r.arch for r in runs}
        base = archs.baseline.name
        others = [a.name for a in archs.others if a.name in names]
        if base not in names or len(others) != 1:
            ids = ", ".join(r.run_id for r in runs)
            raise UserError(f"runs {ids}: the regression needs one {base} run and one other "
                            "architecture's from the same 'twinbench run --arch both'")
        workloads = {r.workload for r in runs}
        if len(workloads) != 1:
            raise UserError(f"runs {', '.join(r.run_id for r in runs)} mix workloads")
        frames: dict[str, list[pd.DataFrame]] = {"records": [], "coordination": [],
                                                 "counters": []}
        for r in runs:
            for table in (runlog.RECORDS, runlog.COORDINATION, runlog.COUNTERS):
                frames[table.name].append(read_pandas(r, table))
        records = pd.concat(frames["records"], ignore_index=True)
        # Fault sessions and failed cells measure something else.
        records = records[(records["scenario"] != "faults") & (records["status"] == "ok")]
        out.append(RegressionRun(
            workload=workloads.pop(), base=base, other=others[0],
            run_ids=sorted(r.run_id for r in runs), records=records,
            coordination=pd.concat(frames["coordination"], ignore_index=True),
            counters=pd.concat(frames["counters"], ignore_index=True),
            host=dict(runs[0].manifest.get("host") or {})))
    return out


def pooled(runs: Sequence[RegressionRun]) -> RegressionRun:
    """Several regression runs read as one (their sessions keep their own try numbers, so a
    run's key gets the run's position)."""
    if len(runs) == 1:
        return runs[0]
    if len({(r.workload, r.base, r.other) for r in runs}) != 1:
        raise UserError("the runs to check are not all of one workload and pair")

    def tag(frames: list[pd.DataFrame]) -> pd.DataFrame:
        tagged = []
        for i, f in enumerate(frames):
            f = f.copy()
            f["try"] = f["try"].astype(str) + f"@{i}"
            tagged.append(f)
        return pd.concat(tagged, ignore_index=True)

    first = runs[0]
    return RegressionRun(first.workload, first.base, first.other,
                         sorted(i for r in runs for i in r.run_ids),
                         tag([r.records for r in runs]), tag([r.coordination for r in runs]),
                         tag([r.counters for r in runs]), first.host)


# --- the baseline file -------------------------------------------------------------------------


def build_baseline(runs: Sequence[RegressionRun]) -> dict[str, Any]:
    """The baseline of K >= 2 calibration runs of one workload (regress_layers)."""
    if len(runs) < 2:
        raise UserError(f"{len(runs)} regression run(s) among the inputs; the bands come from "
                        "the spread of at least two (make baseline runs several)")
    if len({(r.workload, r.base, r.other) for r in runs}) != 1:
        raise UserError("the calibration runs are not all of one workload and pair")
    first = runs[0]
    tolerances = L.exact_tolerances([r.exact() for r in runs])
    if not tolerances:
        raise UserError("the calibration runs have no counters in common (counters.csv)")
    exact_cells = [
        {"arch": k[0], "cell_id": k[1], "scenario": k[2], "counter": k[3],
         "per_1000": t.per_1000, "tol": t.tol}
        for k, t in sorted(tolerances.items())]
    finite = [t.tol_pct for t in tolerances.values() if math.isfinite(t.tol_pct)]
    layers: dict[str, Any] = {"exact": {
        "half_width_pct": max(finite) if finite else 0.0,
        "rule": "|per_1000_now - per_1000| <= tol, tol = max(floor_pct% of per_1000, "
                "headroom x largest calibration deviation, abs_floor events per cell)",
        "floor_pct": L.FLOOR_PCT, "scenario_floor_pct": dict(L.SCENARIO_FLOOR_PCT),
        "counter_floor_pct": dict(L.COUNTER_FLOOR_PCT),
        "headroom": L.HEADROOM, "abs_floor": L.ABS_FLOOR,
        "excluded": dict(L.EXCLUDED), "statistics": exact_cells}}
    for name, stats in (("cost", [r.cost() for r in runs]),
                        ("throughput", [r.throughput() for r in runs])):
        try:
            band = L.derive_band(stats, L.LAYER_ALPHA[name], L.ALLOWANCE_PCT[name])
        except ValueError as exc:
            raise UserError(f"{name} layer: {exc}") from None
        foreign = band.with_allowance(L.FOREIGN_ALLOWANCE_PCT[name])
        layers[name] = {
            "half_width_pct": band.half_width_pct, **asdict(band),
            "half_width_log": band.half_width_log,
            # The band for a run on another kind of machine (regress_layers.same_machine).
            "foreign_allowance_pct": foreign.allowance_pct,
            "foreign_half_width_pct": foreign.half_width_pct,
            "foreign_half_width_log": foreign.half_width_log,
            "rule": "|ln(now) - ln(baseline)| <= k * sigma_log * sqrt(1 + 1/runs) "
                    "+ ln(1 + allowance_pct/100)",
            "statistics": L.baseline_values(stats),
            "calibration": stats}
    layers["cost"]["cpu_per_1000"] = L.baseline_values(
        [L.cpu_per_1000(r.coordination) for r in runs])
    return {
        "kind": BASELINE_KIND, "version": BASELINE_VERSION,
        "created_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "workload": first.workload, "pair": [first.base, first.other], "alpha": L.ALPHA,
        "host": first.host, "runs": sorted(i for r in runs for i in r.run_ids),
        "layers": layers,
    }


def write_baseline(runs: Sequence[RegressionRun], baseline_dir: Path) -> Path:
    data = build_baseline(runs)
    baseline_dir.mkdir(parents=True, exist_ok=True)
    path = baseline_dir / BASELINE_FILE
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return path


def load_baseline(directory: Path) -> dict[str, Any]:
    path = directory / BASELINE_FILE
    if not path.is_file():
        raise UserError(f"{path}: no baseline here; create one deliberately with 'make baseline'")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise UserError(f"{path}: unreadable baseline ({exc})") from None
    if not isinstance(data, dict) or data.get("kind") != BASELINE_KIND:
        raise UserError(f"{path}: not a twinbench regression baseline")
    if data.get("version") != BASELINE_VERSION:
        raise UserError(f"{path}: baseline version {data.get('version')} (one band over single "
                        f"smoke runs) is not read by this twinbench, which reads version "
                        f"{BASELINE_VERSION} (layers); rewrite it with 'make baseline'")
    return data


# --- checking ----------------------------------------------------------------------------------


@dataclass
class CheckResult:
    verdicts: list[L.Verdict]
    baseline: dict[str, Any]
    # Whether the run's machine is of the baseline's kind (the bands' allowance depends on it).
    same_machine: bool = True

    def layer(self, name: str) -> list[L.Verdict]:
        return [v for v in self.verdicts if v.layer == name]

    def failed(self, name: str) -> bool:
        return any(v.status != L.OK for v in self.layer(name))

    @property
    def ok(self) -> bool:
        return all(v.status == L.OK for v in self.verdicts)


def check(run: RegressionRun, baseline: dict[str, Any]) -> CheckResult:
    if run.workload != baseline["workload"]:
        raise UserError(f"the baseline is of workload {baseline['workload']!r}; these runs are "
                        f"of {run.workload!r}")
    if [run.base, run.other] != list(baseline["pair"]):
        raise UserError(f"the baseline holds {'/'.join(baseline['pair'][::-1])} ratios; these "
                        f"runs compare {run.other} with {run.base}")
    layers = baseline["layers"]
    verdicts: list[L.Verdict] = []
    now = run.exact()
    index = {(r.arch, r.cell_id, r.scenario, r.counter): float(r.per_1000)
             for r in now.itertuples()}
    measured = {(r.arch, r.cell_id, r.scenario) for r in now.itertuples()}
    for s in layers["exact"]["statistics"]:
        key = (s["arch"], s["cell_id"], s["scenario"], s["counter"])
        value = index.get(key)
        if value is None and key[:3] in measured:
            value = 0.0  # a family label never seen in this run: none happened
        verdicts.append(L.exact_verdict(L.exact_name(*key), L.Tolerance(s["per_1000"], s["tol"]),
                                        value))
    same = L.same_machine(baseline.get("host") or {}, run.host)
    for name, stats in (("cost", run.cost()), ("throughput", run.throughput())):
        info = layers[name]
        h = info["half_width_log"] if same else info.get("foreign_half_width_log",
                                                          info["half_width_log"])
        for stat, base in info["statistics"].items():
            verdicts.append(L.ratio_verdict(name, stat, base, stats.get(stat), h))
    return CheckResult(verdicts, baseline, same)


def _fmt(x: float) -> str:
    if not math.isfinite(x):
        return "-"
    return f"{x:.4g}" if abs(x) < 1e4 else f"{x:,.0f}"


def layer_table(result: CheckResult, name: str, limit: int = 6) -> list[str]:
    """A small table of one layer: every statistic (exact: the failing ones, else the closest
    to their tolerance)."""
    info = result.baseline["layers"][name]
    verdicts = result.layer(name)
    bad = [v for v in verdicts if v.status != L.OK]
    if name == "exact":
        head = (f"exact: {len(verdicts)} counts per 1,000 records, each with its tolerance "
                f"(up to ±{info['half_width_pct']:.1f}%): ")
        shown = bad or sorted(verdicts, key=lambda v: -abs(v.now - v.baseline)
                              / max(v.hi - v.baseline, 1e-12))[:limit]
    else:
        width, allowance, kind = info["half_width_pct"], info["allowance_pct"], "same machine"
        if not result.same_machine and "foreign_half_width_pct" in info:
            width, allowance = info["foreign_half_width_pct"], info["foreign_allowance_pct"]
            kind = "another kind of machine"
        head = (f"{name}: DSBS/ZK ratios, band ±{width:.1f}% (A/A sigma "
                f"{info['sigma_log'] * 100:.1f}% over {info['runs']} runs, k={info['k']:.2f}, "
                f"+{allowance:g}% allowance for {kind}): ")
        shown = verdicts
    lines = [head + (f"{len(bad)} outside" if bad else "all within")]
    width = max([len(v.statistic) for v in shown] + [9])
    lines.append(f"  {'statistic':<{width}}  {'baseline':>9}  {'now':>9}  {'band':>19}  "
                 f"{'change':>8}  verdict")
    for v in shown[:max(limit, len(bad))] if name == "exact" else shown:
        band = f"{_fmt(v.lo)}..{_fmt(v.hi)}"
        change = f"{v.change_pct:+.1f}%" if math.isfinite(v.change_pct) else "-"
        lines.append(f"  {v.statistic:<{width}}  {_fmt(v.baseline):>9}  {_fmt(v.now):>9}  "
                     f"{band:>19}  {change:>8}  {v.status}")
    if bad and name == "exact":
        lines.append("  " + "; ".join(f"{v.statistic} changed {v.change_pct:+.1f}%"
                                      for v in bad[:3]) + (" ..." if len(bad) > 3 else ""))
    return lines


def _machine(host: dict[str, Any]) -> str:
    """How a run's machine is described in the check: CPU, tuning, other processes' load."""
    cond = host.get("conditions") or {}
    bg = host.get("background") or {}
    flag = cond.get("tuned")
    tuned = "tuning unknown" if flag is None else "tuned" if flag else "untuned"
    load = (f", others used {bg['background_cpu_mean']:.0%} of it"
            if bg.get("background_cpu_mean") is not None else "")
    return f"{host.get('cpu_model', '?')} x{host.get('cpu_count', '?')}, {tuned}{load}"


def machine_lines(result: CheckResult, run: RegressionRun) -> list[str]:
    """The baseline's machine and this run's; a warning when they differ in what the bands
    cannot absorb (tuning) or the run shared its machine (background load above 10%)."""
    lines = [f"machine: baseline {_machine(result.baseline.get('host') or {})}; "
             f"now {_machine(run.host)}"]
    base_cond = (result.baseline.get("host") or {}).get("conditions") or {}
    now_cond = run.host.get("conditions") or {}
    if not result.same_machine:
        lines.append("  another kind of machine than the baseline's (CPU model, CPU count or "
                     "tuning): the cost and throughput bands carry the larger allowance")
    if base_cond.get("tuned") is not None and now_cond.get("tuned") is not None and (
            base_cond["tuned"] != now_cond["tuned"]):
        lines.append("  warning: the baseline was measured "
                     f"{'tuned' if base_cond['tuned'] else 'untuned'} and this run "
                     f"{'tuned' if now_cond['tuned'] else 'untuned'} (twinbench tune)")
    bg = (run.host.get("background") or {}).get("background_cpu_mean")
    if bg is not None and bg > 0.10:
        lines.append(f"  warning: other processes used {bg:.0%} of the machine during the "
                     "sessions; a cost or throughput verdict may be theirs, not the code's")
    return lines


def summarize(result: CheckResult, run: RegressionRun | None = None) -> str:
    b = result.baseline
    failed = [n for n in L.LAYERS if result.failed(n)]
    lines = [f"regression vs baseline ({b['workload']}, {b['created_at']}, "
             f"{len(b['layers']['cost']['calibration'])} calibration runs; family-wise "
             f"false-failure rate <= {b['alpha']:.0%}): "
             + ("all layers within their bands" if not failed
                else "REGRESSION in " + ", ".join(failed))]
    if run is not None:
        lines.extend(machine_lines(result, run))
    for name in L.LAYERS:
        lines.extend(layer_table(result, name))
    return "\n".join(lines)


def markdown(result: CheckResult) -> str:
    """The report's section: one table per layer."""
    out = ["## Regression vs baseline", "",
           "```", summarize(result), "```", ""]
    return "\n".join(out)


def verdict_frame(result: CheckResult) -> pd.DataFrame:
    return pd.DataFrame([{**asdict(v), "change_pct": v.change_pct} for v in result.verdicts])


def run_check(paths: Sequence[Path], baseline_dir: Path, out: Path | None = None
              ) -> tuple[bool, str]:
    baseline = load_baseline(baseline_dir)
    runs = read_runs(paths)
    runs = [r for r in runs if r.workload == baseline["workload"]] or runs
    run = pooled(runs)
    result = check(run, baseline)
    text = summarize(result, run)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        verdict_frame(result).to_csv(out / "regression.csv", index=False)
        report = out / "report.md"
        if report.is_file():
            with report.open("a", encoding="utf-8") as f:
                f.write("\n" + markdown(result))
    return result.ok, text


def noise_table(runs: Sequence[RegressionRun]) -> str:
    """``regress_layers.throughput_noise`` of K runs as a small table (ln units)."""
    if len(runs) < 2:
        raise UserError("the noise of the throughput layer needs at least 2 regression runs")
    first = runs[0]
    frame = L.throughput_noise([r.records for r in runs], first.base, first.other)
    lines = [f"throughput noise over {len(runs)} runs, ln(ratio) units: pair_sd = one paired "
             "session's scatter, implied_sd = what it makes of a run's mean, run_sd = observed",
             f"  {'statistic':24}{'pairs/run':>10}{'pair_sd':>9}{'implied_sd':>12}{'run_sd':>8}"]
    for row in frame.itertuples():
        lines.append(f"  {row.statistic:24}{row.pairs:>10.0f}{row.pair_sd:>9.3f}"
                     f"{row.implied_sd:>12.3f}{row.run_sd:>8.3f}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m spark_analysis.regress",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("check", "write", "noise"))
    parser.add_argument("runs", nargs="*", type=Path, default=[Path("results/runs")],
                        metavar="RUN_DIR")
    parser.add_argument("--baseline", type=Path, default=DEFAULT_BASELINE)
    parser.add_argument("--out", type=Path, default=None, help="also write regression.csv here")
    args = parser.parse_intermixed_args(argv)
    try:
        if args.action == "write":
            path = write_baseline(read_runs(args.runs), args.baseline)
            print(f"wrote {path}")
            last = pooled(read_runs(args.runs)[-1:])
            print(summarize(check(last, load_baseline(args.baseline)), last))
            return 0
        if args.action == "noise":
            print(noise_table(read_runs(args.runs)))
            return 0
        ok, text = run_check(args.runs, args.baseline, args.out)
        print(text)
        return 0 if ok else 1
    except UserError as exc:
        print(f"twinbench: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
