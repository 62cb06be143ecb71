"""``twinbench run``: drive a workload file against one architecture and write its run logs.

Layout (one concept per module; imports point down the list)::

    runner.py     run(): clusters up and down, the session loop, Ctrl-C, exit status
    progress.py   rich progress (sessions done / total, current cell, ETA) and the summary table
    rows.py       a session's results -> records.csv / coordination.csv / counters.csv /
                  latency.jsonl / series.csv / metadata.csv rows (metrics.csv: metrics.py)
    searches.py   maximum sustainable rate searches: a step's verdict (kept, behind, backlog,
                  lost), rate_search.csv / max_rate.csv rows
    faults.py     one fault session: paced load, the fault schedule, detection, rejoin, gaps,
                  group recovery, loss
    metadata.py   one metadata session on fresh clusters: a topic storm, one topic of many
                  partitions, group churn, a broker joining and leaving; convergence on every
                  broker, coordination messages, Metadata time, broker memory, idle traffic
    session.py    one session: producers and consumers (split, streaming or time-bounded
                  open loop with its per-second series) on every part of the load, merged;
                  verification
    load.py       the load in parts: the in-process part (every client of a local run, or a
                  load worker's share on a client host), what a part is told and returns
                  (JSON forms), Load (the admin client and the parts)
    counters.py   coordination cost readings: ZooKeeper mntr, broker counters (SIGUSR1), CPU
    metrics.py    metrics: true: every broker's Prometheus endpoint (and ZooKeeper's CPU)
                  sampled through a session into metrics.csv
    placement.py  CPU pinning of the load client vs the brokers and ZooKeeper
    plan.py       pure: workload -> sides (run logs), cells, sessions, cluster epochs,
                  partition assignment

The workload schema is ``harness.workload``; the run log writer is ``harness.runlog``.
"""

from harness.driver.runner import RunOptions, RunOutcome, run

__all__ = ["RunOptions", "RunOutcome", "run"]
