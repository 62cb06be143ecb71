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

bench-zk: setup
	@echo "bench-zk: the workload driver (issue 5) has not landed yet" >&2; exit 1

bench-dsbs: setup
	@echo "bench-dsbs: the workload driver (issue 5) has not landed yet" >&2; exit 1

bench: setup
	@echo "bench: the workload driver (issue 5) has not landed yet; 'make perf' runs today" >&2; exit 1

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis results/runs results/report results/perf
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
