"""CI regression of DSBS/ZK throughput ratios against a committed baseline.

The ratio is other / baseline architecture (spark_analysis/archs.py: DSBS/ZK for the paper's
pair); a check compares one such pair, the one its baseline file was written for.

The question CI asks: did a change move the cost of coordination? Each cell's DSBS/ZK rps ratio
from the current runs must lie inside its band around the baseline ratio. The band is not a
guessed percentage; it comes from the A/A calibration measured when the baseline was written:

* For each architecture X, the A/A runs give s_X = RMS over cells of ln(B/A). Since A and B
  are independent runs of the same thing, s_X² estimates 2·v_X, where v_X is the variance of
  the log of one run's cell mean.
* A ratio r = DSBS/ZK has var(ln r) = v_D + v_Z; the difference of two independent ratios
  (now vs baseline) has twice that: s_D² + s_Z². So the band is
  ``|ln r_now - ln r_base| <= k · sqrt(s_D² + s_Z²)``.
* k = t quantile at 1 - alpha/(2m) with m checked cells (Bonferroni, alpha = 0.01 for the whole
  check by default) and as many degrees of freedom as A/A cells went into the s estimates: an
  unchanged system fails the check in at most about 1% of CI runs.

Commands::

    python -m spark_analysis.regress write [--baseline results/baseline] RUN_DIR...
    python -m spark_analysis.regress check [--baseline results/baseline] RUN_DIR...

``write`` needs the smoke workload's ZK and DSBS runs and its A/A runs (labels A and B);
``check`` needs the ZK and DSBS runs of a fresh smoke run. Exit 0 = within bands, 1 = a ratio
left its band (or a cell is missing), 2 = unusable input.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import cast

import pandas as pd
from scipy import stats as sps

from spark_analysis.archs import DEFAULT, Archs
from spark_analysis.schema import CELL_KEY, PAPER_SCENARIOS
from twinbench_common.errors import UserError

BASELINE_FILE = "baseline.json"
DEFAULT_BASELINE = Path("results/baseline")
DEFAULT_ALPHA = 0.01
METRIC = "rps"
BASELINE_KIND = "twinbench.ratio-baseline"
BASELINE_VERSION = 1
# Cell identity inside one workload (the workload itself is stored once).
CHECK_KEY = [k for k in CELL_KEY if k != "workload"]


@dataclass(frozen=True)
class Band:
    sigma_log: float   # sqrt(s_dsbs^2 + s_zk^2)
    k: float           # t multiplier
    df: int
    alpha: float
    cells: int

    @property
    def half_width_log(self) -> float:
        return self.k * self.sigma_log


def pair_of(comparison: pd.DataFrame, archs: Archs = DEFAULT) -> tuple[str, str]:
    """(baseline, other): the two architectures whose ratio ``comparison`` holds. A table
    without architecture columns (made by hand) holds the first pair of ``archs``."""
    others = [a.name for a in archs.others if f"{a.name}_n" in comparison]
    if len(others) > 1:
        raise UserError(f"the inputs compare {', '.join(others)} with "
                        f"{archs.baseline.name}; the ratio regression checks one pair: give "
                        "it the runs of one")
    return archs.baseline.name, (others[0] if others else archs.others[0].name)


def derive_band(noise: pd.DataFrame, workload: str, cells: int,
                alpha: float = DEFAULT_ALPHA, pair: tuple[str, str] | None = None
                ) -> tuple[Band, dict[str, dict[str, object]]]:
    """The band from the measured A/A noise floor of ``workload`` (see module docstring), for
    the ratio of ``pair`` (baseline, other; the default's first pair: zk, dsbs)."""
    sub = noise[noise["workload"] == workload] if not noise.empty else noise
    measured = {r["arch"]: r for _, r in sub.iterrows() if math.isfinite(r["log_rms"])}
    if not measured:
        raise UserError(
            f"no A/A calibration runs for workload {workload!r} among the inputs: the regression"
            " band comes from the measured noise floor, so run the A/A calibration (two runs of"
            " one architecture labelled A and B) with the same workload first")
    detail: dict[str, dict[str, object]] = {}
    variances = []
    df = 0
    for arch in pair or pair_of(pd.DataFrame()):
        if arch in measured:
            r = measured[arch]
            detail[arch] = {"log_rms": float(r["log_rms"]), "cells": int(r["cells"]),
                            "measured": True}
            df += int(r["cells"])
            variances.append(float(r["log_rms"]) ** 2)
        else:
            # Only one architecture was calibrated: assume the other is as noisy (stated in the
            # baseline file so a reader sees it).
            other = next(iter(measured.values()))
            detail[arch] = {"log_rms": float(other["log_rms"]), "cells": 0, "measured": False,
                            "assumed_from": str(other["arch"])}
            variances.append(float(other["log_rms"]) ** 2)
    sigma = math.sqrt(sum(variances))
    k = float(sps.t.ppf(1 - alpha / (2 * max(cells, 1)), max(df, 1)))
    return Band(sigma_log=sigma, k=k, df=df, alpha=alpha, cells=cells), detail


def _paper(comparison: pd.DataFrame) -> pd.DataFrame:
    """The ratios the regression is about: the paper's scenarios. job.compute already keeps
    fault sessions out of the comparison; this guards a comparison.csv read from elsewhere."""
    if comparison.empty:
        return comparison
    return comparison[comparison["scenario"].isin(PAPER_SCENARIOS)]


def _pick_workload(comparison: pd.DataFrame, workload: str | None) -> str:
    names = sorted(comparison["workload"].unique()) if not comparison.empty else []
    if workload:
        if workload not in names:
            raise UserError(f"workload {workload!r} has no ZK-and-DSBS cells among the inputs"
                            f" (found: {', '.join(names) or 'none'})")
        return workload
    if len(names) != 1:
        raise UserError("the inputs hold " + (f"several workloads ({', '.join(names)}); choose"
                                               " one with --workload" if names else
                                               "no cell measured on both ZK and DSBS"))
    return names[0]


def build_baseline(comparison: pd.DataFrame, noise: pd.DataFrame, run_ids: Sequence[str],
                   workload: str | None = None, alpha: float = DEFAULT_ALPHA,
                   archs: Archs = DEFAULT) -> dict[str, object]:
    base, other = pair = pair_of(comparison, archs)
    comparison = _paper(comparison)
    name = _pick_workload(comparison, workload)
    cells = comparison[(comparison["workload"] == name) & (comparison["metric"] == METRIC)]
    cells = cells[cells["ratio"].map(lambda r: math.isfinite(r) and r > 0)]
    band, detail = derive_band(noise, name, len(cells), alpha, pair)
    h = band.half_width_log
    entries = []
    for _, r in cells.iterrows():
        entry: dict[str, int | float | str] = {
            k: (int(r[k]) if k in ("msg_size", "batch") else str(r[k])) for k in CHECK_KEY}
        entry.update(ratio=float(r["ratio"]), lo=float(r["ratio"] * math.exp(-h)),
                     hi=float(r["ratio"] * math.exp(h)))
        entries.append(entry)
    return {
        "kind": BASELINE_KIND, "version": BASELINE_VERSION,
        "created_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "workload": name, "metric": METRIC, "alpha": alpha,
        "band": {"sigma_log": band.sigma_log, "k": band.k, "df": band.df, "cells": band.cells,
                 "half_width_log": h, "half_width_pct": math.expm1(h) * 100,
                 "rule": "|ln(ratio_now) - ln(ratio_baseline)| <= "
                         f"k * sqrt(s_{base}^2 + s_{other}^2)"},
        "noise_floor": detail,
        "runs": sorted(run_ids),
        "cells": entries,
    }


def load_baseline(directory: Path) -> dict[str, object]:
    path = directory / BASELINE_FILE
    if not path.is_file():
        raise UserError(f"{path}: no baseline here; create one deliberately with 'make baseline'"
                        " (python -m spark_analysis.regress write RUN_DIR...)")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise UserError(f"{path}: unreadable baseline ({exc})") from None
    if not isinstance(data, dict) or data.get("kind") != BASELINE_KIND:
        raise UserError(f"{path}: not a twinbench ratio baseline")
    if data.get("version") != BASELINE_VERSION:
        raise UserError(f"{path}: baseline version {data.get('version')} is not supported"
                        f" (this twinbench reads {BASELINE_VERSION}); rewrite it with"
                        " 'make baseline'")
    return data


def check(comparison: pd.DataFrame, baseline: dict[str, object], archs: Archs = DEFAULT
          ) -> pd.DataFrame:
    """One row per baseline cell: the ratio now, the band, and ok / REGRESSION / MISSING."""
    pair = pair_of(comparison, archs)
    floor = baseline.get("noise_floor")
    written_for = tuple(floor) if isinstance(floor, dict) else ()
    if written_for and set(written_for) != set(pair):
        raise UserError(f"the baseline holds {' and '.join(written_for)} ratios; these runs "
                        f"compare {' and '.join(pair)}")
    workload = str(baseline["workload"])
    comparison = _paper(comparison)
    now = comparison[(comparison["workload"] == workload)
                     & (comparison["metric"] == baseline["metric"])] \
        if not comparison.empty else comparison
    index = {tuple(str(r[k]) for k in CHECK_KEY): r for _, r in now.iterrows()}
    rows = []
    cells = baseline["cells"]
    if not isinstance(cells, list):
        raise UserError("the baseline's cells are not a list; rewrite it with 'make baseline'")
    for cell in cells:
        key = tuple(str(cell[k]) for k in CHECK_KEY)
        current = index.get(key)
        ratio = float(current["ratio"]) if current is not None else math.nan
        if current is None or not math.isfinite(ratio):
            status = "MISSING"
        elif cell["lo"] <= ratio <= cell["hi"]:
            status = "ok"
        else:
            status = "REGRESSION"
        rows.append({**{k: cell[k] for k in CHECK_KEY}, "baseline_ratio": cell["ratio"],
                     "band_lo": cell["lo"], "band_hi": cell["hi"], "ratio_now": ratio,
                     "change_pct": (ratio / cell["ratio"] - 1) * 100 if math.isfinite(ratio)
                     else math.nan, "status": status})
    return pd.DataFrame(rows)


def summarize(result: pd.DataFrame, baseline: dict[str, object]) -> str:
    # Written by baseline() and version-checked by load_baseline.
    band = cast(dict[str, float], baseline["band"])
    bad = result[result["status"] != "ok"]
    head = (f"ratio regression vs baseline ({baseline['workload']}, {len(result)} cells, band"
            f" ±{band['half_width_pct']:.1f}% from the A/A noise floor): ")
    lines = [head + ("all within band" if bad.empty else f"{len(bad)} outside")]
    for _, r in result.iterrows():
        lines.append(f"  {r['status']:<10} {r['cell_id']} {r['scenario']} {r['role']}: "
                     f"{r['ratio_now']:.3f} (baseline {r['baseline_ratio']:.3f}, band "
                     f"{r['band_lo']:.3f}..{r['band_hi']:.3f})")
    return "\n".join(lines)


def run_check(comparison: pd.DataFrame, baseline_dir: Path, out: Path | None = None,
              archs: Archs = DEFAULT) -> tuple[bool, str]:
    baseline = load_baseline(baseline_dir)
    result = check(comparison, baseline, archs)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        result.to_csv(out / "regression.csv", index=False)
    return bool((result["status"] == "ok").all()), summarize(result, baseline)


def write_baseline(comparison: pd.DataFrame, noise: pd.DataFrame, run_ids: Sequence[str],
                   baseline_dir: Path, workload: str | None = None,
                   alpha: float = DEFAULT_ALPHA, archs: Archs = DEFAULT) -> Path:
    data = build_baseline(comparison, noise, run_ids, workload, alpha, archs)
    baseline_dir.mkdir(parents=True, exist_ok=True)
    path = baseline_dir / BASELINE_FILE
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return path


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m spark_analysis.regress",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("check", "write"))
    parser.add_argument("runs", nargs="*", type=Path, default=[Path("results/runs")],
                        metavar="RUN_DIR")
    parser.add_argument("--baseline", type=Path, default=DEFAULT_BASELINE)
    parser.add_argument("--workload", default=None, help="which workload (write; default: the"
                        " only one present)")
    parser.add_argument("--alpha", type=float, default=DEFAULT_ALPHA,
                        help="false-alarm rate of the whole check (write; default 0.01)")
    parser.add_argument("--master", default="local[*]")
    parser.add_argument("--out", type=Path, default=None, help="also write regression.csv here")
    # Intermixed: `write --baseline DIR --master URL RUN_DIR...` must work in any order.
    args = parser.parse_intermixed_args(argv)
    try:
        from spark_analysis.job import compute
        from spark_analysis.session import build_session

        analysis = compute(build_session(args.master), args.runs)
        if args.action == "write":
            path = write_baseline(analysis.comparison, analysis.noise,
                                  [r.run_id for r in analysis.runs], args.baseline,
                                  args.workload, args.alpha, analysis.archs)
            print(f"wrote {path}")
            return 0
        ok, text = run_check(analysis.comparison, args.baseline, args.out, analysis.archs)
        print(text)
        return 0 if ok else 1
    except UserError as exc:
        print(f"twinbench: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
