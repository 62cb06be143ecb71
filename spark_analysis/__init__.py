"""PySpark analysis: run logs -> the paper's tables and figures, with statistics, the fault
sessions' tables and figures, the open-loop latency curves and maximum sustainable rates, the
metadata sessions' cost curves, the ratio against the network's round-trip time, what
security costs each architecture, and the Kafka + Prometheus paper's QoS table from the
brokers' sampled metrics.

Data flows one way: run directories (docs/result-format.md) -> Spark aggregations -> small pandas
tables -> CSV, figures, report.md. Nothing here imports broker or client code.

Each kind of experiment is a study (studies/: one package each, its Spark passes, tables,
figures and report section); the job, the report and the figures loop over the studies'
registry. Imports point down the layout below and never in a circle: a study imports the
shared modules and study.py, never another study, the job, the report or figures.py
(tests/unit/test_import_direction.py).

Layout (one concept per module):

  schema.py       the run log format as explicit Spark schemas; cell, fault-case and metadata
                  keys; supported versions; the paper's scenarios
  archs.py        the architectures shown and how (names, colours, order, the baseline of every
                  ratio), from the manifests' labels; built-in zk/dsbs labels for older runs
  session.py      the SparkSession (master URL, loopback, few shuffle partitions, quiet logs)
  loader.py       find runs, validate manifests/headers (one-line UserErrors), read with schemas;
                  header-only fault files are never handed to Spark
  stats.py        t intervals, Welch's test, Fieller's ratio interval, detectable change
  rows.py         which rows belong to which study: paper_only (the paper's scenarios, closed
                  loop, plaintext), the open-loop and rtt cell marks, verified rows
  order.py        the paper's row order (split before streaming, production first, rps first)
  plotting.py     the figures' style: number format, PNG + SVG pair, subtitle, file-name slugs
  markdown.py     the report's number format, tables and shared phrases (intervals, pairs)
  study.py        the Study protocol: compute(context) -> a result with tables, figures,
                  headline and section; the Context every study computes from
  studies/        one package per study, and the registry (name -> module, in report order):
                  paper, security, qos, latency, faults, metadata, rtt
  analysis.py     Analysis: every study's result (with the properties callers read), the runs
                  and architectures tables
  job.py          compute() (every study), write_tables() and analyze(): the job the CLI,
                  notebook, regression and bench share
  figures.py      every study's figures; redrawing them from the CSVs without Spark
  report.py       report.md: the frame around every study's headline and section
  cli.py          body of `twinbench analyze` (harness/cli.py only parses its arguments)
  regress.py      CI regression: read regression runs (plain CSV, counters.csv included),
                  judge head against base and each control against head, one table per layer
                  (`python -m spark_analysis.regress check RUN_DIR...`)
  regress_layers.py the layers (exact counts, ZooKeeper's own count, CPU cost, throughput):
                  statistics, bands from the run's own pairs, verdicts (pure)
  synth.py        synthetic run directories in the documented format (fixtures, scale bench)
  scale_bench.py  `python -m spark_analysis.scale_bench`: analysis time on 10M records.csv rows
  paper_appendix.csv, paper_qos.csv  the two papers' printed numbers (package data)
"""
