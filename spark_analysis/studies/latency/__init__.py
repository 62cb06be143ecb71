"""The latency study: latency at a given load (open-loop sessions, formats 3 and 4) and the
maximum sustainable rates of rate searches.

Layout:

  aggregate.py  Spark pass: the open-loop rows of records.csv
  tables.py     latency at each rate (mean p50/p99 with CIs), maximum sustainable rates over
                tries with CIs and the ratio to the baseline
  figures.py    latency-<cell>: latency-throughput curves (p50/p99 vs achieved rate, log-log)
  section.py    its report section
  study.py      the Study and its result, LatencyTables
"""
