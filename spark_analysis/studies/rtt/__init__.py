"""The rtt study: the DSBS/ZK ratio against the network's round-trip time (format 6), measured
and predicted by a model of round trips per client.

Layout:

  aggregate.py  the sweeps' rows (Spark: records.csv with coordination.csv's delay-line
                columns) and their sessions' counters (counters.csv)
  tables.py     round trips per client, records/s per rtt, DSBS/ZK with Fieller intervals, the
                model's prediction and its limit
  figures.py    rtt-<point>-<policies>: the ratio against rtt, measured and modelled
  section.py    its report section and Summary lines
  study.py      the Study and its result, RttTables
"""
