"""transactions.csv: the exactly-once study's sessions, one row per try x cell (shape x
transaction size, with or without transactions).

A session either moves its records in transactions of ``txn_batches`` batches (commit latency is
``commit_transaction``'s wall time) or, without transactions, with an idempotent producer that
flushes after as many batches (the same unit of work, ended by ``flush``). Coordination is
counted over the timed part only, so the analysis divides it by ``units``.
"""

from __future__ import annotations

from twinbench_common.runlog.sessions import CASE_SESSION
from twinbench_common.runlog.table import Column, Table, key

# Request counts the brokers served during the session, by Kafka API (BrokerCounters'
# kafka_requests labels): the transaction protocol's and the plain offset commit's.
REQUESTS = ("write_txn_markers", "end_txn", "add_partitions_to_txn", "txn_offset_commit",
            "offset_commit")

TRANSACTIONS = Table(
    name="transactions", file="transactions.csv", kind="csv", version=1,
    # New after format 9: older runs have no such file.
    by_format={}, optional=True,
    row="one try x cell (shape x transaction size x with or without transactions)",
    columns=(
        *CASE_SESSION, key("shape"), key("txn_batches", "int"), key("transactional", "bool"),
        Column("msg_size", "int"), Column("batch", "int"), Column("partitions", "int"),
        Column("records", "long"), Column("wall_s", "double"), Column("rps", "double"),
        Column("units", "long"), Column("transactions", "long"), Column("aborts", "long"),
        Column("offset_commits", "long"),
        Column("commit_p50_ms", "double"), Column("commit_p99_ms", "double"),
        Column("commit_max_ms", "double"), Column("commit_mean_ms", "double"),
        Column("read", "long"), Column("read_s", "double"), Column("duplicates", "long"),
        Column("missing", "long"),
        Column("coord_messages", "long"), Column("coord_bytes", "long"),
        Column("coordination_ops", "long"), Column("broker_cpu_s", "double"),
        Column("service_cpu_s", "double"),
        *(Column(r, "long") for r in REQUESTS),
        Column("status", "string"),
    ),
)
