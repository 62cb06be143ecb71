"""The Markdown report: every study's section in one file a reader can skim top-down.

This is only the frame - title, the Summary of every study's headline, the notes on the inputs,
the runs, every study's section in registry order (spark_analysis/studies/), the figures and
the method; what each section says is its study's (studies/<name>/section.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from spark_analysis import studies
from spark_analysis.analysis import Analysis, runs_table
from spark_analysis.markdown import md_table

REPORT = "report.md"

METHOD = """\
- Replicate unit: one try of one run (a records.csv row). Several runs of one architecture pool
  their tries; A/A runs (labels `A`/`B`) are kept apart and only feed the calibration.
- Mean, standard deviation and n per cell are Spark aggregations over the run logs; rows whose
  status is not `ok` (verification failed) are excluded and counted (`*_failed_rows`).
- 95% CI of a mean: mean ± t(0.975, n-1)·sd/√n.
- DSBS/ZK ratio: ratio of the means; its 95% interval by **Fieller's theorem** (unequal
  variances, Welch-Satterthwaite degrees of freedom), not the delta method, because with 4 tries
  the ratio is skewed. An infinite bound means the ZK mean itself is not well determined.
- Test: Welch's two-sided t-test on the tries. 4 tries a side is low-powered: "not significant"
  means the difference is below what the runs can resolve (`detectable_change` in
  comparison.csv: the change a test would find with 80% power), not that there is none.
  Benjamini-Hochberg q-values (per metric) account for testing many cells at once. The paper
  never tested its numbers; its p-value is computed here from the four tries it printed.
- "kbps" is the paper's name for payload kilobytes per second (rps x message size / 1000), not
  kilobits.
- Latency percentiles per cell: the mean over tries of each try's percentile (the run log's
  columns) and the largest maximum; `paper-latency-distribution` merges the HDR histograms of
  all tries instead.
- Coordination cost: requests (ZooKeeper) or gossip datagrams (DSBS) per 1,000 produced
  messages, summed over the tries; CPU seconds are means per try.
- Fault sessions (scenario `faults`) are kept out of the paper's tables and of its figures
  (fig01-fig12, `paper-*`): paced load through a fault measures something else. Their
  replicate unit is one session (a try of one case); failed sessions (lost > 0) stay in the
  timing statistics, because their timings are as real as any other's, and are flagged in the
  outcomes instead.
"""


def write_report(analysis: Analysis, out: Path, figures: Sequence[Path]) -> Path:
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    versus = " vs ".join(a.display_name for a in analysis.archs)
    shown = [(s, analysis.results[s.name]) for s in studies.every() if s.name in analysis.results]
    parts = [
        f"# twinbench analysis: {versus}\n",
        f"Generated {now} from {len(analysis.runs)} runs. Every table below is also a CSV in "
        "this directory.\n",
        "## Summary\n", "".join(result.headline() for _, result in shown),
    ]
    if analysis.notes:
        parts += ["**Notes on the inputs**\n", "\n".join(f"- {n}" for n in analysis.notes) + "\n"]
    parts += ["## Runs\n", md_table(runs_table(analysis.runs),
                                     ["run_id", "arch", "label", "workload", "incomplete",
                                      "failed_cells", "git_commit", "cpu_model", "policies"])]
    for study, result in shown:
        parts += [f"## {study.title}\n", result.section()]
    pngs = [p for p in figures if p.suffix == ".png"]
    parts.append("## Figures\n")
    if pngs:
        parts += [f"![{p.stem}]({p.name})\n" for p in pngs]
    else:
        parts.append("_(figures not drawn)_\n")
    parts += ["## Method\n", METHOD]
    path = out / REPORT
    path.write_text("\n".join(parts), encoding="utf-8")
    return path
