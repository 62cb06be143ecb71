"""PySpark analysis: run logs -> the paper's tables and figures, with statistics, the fault
sessions' tables and figures, the open-loop latency curves and maximum sustainable rates, the
metadata sessions' cost curves, the ratio against the network's round-trip time, what
security costs each architecture, and the Kafka + Prometheus paper's QoS table from the
brokers' sampled metrics.

Data flows one way: run directories (docs/result-format.md) -> Spark aggregations -> small pandas
tables -> CSV, figures, report.md. Nothing here imports broker or client code.

Layout (one concept per module):

  schema.py       the run log format (1 to 6) as explicit Spark schemas; cell, fault-case and
                  metadata keys; supported versions; the paper's scenarios
  archs.py        the architectures shown and how (names, colours, order, the baseline of every
                  ratio), from the manifests' labels; built-in zk/dsbs labels for older runs
  session.py      the SparkSession (master URL, loopback, few shuffle partitions, quiet logs)
  loader.py       find runs, validate manifests/headers (one-line UserErrors), read with schemas;
                  header-only fault files are never handed to Spark
  aggregate.py    every Spark aggregation (cell mean/sd/n, per-try values, latency, coordination;
                  paper_only keeps the `faults` scenario, open-loop cells and secured clusters
                  out of them; fault sessions, timeline, events; open-loop rows; metadata
                  sessions per case x size; secured workloads' cells; metric spans per session)
  stats.py        t intervals, Welch's test, Fieller's ratio interval, detectable change
  paper.py        the DSBS paper's appendix numbers (paper_appendix.csv), its ratios and p-values
  tables.py       paper-layout appendix tables, ZK-vs-DSBS comparison, A/A noise floor, latency
  fault_tables.py fault sessions: per case x arch mean/sd/n/95% CI of the durations, outcomes
                  (lost, duplicates, ...), ZK beside DSBS with the ratio
  metadata_tables.py metadata sessions: per case x size x arch mean/sd/95% CI of every
                  measure, ZK beside DSBS with the ratio, log-log slopes against the size
  figures.py      fig01-fig12 (the paper's figures) + fig13 ratio vs policy, fig14 latency
                  distribution, fig15 coordination cost; PNG and SVG
  fault_figures.py fig16 throughput through each fault case (ZK | DSBS, fault markers), fig17
                  detection / unavailability / group recovery with CIs
  latency_tables.py open-loop cells: latency at each rate (mean p50/p99 with CIs), maximum
                  sustainable rates over tries with CIs and the ratio to the baseline
  latency_figures.py fig18 latency-throughput curves (p50/p99 vs achieved rate, log-log)
  metadata_figures.py fig19 per metadata case: cost vs size, log-log, ZK and DSBS, 95% CIs
  security_tables.py workloads with secured clusters: secured over plaintext per architecture,
                  DSBS/ZK at every security level (Fieller intervals)
  qos_tables.py   sampled metrics (metrics.csv): per-session QoS measures, their intervals,
                  the Kafka + Prometheus paper's Table II layout (paper_qos.csv beside ours)
  qos_figures.py  fig21: Table II's measures vs message count, ours and the paper's
  rtt_tables.py   round-trip-time sweeps (format 6): records/s per rtt, DSBS/ZK with Fieller
                  intervals, and the model (round trips per client from counters.csv x the
                  time the delay line held) that predicts them, with its limit
  rtt_figures.py  fig20 per sweep: the ratio against rtt, measured and modelled
  report.py       report.md
  job.py          compute() and analyze(): the job the CLI, notebook, regression and bench share
  cli.py          body of `twinbench analyze` (harness/cli.py only parses its arguments)
  regress.py      CI regression: read regression runs (plain CSV, counters.csv included),
                  baseline write/check, one table per layer
                  (`python -m spark_analysis.regress write|check RUN_DIR...`)
  regress_layers.py the layers (exact counts, CPU cost, pooled throughput): statistics, bands
                  from the calibration runs' spread, verdicts (pure)
  synth.py        synthetic run directories in the documented format (fixtures, scale bench)
  scale_bench.py  `python -m spark_analysis.scale_bench`: analysis time on 10M records.csv rows
"""
