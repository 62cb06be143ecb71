"""``twinbench run``: drive a workload file against one architecture and write its run logs.

Layout (one concept per module; imports point down the list)::

    runner.py     run(): clusters up and down, the session loop, rate searches, Ctrl-C, exit
                  status; what a session kind may ask of the run (RunState)
    kinds.py      session kinds: a study whose sessions replace the paper's (faults, metadata)
                  plans and runs them; found through the study registry
    progress.py   rich progress (sessions done / total, current cell, ETA) and the summary table
    rows.py       a session's results -> records.csv / coordination.csv / counters.csv /
                  latency.jsonl / series.csv rows
    session.py    one session: producers and consumers (split, streaming or time-bounded
                  open loop with its per-second series) on every part of the load, merged;
                  verification
    load.py       the load in parts: the in-process part (every client of a local run, or a
                  load worker's share on a client host), what a part is told and returns
                  (JSON forms), Load (the admin client and the parts)
    counters.py   coordination cost readings: services' counters, broker counters (SIGUSR1),
                  CPU; the generic coordination columns
    placement.py  CPU pinning of the load client vs the brokers and services
    plan.py       pure: workload -> sides (run logs), cells, the paper's sessions, cluster
                  epochs, partition assignment

The workload schema is ``harness.workload`` (the studies' blocks: ``harness.studies``); the run
log writer is ``harness.runlog``.
"""

from harness.driver.runner import RunOptions, RunOutcome, run

__all__ = ["RunOptions", "RunOutcome", "run"]
