"""Options: the knobs only one architecture (or one service) reads, as a frozen dataclass.

The cluster, the workload and the command line do not know them. A workload carries them in
its ``options`` block, keyed by the architecture's or the service's name (``options: {zk:
{session_timeout_ms: 6000}, zookeeper: {nodes: 3}}``), and the command line as
``--option zk.session_timeout_ms=6000``; both hand the raw values to the entry's ``Options``
class, which validates them (``parse``) and says what they mean. The run manifest records the
parsed options of every cluster (``cluster.options``).

Each knob is a field declared with ``knob()``: its default, what it means, and its bounds or
choices, so ``parse`` checks a value, a bad one is one line naming the key, and ``--help``
texts and the docs can list them.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Self

from brokers.core.errors import UserError


def knob(default: Any, meaning: str, *, low: float | None = None, high: float | None = None,
         choices: tuple[Any, ...] = ()) -> Any:
    """A field of an ``Options`` class: its default, what it means, and what it may be."""
    return dataclasses.field(default=default, metadata={
        "meaning": meaning, "low": low, "high": high, "choices": choices})


@dataclass(frozen=True)
class Options:
    """Base of every architecture's and service's options; declares no knob."""

    @classmethod
    def knobs(cls) -> tuple[dataclasses.Field[Any], ...]:
        return dataclasses.fields(cls)

    @classmethod
    def parse(cls, raw: Mapping[str, Any] | None, where: str) -> Self:
        """Validated options from ``raw`` (a workload block, or ``--option`` strings):
        unknown keys, wrong types and values out of range are one UserError line naming
        ``where.key``; a missing key takes its default."""
        raw = dict(raw or {})
        hints = typing.get_type_hints(cls)
        names = {f.name for f in cls.knobs()}
        unknown = sorted(set(raw) - names)
        if unknown:
            known = ", ".join(sorted(names)) or "none"
            raise UserError(f"{where}.{unknown[0]}: unknown option (known: {known})")
        values = {}
        for f in cls.knobs():
            if f.name in raw:
                values[f.name] = _value(f, hints[f.name], raw[f.name], f"{where}.{f.name}")
        return cls(**values)

    def as_manifest(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in self.knobs()}


def _value(f: dataclasses.Field[Any], hint: Any, raw: Any, where: str) -> Any:
    """``raw`` as the field's type (a string from the command line is converted), checked
    against its bounds and choices."""
    kinds = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
    optional = type(None) in kinds
    kind = next(k for k in kinds if k is not type(None))
    if raw is None or (optional and isinstance(raw, str) and raw.lower() in ("none", "")):
        if optional:
            return None
        raise UserError(f"{where}: must be given")
    meta = f.metadata
    try:
        if kind is bool:
            if isinstance(raw, str) and raw.lower() in ("true", "false"):
                raw = raw.lower() == "true"
            if not isinstance(raw, bool):
                raise ValueError
            value: Any = raw
        elif kind is int:
            if isinstance(raw, bool | float):
                raise ValueError
            value = int(raw)
        elif kind is float:
            if isinstance(raw, bool):
                raise ValueError
            value = float(raw)
        else:
            value = str(raw)
    except (TypeError, ValueError):
        raise UserError(f"{where}: expected {kind.__name__}, got {raw!r}") from None
    if meta.get("choices") and value not in meta["choices"]:
        raise UserError(f"{where}: choose {' or '.join(map(str, meta['choices']))}, got "
                        f"{value!r}")
    low, high = meta.get("low"), meta.get("high")
    if (low is not None and value < low) or (high is not None and value > high):
        raise UserError(f"{where}: must be between {low:g} and {high:g}, got {value!r}")
    return value


def split_assignments(items: list[str] | tuple[str, ...]) -> dict[str, dict[str, str]]:
    """``--option NAME.KEY=VALUE`` arguments -> {NAME: {KEY: VALUE}} (one line per bad one)."""
    out: dict[str, dict[str, str]] = {}
    for item in items:
        target, eq, value = item.partition("=")
        name, dot, key = target.partition(".")
        if not eq or not dot or not name or not key:
            raise UserError(f"--option {item!r}: expected NAME.KEY=VALUE (an architecture's or "
                            "a service's name, e.g. zk.session_timeout_ms=6000)")
        out.setdefault(name.strip(), {})[key.strip()] = value.strip()
    return out
