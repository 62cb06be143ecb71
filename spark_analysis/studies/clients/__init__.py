"""The clients study: our load client beside Kafka's own perf tools on the same cluster and
cell (workloads with ``client: [twinbench, kafka-perf]``; harness/driver/kafka_perf.py), so
any bias of our Python client shows.

Layout:

  aggregate.py  Spark pass: per-cell statistics of both clients' rows, in the workloads that ran
                the tools
  tables.py     the tools over our client per cell and architecture (Fieller, Welch)
  section.py    its report section
  study.py      the Study and its result, ClientsTables (no figures)
"""
