"""Variants of a compared architecture that differ in one design choice, registered on demand
(``TWINBENCH_ARCHITECTURES``) to measure that choice side by side in one run; never compared in
``--arch all`` and never the baseline.

* ``DSBS_LAZY_OFFSETS`` (``dsbs-lazy-offsets``): DSBS with the paper's lazy offset replication
  (``offset_commit_acks=0``: a commit is acknowledged on the coordinator's disk alone, and a
  coordinator killed right after it loses it). ``make bench-offsets-cost`` runs it beside
  ``dsbs`` (a commit held by a successor first) on the replication workload: the difference is
  what DSBS pays for not losing committed offsets (docs/dsbs-metadata.md, "Committed offsets").
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from harness.architectures.dsbs import DSBS, DsbsOptions
from harness.architectures.options import knob


@dataclass(frozen=True)
class LazyOffsetsOptions(DsbsOptions):
    offset_commit_acks: int = knob(0, "successor coordinators holding a commit before it is "
                                   "acknowledged (this variant: 0, the paper's lazy "
                                   "replication)", low=0, high=16)


DSBS_LAZY_OFFSETS = dataclasses.replace(
    DSBS, name="dsbs-lazy-offsets", options=LazyOffsetsOptions, compared=False, legacy_keys={},
    labels=dataclasses.replace(DSBS.labels, display_name="DSBS (lazy offsets)",
                               short_name="DSBS-lazy", color="#8C613C", order=5))
