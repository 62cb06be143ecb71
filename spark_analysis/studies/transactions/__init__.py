"""The exactly-once study: what transactions cost each architecture (workloads with
``transactions:``; its run-log table transactions.csv), each transaction size beside the same
work without transactions.

Layout:

  aggregate.py  the one Spark step: transactions.csv's ok rows of unlabelled runs, to pandas
  tables.py     per-session costs per transaction, mean/sd/95% CI over tries, records/s in
                transactions over records/s without (Fieller)
  section.py    its report section (a table per architecture) and Summary lines
  study.py      the Study and its result, TransactionsTables (no figures)
"""
