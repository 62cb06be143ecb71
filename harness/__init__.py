"""The harness: everything that starts, drives and records; brokers never import it.

Layout (packages first; each package's __init__ maps its modules):
- ``architectures/``  the architecture registry: one entry per architecture (its launch,
                      options, services, coordination counters, labels)
- ``services/``       services an architecture's cluster starts first (ZooKeeper)
- ``kafka/``          real Apache Kafka: the pinned releases, resolved from Maven by `make setup`
- ``studies/``        the study registry: each experiment kind's workload keys, checks,
                      run-log tables and, where its sessions are its own, their plan and runner
- ``cluster/``        cluster mechanics: spec, layout, processes, machines, namespaces, fault
                      actions, the control socket, external clusters, certificates, probes
- ``driver/``         `twinbench run`: plan, sessions, the load, counters, rows, the loop
- ``remote/``         `cluster|run --hosts`: the SSH fleet, keepers and load workers on hosts
- ``netdelay/``       round-trip time between network namespaces: a netfilter-queue delay line
- ``bench/``          the one-off benchmarks (`make perf`, `perf-cluster`, `perf-zk` ...) and
                      what they share
- ``sim/``            deterministic simulation of whole broker processes: one event loop per
                      process on a virtual clock, an in-memory network with faults
- ``cli.py``          the ``twinbench`` command (broker, cluster, fault, run, analyze, hosts,
                      tune)
- ``schema.py``       the parsing context of workload files (one-line errors, key checks)
- ``workload.py``     workload files: the core schema; each study reads its own block
- ``runlog.py``       the run-log writer (the format is twinbench_common/runlog)
- ``hosts.py``        hosts files and `twinbench hosts check`; the roles check
- ``conditions.py``   what a measurement depends on besides the code: `twinbench tune`, the
                      conditions snapshot, the background CPU of other processes
- ``prometheus.py``   a real Prometheus scraping a cluster's brokers (``cluster --metrics``)
- ``grafana.py``      the Grafana dashboard of the brokers' metrics, one row per architecture
- ``setup_system.sh`` Debian packages the project needs, the Docker engine, the ZooKeeper image
"""
