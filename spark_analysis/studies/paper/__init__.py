"""The paper study: the DSBS paper's experiments (split and streaming scenarios, closed loop,
plaintext clusters) on our twins, with the statistics the paper does not give.

Layout:

  aggregate.py  Spark passes over the paper's rows: cell mean/sd/n, per-try values,
                coordination cost, latency histograms
  printed.py    the paper's own appendix numbers (spark_analysis/paper_appendix.csv), its
                ratios and the p-values it never reported
  tables.py     appendix tables in the paper's layout, every architecture beside the baseline,
                A/A calibration and noise floor, latency percentiles and distribution,
                coordination cost
  figures.py    fig01-fig12 (the paper's figures), paper-ratio-vs-policy,
                paper-latency-distribution, paper-coordination-cost
  section.py    its report section and Summary lines
  study.py      the Study (compute, from_tables) and its result, PaperTables
"""
