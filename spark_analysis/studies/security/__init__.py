"""The security study: what TLS and SASL cost each architecture (workloads with
``security:``, format 8), secured over plaintext and the architectures at each level.

Layout:

  aggregate.py  Spark pass: per-cell statistics of the workloads that ran secured clusters
  tables.py     secured over plaintext per architecture, DSBS/ZK at every level (Fieller)
  section.py    its report section
  study.py      the Study and its result, SecurityTables (no figures)
"""
