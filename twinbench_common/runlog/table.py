"""Column and Table: how one file of a run directory is declared.

A table is declared once (one module per table beside this one) and everything else derives
from the declaration: the harness's writer (harness/runlog.py) takes its columns, the analysis
builds its Spark schema from the column types (spark_analysis/schema.py), the synthetic run
logs of the tests (spark_analysis/synth.py) write the same headers, and a test holds
docs/result-format.md to it.

Every table has a version of its own. A column carries the table version that added it
(``since``) and, when a later version dropped or renamed it, the first version without it
(``until``), so the columns of any version a run was written with are known
(``Table.columns_at``) and an old file is read with its own header. A column that replaced
older ones names them (``was``): reading an old file, its value is the first of those that is
not empty (coordination.csv's ``coord_messages`` was ``zk_requests`` on zk and
``gossip_packets`` on dsbs, never both in one row).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# int: 32-bit (sizes, tries, ids); long: 64-bit (counts, bytes); double; string; bool.
ColumnType = Literal["string", "int", "long", "double", "bool"]


@dataclass(frozen=True)
class Column:
    name: str
    type: ColumnType
    # False: every row has a value (keys); True: empty means not applicable or not measured.
    nullable: bool = True
    # The table version that added it, and the first version without it (None: still there).
    since: int = 1
    until: int | None = None
    # Older columns this one replaced: read from an old file, it is the first non-empty one.
    was: tuple[str, ...] = ()

    def at(self, version: int) -> bool:
        """Whether a file of ``version`` has this column."""
        return self.since <= version and (self.until is None or version < self.until)


@dataclass(frozen=True)
class Table:
    # The table's name (the file's name without its suffix): "records".
    name: str
    # The file in a run directory: "records.csv".
    file: str
    # "csv": a header row, then rows; "jsonl": one JSON object per line with these keys.
    kind: Literal["csv", "jsonl"]
    # Every column any version had, in file order (a version's columns are those ``at`` it).
    columns: tuple[Column, ...]
    # The version the harness writes now.
    version: int
    # Which version a run of each old global format_version (1-8, before tables had versions
    # of their own) wrote; a format absent here did not have the file at all.
    by_format: dict[int, int]
    # A run directory may lack the file (it was added to its format later, or is written only
    # with rows): reading such a run, the table is simply empty.
    optional: bool = False
    # One line: what a row is.
    row: str = ""

    def __post_init__(self) -> None:
        names = [c.name for c in self.columns]
        if len(set(names)) != len(names):
            raise ValueError(f"{self.name}: a column is declared twice")
        for version in range(1, self.version + 1):
            current = [c.name for c in self.columns if c.at(version)]
            if len(current) != len(set(current)):
                raise ValueError(f"{self.name} v{version}: duplicate columns")
        if any(v > self.version for v in self.by_format.values()):
            raise ValueError(f"{self.name}: by_format names a version after {self.version}")

    def columns_at(self, version: int | None = None) -> tuple[Column, ...]:
        """The columns of a file of ``version`` (default: the current one), in file order."""
        v = self.version if version is None else version
        return tuple(c for c in self.columns if c.at(v))

    def names(self, version: int | None = None) -> tuple[str, ...]:
        """The header of a file of ``version`` (default: the current one)."""
        return tuple(c.name for c in self.columns_at(version))

    def column(self, name: str) -> Column:
        for c in self.columns:
            if c.name == name:
                return c
        raise KeyError(f"{self.name} has no column {name!r}")


def key(name: str, type: ColumnType = "string") -> Column:
    """A column every row fills (part of what identifies the row)."""
    return Column(name, type, nullable=False)
