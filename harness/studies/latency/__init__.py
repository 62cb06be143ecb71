"""latency: each side's maximum sustainable rate, and latency at fractions of it.

``rate_search`` steps a search per side, base cell and try before the epoch's sessions (each
step a time-bounded open-loop streaming session), the sides' steps alternating like sessions;
``rate_fractions`` then runs sessions at fractions of each side's maximum (docs/latency.md).
Open-loop load at fixed rates (``rate``) is the core's and needs no study. The analysis side is
spark_analysis/studies/latency.

Layout:
- ``schema.py``   RateSearchPlan, Latency: the keys, the load client's ceiling
- ``search.py``   RateSearch, RateSearcher: the search itself (sans-IO: ramp, then bisect)
- ``steps.py``    a step's verdict and rows, the mean maximum (imported by the runner)
- ``ceiling.py``  the load client's ceiling on this machine: measured once, kept, recorded
"""

from __future__ import annotations

import dataclasses

from harness.studies.latency.schema import CLIENT_CEILING_RPS, Latency, RateSearchPlan, parse
from harness.studies.study import Study
from twinbench_common.runlog import MAX_RATE, RATE_SEARCH

__all__ = ["CLIENT_CEILING_RPS", "LATENCY_STUDY", "Latency", "RateSearchPlan"]

LATENCY_STUDY: Study[Latency] = Study(
    name="latency",
    summary="maximum sustainable rates searched per side, then latency at fractions of them",
    keys=("rate_search", "rate_fractions"),
    parse=parse,
    manifest=lambda config: {
        "rate_search": None if config is None else dataclasses.asdict(config.search),
        "rate_fractions": [] if config is None else list(config.fractions)},
    tables=(RATE_SEARCH, MAX_RATE),
)
