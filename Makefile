# twinbench: every target sets itself up (virtualenv in .venv, pip packages, Debian packages
# when missing and we are root). `make bench` is the main job; `make test` runs the tests.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.twinbench-installed

.PHONY: setup system-deps kafka-jars test regress regress-selftest regress-accept lint bench bench-zk bench-dsbs bench-raft sim-raft-brokers bench-three-twins bench-three-twins-faults bench-three-twins-metadata bench-exactly-once bench-kafka bench-kafka-faults bench-kafka-metadata bench-kafka-clients perf perf-kafka perf-zk \
        bench-hosts test-hosts \
        perf-gossip perf-metadata-scale perf-delay perf-detection \
        sim-replication sim-raft test-churn nemesis test-scale test-security clean

setup: system-deps $(STAMP) kafka-jars

# Java + ZooKeeper jars (the zk broker's real ZooKeeper) and kcat (interop checks).
system-deps:
	@harness/setup_system.sh

# The pinned Apache Kafka releases (harness/kafka/poms/), resolved from Maven Central into
# .cache/kafka once; a second run finds them there and resolves nothing (docs/real-kafka.md).
kafka-jars: $(STAMP)
	@$(PY) -m harness.kafka.resolve

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@$(PY) -m pip install --quiet --upgrade pip
	@$(PY) -m pip install --quiet -e '.[test]'
	@touch $(STAMP)

test: setup
	@$(PY) -m ruff check .
	@$(PY) -m mypy
	@$(PY) -m pytest -n 2 --dist loadgroup
	@$(MAKE) --no-print-directory regress

# The CI regression (docs/regression.md): this tree's brokers against the base's, on this
# machine, in one run: the regress workload on zk and dsbs from here (head), from BASE (a git
# ref or a directory; default the accepted base, results/baseline/base.json) and with known
# regressions planted (the positive controls), every arm interleaved session by session
# (A B B A). spark_analysis/regress.py then judges head against base per architecture, and each
# control against head: exact coordination counts per 1,000 records (every counter either side
# reports), the brokers' ZooKeeper requests against ZooKeeper's own count, CPU per record and
# records/s, each band set by the spread of the run's own pairs. A control not caught makes the
# run inconclusive, which fails too.
REGRESS_WORKLOAD ?= regress
BASE ?=
# The machine settings every measuring target sets for its duration and restores afterwards
# (`twinbench tune`: guest halt polling on a VM, the performance CPU governor; root, otherwise
# one warning line and the untuned state recorded in the manifest). TUNE= measures untuned.
TUNE ?= --tune

# A failing check is confirmed by a second, independent run: a real regression fails the same
# statistic in both, while a transient disturbance of the machine (seen here: one run in ~20
# with a throughput ratio 6 sd off and nothing else wrong) fails a different one each time, if
# any. Both verdicts are printed.
regress: setup
	@failed=$$(mktemp) && \
	check() { runs=$$(mktemp -d) && \
	  $(PY) -m harness.regression run $(if $(BASE),--base '$(BASE)') \
	    --workload $(REGRESS_WORKLOAD) --out "$$runs" $(TUNE) 2>"$$runs.log" && \
	  $(PY) -m spark_analysis.regress check "$$runs" "$$@"; \
	  rc=$$?; [ $$rc -ne 2 ] || tail -20 "$$runs.log" >&2; \
	  rm -rf "$$runs" "$$runs.log"; return $$rc; } && \
	  { check --failed-out "$$failed" || { echo "regress: confirming with a second, independent" \
	      "run (the check fails only if a statistic that failed fails again)"; \
	      check --confirm "$$failed"; }; }; rc=$$?; rm -f "$$failed"; exit $$rc

# The regression judged where the answer is known: this tree against itself (A/A: no false
# alarm, every control caught; prints the bands), then a busy loop per request in dsbs sized at
# twice the dsbs cost band just measured (caught). About 9 minutes; not part of `make test`.
regress-selftest: setup
	@$(PY) -m tests.support.regress_selftest --workload $(REGRESS_WORKLOAD) $(TUNE)

# Accept REF's costs (default HEAD) as what `make regress` compares with, after a change meant
# to move them: REASON says why (written into results/baseline/base.json; commit it).
REF ?= HEAD
REASON ?=
# REASON reaches the command through the environment, so quotes in it cannot break the line.
regress-accept: export TWINBENCH_ACCEPT_REASON := $(REASON)
regress-accept: export TWINBENCH_ACCEPT_REF := $(REF)
regress-accept: setup
	@$(PY) -m harness.regression accept "$$TWINBENCH_ACCEPT_REF" --reason "$$TWINBENCH_ACCEPT_REASON"

# ruff's lint rules only: the code is laid out by hand to 100 columns, not by `ruff format`.
lint: setup
	@$(PY) -m ruff check .

# The broker against a null sink on the paper's synchronous grid (docs/performance.md).
# PERF_ARGS="--profile DIR": then one more session per cell with py-spy sampling the broker.
perf: setup
	@$(PY) -m harness.bench.perf $(TUNE) $(PERF_ARGS)

# The 3-broker twins against uncoordinated and null-sink ceilings of the same shape (~15 min).
perf-cluster: setup
	@$(PY) -m harness.bench.perf_cluster $(TUNE) $(PERF_ARGS)

# One twinbench broker beside one real Kafka node per pinned release (3.9 and 4.x), the same
# client (librdkafka, then the harness's own) on the paper's synchronous grid, interleaved, 6
# repetitions after a discarded warm-up (docs/performance.md; about 12 min). PERF_ARGS narrows it:
# --releases 3.9.2 --clients librdkafka --cells 32x1,1024x20 --repetitions 7.
perf-kafka: setup
	@$(PY) -m harness.bench.perf_kafka $(TUNE) $(PERF_ARGS)

# What one ZooKeeper request costs the zk broker through kazoo and through the direct session.
perf-zk: setup
	@$(PY) -m harness.bench.perf_zk

# What authenticated gossip costs: DSBS gossip CPU per packet with and without the cluster key.
perf-gossip: setup
	@$(PY) -m harness.bench.perf_gossip

# How long until every surviving DSBS broker declares a SIGKILLed peer dead (the LOCAL preset
# aims at 3 s): tests only check that detection happens; its speed is measured here.
DETECTION_ARGS ?= --preset local --trials 5
perf-detection: setup
	@$(PY) -m harness.bench.detection $(DETECTION_ARGS)

# Metadata beyond one machine: DSBS gossip simulated for 10 .. 1,000+ members with loss, and
# the ZooKeeper side from the counters of a metadata run and perf-zk's per-request costs (so
# it needs `make bench-metadata` and `make perf-zk` first).
perf-metadata-scale: setup
	@$(PY) -m harness.bench.perf_metadata_scale --runs $(RUNS)

# How often DSBS replication loses, duplicates or reorders acknowledged records: three whole
# brokers under seeded fault schedules on a simulated network and clock (harness/sim,
# harness/bench/replication_sim.py; docs/replication.md has the table). SIM_ARGS="--seeds N
# --mix M --preset P --acks A --min-isr I --plant BUG" narrows it; about 10 min at 50 seeds.
SIM_ARGS ?= --seeds 50
sim-replication: setup
	@$(PY) -m harness.bench.replication_sim $(SIM_ARGS)

# Whole Raft twin brokers the same way (the coordinator, the controller and the core's
# replication above the quorum): no acknowledged acks=all record lost, and the metadata clients'
# answers checked (one creation per name, commits and fetches, producer ids). RAFT_BROKERS_SIM_ARGS
# narrows it; about 1 s a scenario on local timers.
RAFT_BROKERS_SIM_ARGS ?= --seeds 300 --mix kill-leader --mix nemesis --preset local
sim-raft-brokers: setup
	@$(PY) -m harness.bench.replication_sim --arch raft $(RAFT_BROKERS_SIM_ARGS)

# The Raft twin's consensus core over thousands of seeded fault schedules (docs/raft-twin.md;
# harness/bench/raft_sim.py). RAFT_SIM_ARGS="--seeds N --first K --steps S"; about 3 min at 5,000.
RAFT_SIM_ARGS ?= --seeds 5000
sim-raft: setup
	@$(PY) -m harness.bench.raft_sim $(RAFT_SIM_ARGS)

# Brokers killed and restarted under load on every replicating architecture: `make test` runs
# three leader kills per architecture; this runs CHURN_ROUNDS (tests/contract/
# test_contract_replication_churn.py prints records acknowledged and lost, failover times).
CHURN_ROUNDS ?= 20
test-churn: setup
	@TWINBENCH_CHURN_ROUNDS=$(CHURN_ROUNDS) $(PY) -m pytest -s -q \
	  tests/contract/test_contract_replication_churn.py

# The nemesis (harness/nemesis): seeded schedules of kills, pauses, restarts and one- and
# two-sided cuts against every replicating architecture under an acks=all producer and a
# committing consumer group; a table of schedules and violations per architecture, and
# results/nemesis/nemesis-<time>.json. NEMESIS_SEEDS=1,2 replays given seeds.
# NEMESIS_WORKLOAD=transactions: a transactional producer and a consume-transform-produce worker
# instead, faults aimed at transaction coordinators too (docs/transactions.md, "Faults").
NEMESIS_RUNS ?= 10
NEMESIS_DURATION ?= 60
NEMESIS_WORKLOAD ?= queue
nemesis: setup
	@$(PY) -m harness.nemesis --workload $(NEMESIS_WORKLOAD) --runs $(NEMESIS_RUNS) \
	  --duration $(NEMESIS_DURATION) \
	  $(if $(NEMESIS_SEEDS),--seeds $(NEMESIS_SEEDS)) $(if $(NEMESIS_ARCH),--arch $(NEMESIS_ARCH))

# Gossip at scale beyond make test's sizes: 1,000 members bootstrapping through one seed on the
# simulated network (make test runs 300; ~2 min of CPU).
test-scale: setup
	@TWINBENCH_SCALE=1 $(PY) -m pytest -q -m scale tests/unit/brokers/dsbs_broker/gossip/test_swim.py

# Every secured listener with every client: kcat with each SASL mechanism on each architecture
# and protocol (make test runs kcat with one mechanism per cluster, rotating).
test-security: setup
	@TWINBENCH_SECURITY_FULL=1 $(PY) -m pytest -q tests/contract/test_contract_security.py

# The experiment (docs/running-experiments.md, "Running the experiment"): WORKLOAD names a
# workloads/*.yaml file (or a path), RUNS is where run logs go. `make bench` runs both
# architectures, then the analysis.
WORKLOAD ?= paper
RUNS ?= results/runs
BENCH_ARGS ?=

bench-zk: setup
	@$(PY) -m harness.cli run --arch zk --workload $(WORKLOAD) --out $(RUNS) $(TUNE) $(BENCH_ARGS)

bench-dsbs: setup
	@$(PY) -m harness.cli run --arch dsbs --workload $(WORKLOAD) --out $(RUNS) $(TUNE) $(BENCH_ARGS)

bench-raft: setup
	@$(PY) -m harness.cli run --arch raft --workload $(WORKLOAD) --out $(RUNS) $(TUNE) $(BENCH_ARGS)

# The decomposition (docs/raft-twin.md): the paper's 32 B cells on zk, raft and dsbs, interleaved,
# then the report with its decomposition table (the external service, then consensus).
# THREE_TWINS_WORKLOAD=three-twins-zk3: the batch-20 cells with a three-server ZooKeeper, so the
# first step compares a replicated external service with the replicated embedded log.
THREE_TWINS_WORKLOAD ?= three-twins
bench-three-twins: setup
	@$(PY) -m harness.cli run --arch zk,raft,dsbs --workload $(THREE_TWINS_WORKLOAD) --out $(RUNS) \
	  $(TUNE) $(BENCH_ARGS)
	@$(MAKE) --no-print-directory analyze

# Faults and metadata on the three twins (docs/raft-twin.md, "Measured"): detection and failover
# at replication factor 3 (root: a network partition among the cases; about 25 min), and topic
# creation alone, in storms and at many partitions (about 10 min); each then the analysis.
bench-three-twins-faults: setup
	@$(PY) -m harness.cli run --arch zk,raft,dsbs --workload three-twins-faults --out $(RUNS) \
	  $(TUNE) $(BENCH_ARGS)
	@$(MAKE) --no-print-directory analyze

bench-three-twins-metadata: setup
	@$(PY) -m harness.cli run --arch zk,raft,dsbs --workload three-twins-metadata --out $(RUNS) \
	  $(TUNE) $(BENCH_ARGS)
	@$(MAKE) --no-print-directory analyze

# The exactly-once study (docs/transactions.md, "The exactly-once study"): transactions of 1, 10
# and 100 batches beside the same work without them, a producer alone and
# consume-transform-produce, on the architectures ARCHS names (the three twins by default),
# interleaved session by session, 5 tries; then the analysis (its Exactly-once section).
bench-exactly-once: ARCHS ?= zk,raft,dsbs
bench-exactly-once: setup
	@$(PY) -m harness.cli run --arch $(ARCHS) --workload exactly-once --out $(RUNS) $(TUNE) \
	  $(BENCH_ARGS)
	@$(MAKE) --no-print-directory analyze

# Real Apache Kafka beside the twins (docs/real-kafka.md): the paper's 32 B x 20 cell under the
# policies all of them apply, on zk, dsbs, raft, Kafka 3.9 on ZooKeeper and on KRaft,
# interleaved; then the analysis (about 8 min): the calibration of RAFT/ZK against KRaft/ZK. KAFKA_WORKLOAD names another workload: kafka-grid is the paper's
# whole grid under the same policies (about 35 min), the Real Kafka section's source;
# kafka-defaults the paper's synchronous grid under Kafka's default policies (offsets committed
# every 5 s; about 12 min), the twins judged against Kafka (docs/performance.md).
KAFKA_WORKLOAD ?= kafka
bench-kafka: setup
	@$(PY) -m harness.cli run --arch zk,dsbs,raft,kafka-zk,kafka-kraft --workload $(KAFKA_WORKLOAD) \
	  --out $(RUNS) $(TUNE) $(BENCH_ARGS)
	@$(MAKE) --no-print-directory analyze

# The fault smoke's schedules on the zk twin and on real Kafka (ZooKeeper and KRaft), about
# 2 min: detection, failover and acknowledged loss beside each other (docs/real-kafka.md).
# KAFKA_FAULTS_WORKLOAD=kafka-faults-rf3: the same at replication factor 3 with the controller
# killed too (about 6 min).
KAFKA_FAULTS_WORKLOAD ?= kafka-faults
bench-kafka-faults: setup
	@$(PY) -m harness.cli run --arch zk,kafka-zk,kafka-kraft --workload $(KAFKA_FAULTS_WORKLOAD) \
	  --out $(RUNS) $(TUNE) $(BENCH_ARGS)

# Metadata on real Kafka beside the twins (docs/real-kafka.md, "Metadata"): topic creation alone
# and in storms, partitions, group churn and a broker joining, every size on fresh clusters of
# all four architectures, 3 tries; then the analysis (about 25 min).
bench-kafka-metadata: setup
	@$(PY) -m harness.cli run --arch zk,dsbs,kafka-zk,kafka-kraft --workload kafka-metadata \
	  --out $(RUNS) $(TUNE) $(BENCH_ARGS)
	@$(MAKE) --no-print-directory analyze

# Two load clients on the same clusters (docs/real-kafka.md, "Two load clients"): ours and
# Kafka's ProducerPerformance/ConsumerPerformance, one side each, interleaved, on the zk twin,
# DSBS and Kafka on KRaft; then the analysis (its "Two load clients" section).
bench-kafka-clients: setup
	@$(PY) -m harness.cli run --arch zk,dsbs,kafka-kraft --workload kafka-clients \
	  --out $(RUNS) $(TUNE) $(BENCH_ARGS)
	@$(MAKE) --no-print-directory analyze

# What the delay line itself adds: latency over bare veth at each rtt, CPU per packet (root).
perf-delay: setup
	@$(PY) -m harness.bench.perf_delay $(PERF_ARGS)

# Both architectures in one run, interleaved session by session (docs/architecture.md,
# "Measuring on a small VM": A B B A, not A then B), so drift on a shared machine hits both
# alike; then the analysis (its own target, below: REPORT and SPARK_MASTER apply here too).
bench: setup
	@$(PY) -m harness.cli run --arch both --workload $(WORKLOAD) --out $(RUNS) $(TUNE) $(BENCH_ARGS)
	@$(MAKE) --no-print-directory analyze

# `make bench` with a named workload of workloads/ (bench-<name> runs <name>.yaml):
#   faults      fault injection (docs/faults.md; root: network namespaces for the partition)
#   faults-rf3  faults at replication factor 3, acks=-1, min.insync.replicas 2: acknowledged
#               loss and failover time per architecture (docs/replication.md)
#   metadata    topic storms, partition counts, group churn, broker join/leave as cost curves
#               (docs/metadata.md)
#   rtt         the DSBS/ZK ratio against the network's round-trip time (docs/rtt.md; root:
#               network namespaces and a delay line)
#   latency     maximum sustainable rates and latency-throughput curves (~1 h)
#   security    what TLS and SASL_SSL cost each architecture: plaintext, TLS and SASL_SSL
#               clusters of both twins, all up at once (docs/security.md)
#   qos         the Kafka + Prometheus paper's QoS table: 100 to 10,000 messages, plaintext
#               and SASL_SSL, the brokers' metrics sampled into the run log (docs/qos.md)
NAMED_BENCHES := faults faults-rf3 metadata rtt latency security qos
.PHONY: $(NAMED_BENCHES:%=bench-%) bench-offsets-cost
$(NAMED_BENCHES:%=bench-%): bench-%: setup
	@$(MAKE) --no-print-directory bench WORKLOAD=$*

# What DSBS's offset guarantee costs (docs/dsbs-metadata.md, "Committed offsets"): dsbs, whose
# commits are acknowledged once a successor coordinator holds them, beside dsbs-lazy-offsets
# (the paper's lazy replication), interleaved session by session in one run, on the replication
# workload (32 B at batch 20, every_fetch commits, replication factor 3).
OFFSETS_COST_WORKLOAD ?= replication
bench-offsets-cost: setup
	@TWINBENCH_ARCHITECTURES=dsbs-lazy-offsets=harness.architectures.variants:DSBS_LAZY_OFFSETS \
	  $(PY) -m harness.cli run --arch dsbs,dsbs-lazy-offsets --workload $(OFFSETS_COST_WORKLOAD) \
	  --out $(RUNS) $(TUNE) $(BENCH_ARGS)

# Several machines (docs/hosts.md): the paper's 32 B batch 20 cell on both twins, with ZooKeeper
# and the brokers on three hosts and the load on a fourth: here the 4-host test layout (network
# namespaces running OpenSSH; root), made for the run and removed after it. HOSTS_WORKLOAD names
# another workload.
HOSTS_WORKLOAD ?= hosts-paper
bench-hosts: setup
	@layout=$$(mktemp -d) && \
	  { $(PY) -m tests.support.sshd --hosts-file $$layout/hosts.yaml >$$layout/layout.log 2>&1 & \
	    pid=$$!; } && trap 'kill $$pid; wait $$pid; rm -rf "$$layout"' EXIT && \
	  until grep -q '^hosts_file=' $$layout/layout.log; do \
	    kill -0 $$pid 2>/dev/null || { cat $$layout/layout.log; exit 1; }; sleep 0.2; done && \
	  $(PY) -m harness.cli run --arch both --workload $(HOSTS_WORKLOAD) \
	    --hosts $$layout/hosts.yaml --out $(RUNS) $(BENCH_ARGS)

# Every multi-host test, not only `make test`'s sample: Ctrl-C, the watchdog, a ZooKeeper
# ensemble on three hosts, `cluster --hosts` with faults, an external cluster from client hosts.
test-hosts: setup
	@TWINBENCH_HOSTS_FULL=1 $(PY) -m pytest tests/integration/test_hosts.py \
	  tests/integration/test_hosts_run.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache .hypothesis results/runs results/report results/perf
	rm -rf results/regress; git worktree prune 2>/dev/null || true
	find . -name __pycache__ -type d -prune -exec rm -rf {} +

# --- analysis ----------------------------------------------------------------------------------
.PHONY: analyze analyze-scale
RUNS ?= results/runs
REPORT ?= results/report
SPARK_MASTER ?= local[*]

# Tables, figures and report.md from every run under $(RUNS); SPARK_MASTER=spark://host:7077
# runs the same job on a cluster.
analyze: setup
	@$(PY) -m harness.cli analyze $(RUNS) --out $(REPORT) --master '$(SPARK_MASTER)'

# How long the analysis takes on 10 million synthetic records.csv rows (a benchmark, not a test).
analyze-scale: setup
	@$(PY) -m spark_analysis.scale_bench --master '$(SPARK_MASTER)'
