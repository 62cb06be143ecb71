"""Which records.csv rows belong to which study: the row filters the studies share (Spark).

The paper study's tables, figures, comparison and calibration are about the split and
streaming scenarios of closed-loop cells on plaintext clusters only (``paper_only``); every
other kind of session belongs to a study of its own, which finds its rows by the same marks:

* fault sessions: scenario ``faults`` (the faults study reads faults.csv);
* open-loop cells: cell id ending in ``-r<rate>`` or ``-f<percent>`` (the latency study);
* round-trip-time sweeps: cell id ending in ``-rtt<ms>`` (the rtt study);
* secured clusters: ``security`` other than ``none`` (the security study).

Rows whose ``status`` is not ``ok`` (verification failed: loss or reordering) are counted but
left out of every statistic (``ok``).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from spark_analysis.schema import CELL_KEY, PAPER_SCENARIOS

# A cell's statistics are grouped by its key, its architecture and its side (A/A label or *).
GROUP = [*CELL_KEY, "arch", "side"]

# Open-loop cells end their cell id in -r<target rate> (format 3) or -f<percent of the side's
# maximum sustainable rate> (format 4): latency at a chosen load, not the paper's
# how-fast-can-it-go, so they stay out of its tables and go to the latency study instead.
OPEN_LOOP_CELL = r"-[rf][0-9][0-9.e+]*$"

# Cells of a round-trip-time sweep end their cell id in -rtt<ms> (format 6): the paper's
# question on another network, so they go to the rtt study, not the paper's tables.
RTT_CELL = r"-rtt[0-9][0-9.e+]*$"


def plaintext(df: DataFrame) -> Column:
    """Rows of plaintext clusters (secured ones go to the security section alone); a frame
    without the derived column (latency.jsonl) is filtered through its join with records."""
    return F.col("security") == "none" if "security" in df.columns else F.lit(True)


def ours(df: DataFrame) -> Column:
    """Rows our load client made (Kafka's perf tools' go to the clients section alone)."""
    return F.col("client") == "twinbench" if "client" in df.columns else F.lit(True)


def ok() -> Column:
    """Rows that passed verification (an empty status counts as ok)."""
    return F.coalesce(F.col("status"), F.lit("ok")) == "ok"


def paper_only(df: DataFrame) -> DataFrame:
    """The rows of the paper's scenarios on plaintext clusters loaded by our client
    (``faults`` sessions, open-loop cells, round-trip-time sweeps, secured clusters, Kafka's
    perf tools and anything newer left out)."""
    return df.where(F.col("scenario").isin(*PAPER_SCENARIOS)
                    & ~F.col("cell_id").rlike(OPEN_LOOP_CELL)
                    & ~F.col("cell_id").rlike(RTT_CELL) & plaintext(df) & ours(df))
