"""The metadata study: metadata at scale (format 5) as cost curves, each case's cost against
its size on every architecture.

Layout:

  aggregate.py  Spark pass: per case x size x arch statistics of every measure
  tables.py     mean/sd/95% CI of every measure, the baseline beside every other architecture
                with the ratio, log-log slopes against the size
  figures.py    metadata-<case>: cost vs size, log-log, 95% CIs
  section.py    its report section and Summary lines
  study.py      the Study and its result, MetadataTables
"""
