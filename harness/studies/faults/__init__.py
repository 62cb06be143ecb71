"""faults: what each architecture does when a broker, the controller, the group coordinator or
a service goes away, under paced streaming load.

A workload's ``faults`` block makes every session a fault session (scenario ``faults``): the
cases' schedules run under load paced at ``faults.rate`` while the driver measures detection,
rejoin, unavailability, group recovery and loss (docs/faults.md). The analysis side is
spark_analysis/studies/faults.

Layout:
- ``schema.py``   FaultStep, FaultCase, FaultPlan: the block, its defaults and checks
- ``session.py``  one fault session (load, monitor, probe group, schedule), its rows, the
                  sessions' plan and how the run runs one (imported when a run needs it)
"""

from __future__ import annotations

import dataclasses

from harness.studies.faults.schema import SCENARIO, FaultCase, FaultPlan, FaultStep, parse
from harness.studies.study import Study
from twinbench_common.runlog import FAULT_EVENTS, FAULT_PARTITIONS, FAULTS, TIMELINE

__all__ = ["FAULT_STUDY", "SCENARIO", "FaultCase", "FaultPlan", "FaultStep"]

FAULT_STUDY: Study[FaultPlan] = Study(
    name="faults",
    summary="faults injected under paced load: detection, unavailability, recovery, loss",
    keys=("faults",),
    parse=parse,
    manifest=lambda plan: {"faults": None if plan is None else dataclasses.asdict(plan)},
    tables=(FAULTS, FAULT_EVENTS, FAULT_PARTITIONS, TIMELINE),
    scenario=SCENARIO,
    refuse_external=lambda plan: ("fault workloads need a cluster twinbench starts (it kills "
                                  "and restarts its brokers); not --bootstrap"),
    refuse_hosts=lambda plan: ("fault workloads run on this machine only (they kill, pause "
                               "and partition local processes); not with --hosts"),
    sessions="harness.studies.faults.session:SESSIONS",
)
