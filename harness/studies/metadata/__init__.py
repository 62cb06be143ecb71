"""metadata: what metadata costs each architecture as it grows: topic storms, partition
counts, group churn, brokers joining and leaving.

A workload's ``metadata`` block makes every session a metadata session (scenario
``metadata``): one case at one size on fresh clusters, timed until every broker agrees, with
the coordination messages, memory and idle traffic it took (docs/metadata.md). The analysis
side is spark_analysis/studies/metadata.

Layout:
- ``schema.py``   MetadataCase, MetadataPlan: the block, the machine's limits, the checks
- ``session.py``  one metadata session per kind, its row, the sessions' plan and how the run
                  runs one (imported when a run needs it)
"""

from __future__ import annotations

import dataclasses

from harness.studies.metadata.schema import (
    KINDS,
    SCENARIO,
    MetadataCase,
    MetadataPlan,
    broker_args,
    parse,
)
from harness.studies.study import Study
from twinbench_common.runlog import METADATA

__all__ = ["KINDS", "METADATA_STUDY", "SCENARIO", "MetadataCase", "MetadataPlan"]

METADATA_STUDY: Study[MetadataPlan] = Study(
    name="metadata",
    summary="topic storms, partition counts, group churn, broker join/leave as cost curves",
    keys=("metadata",),
    parse=parse,
    manifest=lambda plan: {"metadata": None if plan is None else dataclasses.asdict(plan)},
    tables=(METADATA,),
    scenario=SCENARIO,
    refuse_external=lambda plan: ("metadata workloads need clusters twinbench starts (fresh "
                                  "ones per session, their brokers' counters and memory); not "
                                  "--bootstrap"),
    refuse_hosts=lambda plan: "metadata workloads run on this machine only; not with --hosts",
    broker_args=broker_args,
    sessions="harness.studies.metadata.session:SESSIONS",
)
