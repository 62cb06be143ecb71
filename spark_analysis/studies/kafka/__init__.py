"""The Real Kafka study: Apache Kafka on ZooKeeper and on KRaft beside the twins, on the same
load, cells and statistics (workloads that name ``kafka-zk`` or ``kafka-kraft``;
docs/real-kafka.md). It answers the two questions users ask first: how close does the zk twin
stand to Kafka on ZooKeeper (the fidelity table), and how does DSBS's step from ZooKeeper
compare with Kafka's own step from ZooKeeper to KRaft (the decomposition).

Layout:

  aggregate.py  Spark passes: records/s per cell and architecture, coordination and CPU per
                1,000 records, in the workloads where real Kafka ran
  tables.py     the four-architecture table, the two steps (KRaft/ZK, DSBS/ZK) and the
                fidelity table (zk twin vs Kafka on ZooKeeper)
  figures.py    kafka-four: records/s of every architecture per cell, scenario and role
  section.py    its report section
  study.py      the Study and its result, KafkaTables
"""
