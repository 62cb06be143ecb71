"""transactions: what exactly-once costs each architecture (docs/transactions.md, "The
exactly-once study").

A workload's ``transactions`` block makes every session a transactions session (scenario
``transactions``): per record size and batch of its cells, per shape (a producer alone, or
consume-transform-produce) and per transaction size in batches, the records moved in
transactions, and beside each the same unit of work without them, on every architecture
interleaved session by session. Each session's row (transactions.csv) has its records/s,
transactions and commit latencies, and the coordination the timed part took, counted as every
session's is. The analysis side is spark_analysis/studies/transactions.

Layout:
- ``schema.py``   TxnCase, TransactionsPlan: the block, its defaults and its checks
- ``client.py``   one session's clients (confluent-kafka, in a thread): fill, copy or produce,
                  read back, verify (imported when a run needs it)
- ``session.py``  the sessions' plan, how the run runs one, its row
"""

from __future__ import annotations

import dataclasses

from harness.studies.study import Study
from harness.studies.transactions.schema import (
    SCENARIO,
    SHAPES,
    TransactionsPlan,
    TxnCase,
    parse,
)
from twinbench_common.runlog import TRANSACTIONS

__all__ = ["SCENARIO", "SHAPES", "TRANSACTIONS_STUDY", "TransactionsPlan", "TxnCase"]

TRANSACTIONS_STUDY: Study[TransactionsPlan] = Study(
    name="transactions",
    summary="exactly-once: transactions of 1 to N batches beside the same work without them",
    keys=("transactions",),
    parse=parse,
    manifest=lambda plan: {"transactions": None if plan is None
                           else dataclasses.asdict(plan)},
    tables=(TRANSACTIONS,),
    scenario=SCENARIO,
    refuse_external=lambda plan: ("transactions workloads count each cluster's coordination "
                                  "per transaction, which needs a cluster twinbench starts; "
                                  "not --bootstrap"),
    refuse_hosts=lambda plan: ("transactions workloads run their clients in this process; "
                               "not with --hosts"),
    sessions="harness.studies.transactions.session:SESSIONS",
)
