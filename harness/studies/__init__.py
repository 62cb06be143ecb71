"""The studies a workload may run beyond the paper's sessions, by name: one registry line
each.

A study is a package here with one entry (harness/studies/study.py says what an entry
answers); the workload parser reads each study's keys through its entry, a run asks the
entries what a cluster twinbench did not start or hosts cannot do, and a study whose sessions
replace the paper's names its session plan and runner. Adding a study is its package plus one
line here (and its analysis side, spark_analysis/studies); docs/architecture.md has the recipe.

Layout:
- ``study.py``     Study: the entry
- ``faults/``      fault injection under paced load (its own sessions)
- ``metadata/``    metadata scenarios on fresh clusters (its own sessions)
- ``latency/``     maximum sustainable rate searches, sessions at fractions of them
- ``rtt/``         the round-trip-time sweep (netns, a delay line)
- ``security/``    the listener-security sweep
- ``qos/``         the brokers' metrics sampled during sessions
- ``transactions/`` exactly-once: transactions beside the same work without (its own sessions)
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Iterator
from typing import Any

from brokers.core.errors import UserError
from harness.studies.study import Study

# Every study by name -> "module:attribute" of its entry, in the order they are parsed.
REGISTRY: dict[str, str] = {
    "faults": "harness.studies.faults:FAULT_STUDY",
    "metadata": "harness.studies.metadata:METADATA_STUDY",
    "latency": "harness.studies.latency:LATENCY_STUDY",
    "rtt": "harness.studies.rtt:RTT",
    "security": "harness.studies.security:SECURITY",
    "qos": "harness.studies.qos:QOS",
    "transactions": "harness.studies.transactions:TRANSACTIONS_STUDY",
}


# Entries registered in this process (registered()), after the registry's.
_in_process: dict[str, Study[Any]] = {}


@contextlib.contextmanager
def registered(*added: Study[Any]) -> Iterator[None]:
    """This process's registry with ``added`` in it (a study a test defines)."""
    saved = dict(_in_process)
    _in_process.update({s.name: s for s in added})
    try:
        yield
    finally:
        _in_process.clear()
        _in_process.update(saved)


def get(name: str) -> Study[Any]:
    if name in _in_process:
        return _in_process[name]
    try:
        target = REGISTRY[name]
    except KeyError:
        known = ", ".join((*REGISTRY, *_in_process))
        raise UserError(f"unknown study {name!r}; known: {known}") from None
    module, _, attr = target.partition(":")
    study: Study[Any] = getattr(importlib.import_module(module), attr)
    return study


def entries() -> tuple[Study[Any], ...]:
    return tuple(get(name) for name in (*REGISTRY, *(n for n in _in_process
                                                      if n not in REGISTRY)))
