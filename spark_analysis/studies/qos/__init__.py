"""The QoS study: the Kafka + Prometheus paper's QoS table (its Table II) from the brokers'
sampled metrics (metrics.csv, format 8), ours beside the paper's printed values.

Layout:

  aggregate.py  Spark pass: first, last and largest sample per session, broker and series
  tables.py     per-session QoS measures, their intervals over tries, the paper's layout
                (spark_analysis/paper_qos.csv beside ours)
  figures.py    qos-<workload>-<scenario>: each measure against the message count
  section.py    its report section
  study.py      the Study and its result, QosTables
"""
