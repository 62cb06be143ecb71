"""The harness: everything that starts, drives and records; brokers never import it.

Layout:
- ``cli.py``          the ``twinbench`` command (broker, cluster, fault, run, analyze, hosts, tune)
- ``processes.py``    child processes: start, wait for a readiness line or probe, stop by
                      PID, the atexit safety net
- ``kafka_probe.py``  a blocking Kafka-protocol probe for readiness checks and tests
- ``client_security.py`` a client's side of a TLS/SASL listener: connect (TLS, then SASL),
                      and the same settings as librdkafka properties
- ``zookeeper/``      find or start a real ZooKeeper (user address, jars, testcontainers);
                      its __init__ maps the modules
- ``architectures.py`` the registry: one entry per twin (launch, services, counters, labels)
- ``cluster.py``      ProcessCluster: start/stop one architecture's broker processes, and faults
- ``faults.py``       the fault vocabulary (kill, pause, partition, ...) and what each one does
- ``control.py``      how ``twinbench fault`` reaches a running cluster: state file, Unix socket
- ``external.py``     `twinbench run --bootstrap`: a cluster twinbench did not start (probe,
                      client settings, what is not measured)
- ``hosts.py``        hosts files (YAML) and `twinbench hosts check`: SSH login, version,
                      clock offset per host (asyncssh); the roles check
- ``machines.py``     where a process runs and its files are: this machine (LocalMachine) or
                      a host (harness/remote/); ProcessCluster and ZooKeeper place processes
                      on machines of a Layout
- ``remote/``         `cluster|run --hosts`: the SSH fleet, keepers and load workers on the
                      hosts (its __init__ maps the modules)
- ``conditions.py``   what a measurement depends on besides the code: `twinbench tune` (guest
                      halt polling, CPU governor), the conditions snapshot of manifests, and
                      the background CPU other processes took during a session
- ``netns.py``        one network namespace per broker (``--network netns``), for partitions
- ``netdelay/``       round-trip time between those namespaces (workload ``rtt_ms``,
                      ``cluster --rtt-ms``): a netfilter-queue delay line; its __init__ maps it
- ``code_metrics.py`` module and function sizes, architecture literals (the architecture
                      pass's figures)
- ``perf.py``         `make perf`: the broker against a null sink, side by side; ``--open-loop``:
                      the load client's on-time ceiling against the null sink
- ``rate_search.py``  the highest rate kept: ramp, then bisection (sans-IO)
- ``perf_cluster.py`` `make perf-cluster`: the 3-broker twins against uncoordinated and
                      null-sink ceilings of the same shape, interleaved
- ``perf_gossip.py`` `make perf-gossip`: DSBS gossip CPU per packet with and without the key
- ``perf_zk.py``      `make perf-zk`: one ZooKeeper request through kazoo and the direct session
- ``detection.py``    benchmark: how fast DSBS survivors declare a killed broker dead
- ``create_latency.py`` benchmark: CreateTopics latency (DSBS: at the arbiter / forwarded);
                      its creation path is the metadata scenarios' topic storm too
- ``perf_metadata_scale.py`` `make perf-metadata-scale`: metadata beyond one machine (DSBS
                      gossip simulated for many members; ZooKeeper's watch fan-out from
                      measured counters and per-request costs)
- ``workload.py``, ``runlog.py``, ``driver/``  `twinbench run` (see driver/__init__.py)
- ``certs.py``        throwaway CA, server certificate and SASL users for a run (cryptography);
                     the security levels (none, tls, sasl_ssl) and their cluster settings
- ``perf_security.py`` benchmark: records/s with PLAINTEXT and SASL_SSL listeners, per twin
- ``perf_delay.py``   `make perf-delay`: what the delay line adds (latency over bare veth, CPU
                      per packet)
- ``prometheus.py``   a real Prometheus scraping a cluster's brokers (``cluster --metrics``)
- ``grafana.py``      the Grafana dashboard of the brokers' metrics, one row per architecture
- ``setup_system.sh`` Debian packages the project needs (java, zookeeper, kcat, iptables,
                      prometheus, docker.io, debootstrap), the Docker engine, the ZooKeeper image
"""
