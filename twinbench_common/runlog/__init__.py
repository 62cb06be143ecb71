"""The run-log format, defined once: every file of a run directory and its versions.

The harness writes run directories and the analysis reads them; neither has a copy of the
format. Each table is one module here, declaring its columns with their types and the table
version that added them (``table.py`` says how); the manifest records each table's version
(``manifest.py``). docs/result-format.md explains the columns, and a test holds it to these
declarations.

Layout:
- ``table.py``          ``Column`` and ``Table``: a declaration, its versions, old files' columns
- ``sessions.py``       the columns that name a session, shared by tables of one kind
- ``manifest.py``       manifest keys, the fixed global format_version 9, each table's version
- ``records.py``        records.csv: one row per try x cell x scenario x role
- ``coordination.py``   coordination.csv: coordination cost per try x cell x scenario
- ``latency.py``        latency.jsonl: HDR histograms
- ``counters.py``       counters.csv: every counter's increase (long format)
- ``faults.py``, ``fault_events.py``, ``fault_partitions.py``, ``timeline.py``   the fault
  study's files
- ``series.py``, ``rate_search.py``, ``max_rate.py``    the open-loop study's files
- ``metadata.py``       metadata.csv: the metadata study's sessions
- ``metrics.py``        metrics.csv: the brokers' sampled Prometheus metrics
- ``transactions.py``   transactions.csv: the exactly-once study's sessions
"""

from __future__ import annotations

from twinbench_common.runlog.coordination import COORDINATION
from twinbench_common.runlog.counters import COUNTERS
from twinbench_common.runlog.fault_events import FAULT_EVENTS
from twinbench_common.runlog.fault_partitions import FAULT_PARTITIONS
from twinbench_common.runlog.faults import FAULTS
from twinbench_common.runlog.latency import LATENCY
from twinbench_common.runlog.max_rate import MAX_RATE
from twinbench_common.runlog.metadata import METADATA
from twinbench_common.runlog.metrics import METRICS
from twinbench_common.runlog.rate_search import RATE_SEARCH
from twinbench_common.runlog.records import RECORDS
from twinbench_common.runlog.series import SERIES
from twinbench_common.runlog.table import Column, Table
from twinbench_common.runlog.timeline import TIMELINE
from twinbench_common.runlog.transactions import TRANSACTIONS

__all__ = [
    "COORDINATION", "COUNTERS", "FAULTS", "FAULT_EVENTS", "FAULT_PARTITIONS", "LATENCY",
    "MAX_RATE", "METADATA", "METRICS", "RATE_SEARCH", "RECORDS", "SERIES", "TABLES", "TIMELINE",
    "TRANSACTIONS", "Column", "Table", "by_file", "by_name",
]

# Every table a run directory may hold, in the order the harness creates them.
TABLES: tuple[Table, ...] = (
    RECORDS, COORDINATION, LATENCY, FAULTS, FAULT_EVENTS, FAULT_PARTITIONS, TIMELINE, COUNTERS,
    SERIES, RATE_SEARCH, MAX_RATE, METADATA, METRICS, TRANSACTIONS,
)

_BY_NAME = {t.name: t for t in TABLES}
_BY_FILE = {t.file: t for t in TABLES}


def by_name(name: str) -> Table:
    return _BY_NAME[name]


def by_file(file: str) -> Table:
    return _BY_FILE[file]
