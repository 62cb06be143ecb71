"""How a workload file is read: the parsing context every block of it uses.

The core of a workload (harness/workload.py) and every study's block (harness/studies/) are
checked with the same ``Ctx``, so an error is always one line naming the file and the key
(``paper.yaml: tries: must be an integer >= 1, got 0``), with a "did you mean" hint for an
unknown key. The dataclasses of each block are the one definition of what a file may say and
of every default: ``keys``, ``required`` and ``defaults`` read them off their fields.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Set
from dataclasses import MISSING, fields
from typing import Any

from brokers.core.errors import UserError

NAME_RE = re.compile(r"[a-z0-9][a-z0-9_-]*")


class WorkloadError(UserError):
    """A workload file is malformed; the message is one line: ``<file>: <key>: <problem>``."""


def keys(cls: type) -> frozenset[str]:
    return frozenset(f.name for f in fields(cls))


def required(cls: type) -> tuple[str, ...]:
    """Fields without a default, in declaration order: the keys a file must give."""
    return tuple(f.name for f in fields(cls)
                 if f.default is MISSING and f.default_factory is MISSING)


def defaults(cls: type) -> dict[str, Any]:
    return {f.name: f.default for f in fields(cls) if f.default is not MISSING}


def given(data: Mapping[str, Any], key: str, default_values: Mapping[str, Any]) -> Any:
    """The file's value for ``key``, else the dataclass default (a tuple default as a list,
    the form a file gives it in)."""
    if key in data:
        return data[key]
    default = default_values[key]
    return list(default) if isinstance(default, tuple) else default


class Ctx:
    """Carries the file name so every error says where it is."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, key: str, problem: str) -> WorkloadError:
        where = f"{self.source}: {key}: " if key else f"{self.source}: "
        return WorkloadError(where + " ".join(problem.split()))

    def check_keys(self, mapping: Mapping[str, Any], allowed: Set[str], where: str) -> None:
        for key in mapping:
            if not isinstance(key, str):
                raise self.fail(where, f"keys must be strings, got {key!r}")
            if key not in allowed:
                hint = difflib.get_close_matches(key, sorted(allowed), n=1)
                tip = f" (did you mean {hint[0]!r}?)" if hint else ""
                full = f"{where}.{key}" if where else key
                raise self.fail(full, f"unknown key{tip}; known: {', '.join(sorted(allowed))}")

    def integer(self, key: str, value: Any, lo: int, hi: int | None = None) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < lo or (
            hi is not None and value > hi
        ):
            bound = f">= {lo}" if hi is None else f"between {lo} and {hi}"
            raise self.fail(key, f"must be an integer {bound}, got {value!r}")
        return value

    def number(self, key: str, value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            raise self.fail(key, f"must be a positive number, got {value!r}")
        return float(value)

    def choice(self, key: str, value: Any, choices: tuple[str, ...]) -> str:
        if value not in choices:
            raise self.fail(key, f"must be one of {', '.join(choices)}, got {value!r}")
        return str(value)

    def string_list(self, key: str, value: Any) -> list[Any]:
        """A scalar or a non-empty list without repeats, as a list."""
        items = value if isinstance(value, list) else [value]
        if not items:
            raise self.fail(key, "must not be empty")
        seen: set[str] = set()
        for item in items:
            if repr(item) in seen:
                raise self.fail(key, f"lists {item!r} twice")
            seen.add(repr(item))
        return items
