# twinbench: every target sets itself up (virtualenv in .venv, pip packages, Debian packages
# when missing and we are root). `make bench` is the main job; `make test` runs the tests.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.twinbench-installed

.PHONY: setup system-deps test lint bench bench-zk bench-dsbs perf clean

setup: system-deps $(STAMP)

# Java + ZooKeeper jars (the zk broker's real ZooKeeper) and kcat (interop checks).
system-deps:
	@harness/setup_system.sh

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@$(PY) -m pip install --quiet --upgrade pip
	@$(PY) -m pip install --quiet -e '.[test]'
	@touch $(STAMP)

test: setup
	@$(PY) -m ruff check .
	@$(PY) -m pytest

lint: setup
	@$(PY) -m ruff check .
	@$(PY) -m ruff format --check .

perf: setup
	@$(PY) -m harness.perf

# The experiment (README, "Running the experiment"): WORKLOAD names a workloads/*.yaml file (or
# a path), RUNS is where run logs go. `make bench` runs both architectures, then the analysis.
WORKLOAD ?= paper
RUNS ?= results/runs
BENCH_ARGS ?=

bench-zk: setup
	@$(PY) -m harness.cli run --arch zk --workload $(WORKLOAD) --out $(RUNS) $(BENCH_ARGS)

bench-dsbs: setup
	@$(PY) -m harness.cli run --arch dsbs --workload $(WORKLOAD) --out $(RUNS) $(BENCH_ARGS)

bench: setup
	@$(MAKE) --no-print-directory bench-zk bench-dsbs
	@if $(PY) -m harness.cli analyze --help >/dev/null 2>&1; then \
		$(PY) -m harness.cli analyze $(RUNS); \
	else \
		echo "bench: run logs are in $(RUNS); 'twinbench analyze' is not available yet" >&2; \
	fi

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis results/runs results/report results/perf
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
