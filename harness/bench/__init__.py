"""The one-off benchmarks: each a `make` target (or ``python -m harness.bench.<name>``) that
measures one thing side by side and prints it, most writing a result file under results/perf.
What they share (the A B B A order of sides, the median and spread of repetitions, the
self-describing result file) is ``common.py``.

Layout:
- ``common.py``              interleaved sides, median and CV, the result file
- ``single.py``              one broker (or null sink) and the synchronous producer, placed
- ``perf.py``                `make perf`: one broker against a null sink; ``--open-loop``: the
                             load client's on-time ceiling (kept for rate searches)
- ``client_ceiling.py``      that ceiling's search (what rate searches measure once per machine)
- ``perf_cluster.py``        `make perf-cluster`: the 3-broker twins against uncoordinated and
                             null-sink ceilings of the same shape
- ``perf_zk.py``             `make perf-zk`: one ZooKeeper request through kazoo and the direct
                             session
- ``perf_gossip.py``         `make perf-gossip`: DSBS gossip CPU per packet with and without the
                             cluster key
- ``perf_security.py``       records/s and broker CPU per record under two listener protocols
- ``perf_delay.py``          `make perf-delay`: what the delay line adds (latency, CPU per packet)
- ``perf_metadata_scale.py`` `make perf-metadata-scale`: metadata beyond one machine (DSBS gossip
                             simulated, ZooKeeper's fan-out from measured costs)
- ``create_latency.py``      CreateTopics latency (at the arbiter / forwarded); its creation path
                             is the metadata study's topic storm too
- ``detection.py``           how fast DSBS survivors declare a killed broker dead
- ``replication_sim.py``     `make sim-replication`: whole DSBS brokers under fault schedules,
                             simulated (harness/sim)
- ``code_metrics.py``        module and function sizes, architecture literals
"""
