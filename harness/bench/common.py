"""What every benchmark of this package does the same way: the order of its sides, the
statistics of its repetitions, and its result file.

* Sides alternate by repetition (``interleaved``): A B on even repetitions, B A on odd ones
  (A B B A ...), so drift on a shared machine lands on every side alike and no side always
  runs first (docs/architecture.md, "Measuring on a small VM").
* Repetitions are summarised by their median, with the coefficient of variation beside it
  (``spread``): the median is robust to the odd disturbed repetition a 2-core VM produces.
* A result file (``write_result``) is self-describing, as pyperf's are: a kind and a format
  version, the configuration, where the processes ran, the machine's conditions, Python and
  the CPU, then the benchmark's own rows and samples, under results/perf/<prefix>-<time>.json.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

RESULTS = Path("results/perf")


def interleaved(sides: Sequence[T], repetition: int) -> list[T]:
    """The order of ``sides`` in ``repetition`` (0-based): as given, then reversed, in turn."""
    return list(sides) if repetition % 2 == 0 else list(sides)[::-1]


def spread(values: Iterable[float]) -> tuple[float, float | None]:
    """(median, coefficient of variation) of repetitions; the CV is None for one value."""
    xs = list(values)
    median = statistics.median(xs)
    mean = statistics.fmean(xs)
    cv = statistics.stdev(xs) / mean if len(xs) > 1 and mean > 0 else None
    return median, cv


def write_result(out_dir: Path, prefix: str, kind: str, *, format_version: int,
                 config: Mapping[str, Any], body: Mapping[str, Any],
                 placement: Mapping[str, Any] | None = None,
                 conditions: Mapping[str, Any] | None = None,
                 started: float | None = None) -> Path:
    """Write ``<out_dir>/<prefix>-<UTC time>.json`` and return its path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(started))
    path = out_dir / f"{prefix}-{stamp}.json"
    document = {
        "format_version": format_version,
        "kind": kind,
        "config": {k: str(v) if isinstance(v, Path) else v for k, v in config.items()},
        "placement": dict(placement) if placement is not None else None,
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
        "machine": platform.machine(),
        "conditions": dict(conditions) if conditions is not None else None,
        **body,
    }
    path.write_text(json.dumps(document, indent=2))
    return path
