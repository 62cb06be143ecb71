"""Counters: the typed contract between a broker (and its twin's coordinator) and the harness.

Every counter is a field of a ``Counters`` dataclass, declared once with what it counts and how
it behaves; nothing else spells its name. The counters every coordinator reports are
``CoordinatorCounters``; each twin subclasses it in its own package with the counters only it
has (``brokers.zk_broker.counters.ZkCounters``, ``brokers.dsbs_broker.counters.DsbsCounters``,
``brokers.core.local_coordinator.LocalCounters``); the broker process's own are
``BrokerCounters``. ``Coordinator.counters()`` returns a fresh snapshot of its class.

Kinds (a field's ``kind``):

* ``total``: only grows while the process lives. What a session cost is the increase between
  two readings, summed over brokers; a reading below the one before means the process
  restarted, and the increase is then unknown (never a negative number).
* ``gauge``: a level at the moment of reading (members alive, is the controller); never
  differenced.
* ``by_label``: a family of totals keyed by a label (gossip drops by reason; later, requests
  by type or API). One JSON key per label, ``<name>_<label>``; a label never seen is 0.

``to_json`` writes the flat ``{name: number}`` objects of ``counters.json`` (the broker writes
it on SIGUSR1, brokers/core/broker.py) and ``from_json`` reads one back into the same class, so
the harness (harness/driver/counters.py) diffs every total and family of whatever class its
architecture's registry entry names (harness/architectures/): a new counter is one new field
here or in a twin's class, and no reading code changes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Self

Kind = Literal["total", "gauge", "by_label"]


@dataclass(frozen=True, slots=True)
class CounterSpec:
    """One declared counter: its JSON name, its kind and a one-line meaning."""

    name: str
    kind: Kind
    meaning: str


def total(meaning: str) -> Any:
    """A counter that only grows while the process lives (a session's cost is its increase)."""
    return field(default=0, metadata={"kind": "total", "meaning": meaning})


def gauge(meaning: str) -> Any:
    """A level at the moment of reading; never differenced."""
    return field(default=0.0, metadata={"kind": "gauge", "meaning": meaning})


def by_label(meaning: str) -> Any:
    """A family of totals keyed by a label (a reason, a request type); declare the field as
    ``Mapping[str, int]``."""
    return field(default_factory=dict, metadata={"kind": "by_label", "meaning": meaning})


@dataclass(kw_only=True)
class Counters:
    """Base of every counter class: declaration, JSON in and out. Declares no counter."""

    @classmethod
    def specs(cls) -> tuple[CounterSpec, ...]:
        """Every counter of this class, in declaration order."""
        return _specs(cls)

    @classmethod
    def of(cls, tally: Mapping[str, float], **values: Any) -> Self:
        """A snapshot from a running tally keyed by counter name (a family's counters as
        ``<name>_<label>``), then ``values`` by field. A name the class does not declare is a
        KeyError: every count a twin keeps must be part of its contract."""
        scalars, families = _index(cls)
        kwargs: dict[str, Any] = {}
        for key, value in tally.items():
            if key in scalars:
                kwargs[key] = value
                continue
            family = _family_of(key, families)
            if family is None:
                raise KeyError(f"{cls.__name__} declares no counter {key!r}")
            kwargs.setdefault(family, {})[key[len(family) + 1:]] = value
        return cls(**(kwargs | values))

    def to_json(self) -> dict[str, int | float]:
        """The flat object counters.json carries: every scalar, every label of every family."""
        out: dict[str, int | float] = {}
        for spec in self.specs():
            value = getattr(self, spec.name)
            if spec.kind == "by_label":
                for label, n in sorted(value.items()):
                    out[f"{spec.name}_{label}"] = n
            else:
                out[spec.name] = value
        return out

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Self:
        """The inverse of ``to_json``. Keys of no declared counter (a newer broker's) are
        ignored; a scalar the document lacks (an older broker's) is a ValueError, because a
        zero would be a guess (``read_json`` says which are missing instead)."""
        counters, missing = cls.read_json(doc)
        if missing:
            raise ValueError(f"no counter {', '.join(sorted(missing))} in the document")
        return counters

    @classmethod
    def read_json(cls, doc: Mapping[str, Any]) -> tuple[Self, frozenset[str]]:
        """``from_json`` for a document an older broker wrote: the counters, and the names of
        the declared scalars it lacks (their values in the snapshot are the defaults, and must
        be read as unknown: the harness reports them so, and every other counter as read). A
        value that is not a number is still a ValueError."""
        scalars, families = _index(cls)
        missing = frozenset(name for name in scalars if name not in doc)
        kwargs: dict[str, Any] = {name: _number(doc[name], name) for name in scalars
                                  if name not in missing}
        for key, value in doc.items():
            family = None if key in scalars else _family_of(key, families)
            if family is not None:
                kwargs.setdefault(family, {})[key[len(family) + 1:]] = _number(value, key)
        return cls(**kwargs), missing


@dataclass(kw_only=True)
class CoordinatorCounters(Counters):
    """What every coordinator reports (``Coordinator.counters()``)."""

    coordination_ops: int = total(
        "messages this broker sent to coordinate: requests to the coordination store (zk), "
        "gossip datagrams (dsbs), reads and writes of its own tables (single node)")


@dataclass(kw_only=True)
class BrokerCounters(Counters):
    """What every broker process reports about itself, whatever its coordinator."""

    cpu_user_s: float = total("user CPU seconds of the broker process")
    cpu_system_s: float = total("system CPU seconds of the broker process")
    connections: float = gauge("client connections open now")
    connections_refused: int = total("connections closed as accepted (connection limits)")
    uptime_s: float = gauge("seconds since the broker started")
    sasl_authentications: int = total("clients that completed SASL authentication")
    sasl_authentication_failures: int = total(
        "SASL exchanges refused: wrong password, unknown user, malformed token")
    kafka_requests: Mapping[str, int] = by_label(
        "Kafka requests received, by API (lower-case Kafka name: produce, fetch, metadata ...)")
    fsyncs: int = total("fsyncs and fdatasyncs of the process: segments, offset logs, state")


def _number(value: Any, name: str) -> int | float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"counter {name} is {value!r}, not a number")
    return value


# Per class: its specs, and (scalar names, family names longest first). Classes are few and
# never change, so each is computed once.
_SPECS: dict[type[Counters], tuple[CounterSpec, ...]] = {}
_INDEX: dict[type[Counters], tuple[frozenset[str], tuple[str, ...]]] = {}


def _specs(cls: type[Counters]) -> tuple[CounterSpec, ...]:
    cached = _SPECS.get(cls)
    if cached is not None:
        return cached
    specs = tuple(CounterSpec(f.name, f.metadata["kind"], f.metadata["meaning"])
                  for f in dataclasses.fields(cls))
    families = [s.name for s in specs if s.kind == "by_label"]
    for s in specs:
        # ``<family>_<label>`` must name one counter only.
        clash = [f for f in families if s.name != f and s.name.startswith(f"{f}_")]
        if clash:
            raise TypeError(f"{cls.__name__}.{s.name} reads as a label of {clash[0]}")
    _SPECS[cls] = specs
    return specs


def _index(cls: type[Counters]) -> tuple[frozenset[str], tuple[str, ...]]:
    """(scalar names, family names longest first, so the most specific family wins)."""
    cached = _INDEX.get(cls)
    if cached is None:
        specs = _specs(cls)
        cached = _INDEX[cls] = (
            frozenset(s.name for s in specs if s.kind != "by_label"),
            tuple(sorted((s.name for s in specs if s.kind == "by_label"), key=len,
                         reverse=True)))
    return cached


def _family_of(key: str, families: tuple[str, ...]) -> str | None:
    for family in families:
        if key.startswith(f"{family}_") and len(key) > len(family) + 1:
            return family
    return None
