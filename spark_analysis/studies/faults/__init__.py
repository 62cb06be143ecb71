"""The faults study: fault sessions (format 2), paced streaming load while a schedule injects
faults, on every architecture.

Layout:

  aggregate.py  Spark passes over faults.csv, timeline.csv and fault_events.csv
  tables.py     per case x arch mean/sd/n/95% CI of the durations, outcomes (lost,
                duplicates, ...), the baseline beside every other architecture with the ratio
  figures.py    faults-<case>: throughput through each case (fault markers);
                faults-summary: detection / unavailability / group recovery with CIs
  section.py    its report section and Summary line
  study.py      the Study and its result, FaultTables
"""
