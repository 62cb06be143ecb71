"""The architectures twinbench compares, chosen by name: one registry line per architecture.

As uvicorn picks its event loop and its HTTP protocol from a table of names, the harness picks
an architecture from ``REGISTRY`` by the name a user gives (``--arch zk``) and asks its entry,
never the name, whatever differs between architectures (entry.py says what an entry answers).
Adding an architecture is its own package (a broker program and its entry module) plus one
line here; docs/architecture.md has the recipe. An architecture defined outside the repository
(or in the tests) is added without editing anything: ``TWINBENCH_ARCHITECTURES`` lists
``name=module:attribute`` entries, comma-separated, read when the registry is first used.

The analysis and this table. spark_analysis promises to import no broker, client or harness
code and to read run logs only, so it cannot import this package. The harness writes each
measured architecture's ``labels`` into its run manifests (key ``architectures``,
docs/result-format.md), and the analysis labels what it finds there. Run logs written before
that key carry no labels; for them the analysis has a built-in fallback for zk and dsbs
(spark_analysis/archs.py), which a unit test holds equal to the entries here.

Layout:
- ``entry.py``        Architecture (the entry), Launch, Node, ProcessSpec, BrokerSettings,
                      Coordination: what the harness asks of an architecture
- ``options.py``      Options: an architecture's (or service's) knobs as a frozen dataclass
- ``core_broker.py``  the command line of a broker built on brokers/core
- ``zk.py``, ``dsbs.py``, ``raft.py``, ``local.py``   the entries of the twins (raft.py: raft
                      and raft-dc, its dedicated-controller deployment) and the single node
- ``kafka.py``      kafka-zk and kafka-kraft: real Apache Kafka (harness/kafka), a reference
"""

from __future__ import annotations

import contextlib
import importlib
import os
from collections.abc import Iterator, Sequence
from typing import Any

from brokers.core.errors import UserError
from harness.architectures.entry import Architecture

# Every architecture by name -> "module:attribute" of its entry, imported when first used.
REGISTRY: dict[str, str] = {
    "zk": "harness.architectures.zk:ZK",
    "dsbs": "harness.architectures.dsbs:DSBS",
    "raft": "harness.architectures.raft:RAFT",
    "raft-dc": "harness.architectures.raft:RAFT_DC",
    "local": "harness.architectures.local:LOCAL",
    "kafka-zk": "harness.architectures.kafka:KAFKA_ZK",
    "kafka-kraft": "harness.architectures.kafka:KAFKA_KRAFT",
}
# Architectures registered from outside the repository: name=module:attribute[,...].
PLUGINS_ENV = "TWINBENCH_ARCHITECTURES"
# ``--arch all``: every compared architecture, interleaved session by session; ``both`` is its
# older spelling (from when there were two).
ALL = "all"
BOTH = "both"

_loaded: dict[tuple[str, str], Architecture] = {}
# Entries registered in this process (registered()), over everything else.
_in_process: dict[str, Architecture] = {}


@contextlib.contextmanager
def registered(*added: Architecture) -> Iterator[None]:
    """This process's registry with ``added`` in it, standing in for entries of the same name
    (the planted regressions of the CI selftest; an architecture a test defines)."""
    saved = dict(_in_process)
    _in_process.update({a.name: a for a in added})
    try:
        yield
    finally:
        _in_process.clear()
        _in_process.update(saved)


def _targets() -> dict[str, str]:
    targets = dict(REGISTRY)
    for item in filter(None, (s.strip() for s in os.environ.get(PLUGINS_ENV, "").split(","))):
        name, eq, target = item.partition("=")
        if not eq or ":" not in target:
            raise UserError(f"{PLUGINS_ENV}: {item!r} is not name=module:attribute")
        targets[name.strip()] = target.strip()
    return targets | dict.fromkeys(_in_process, "")


def _load(name: str, target: str) -> Architecture:
    if name in _in_process:
        return _in_process[name]
    if (name, target) not in _loaded:
        module, _, attr = target.partition(":")
        try:
            entry = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as exc:
            raise UserError(f"architecture {name}: cannot load {target} ({exc})") from None
        if not isinstance(entry, Architecture) or entry.name != name:
            raise UserError(f"architecture {name}: {target} is not its entry")
        _loaded[(name, target)] = entry
    return _loaded[(name, target)]


def entries() -> tuple[Architecture, ...]:
    """Every registered architecture, in the order of their labels."""
    loaded = [_load(n, t) for n, t in _targets().items()]
    return tuple(sorted(loaded, key=lambda a: (a.labels.order, a.name)))


def names() -> tuple[str, ...]:
    return tuple(a.name for a in entries())


def under_test() -> tuple[str, ...]:
    """Every architecture but the reference systems: what the contract suite, the nemesis and
    the benchmarks of the twins' code cover."""
    return tuple(a.name for a in entries() if not a.reference)


def compared() -> tuple[str, ...]:
    """The architectures of the comparison (``--arch all``)."""
    return tuple(a.name for a in entries() if a.compared)


def choice(options: Sequence[str]) -> str:
    """``a, b or c``: how an error message lists what may be chosen."""
    return options[0] if len(options) == 1 else f"{', '.join(options[:-1])} or {options[-1]}"


def get(name: str) -> Architecture:
    """The entry named ``name``; a UserError listing the names otherwise."""
    targets = _targets()
    if name not in targets:
        raise UserError(f"unknown architecture {name!r}; choose {choice(names())}")
    return _load(name, targets[name])


def run_choices() -> tuple[str, ...]:
    """What ``twinbench run --arch`` takes besides a comma-separated list of names."""
    return (*names(), ALL, BOTH)


def expand(arch: str) -> tuple[str, ...]:
    """``--arch`` -> the architectures a run measures, interleaved: a name, several
    comma-separated, or ``all`` (``both``): every compared one."""
    if arch in (ALL, BOTH):
        return compared()
    chosen = tuple(dict.fromkeys(a.strip() for a in arch.split(",") if a.strip()))
    known = names()
    for a in chosen:
        if a not in known:
            raise UserError(f"unknown architecture {a!r}; choose {choice(run_choices())} (or "
                            "several names, comma-separated)")
    if not chosen:
        raise UserError(f"--arch: choose {choice(run_choices())}")
    return tuple(a for a in known if a in chosen)


def baseline() -> Architecture:
    """The comparison's reference."""
    return next(a for a in entries() if a.labels.baseline)


def using(service: str) -> tuple[str, ...]:
    """The architectures whose clusters have ``service``."""
    return tuple(a.name for a in entries() if service in a.services)


def manifest_labels(arches: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The ``architectures`` key of a run manifest: the labels of every architecture the run
    measured (docs/result-format.md)."""
    return {name: get(name).labels.as_manifest() for name in arches}
