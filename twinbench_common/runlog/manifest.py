"""manifest.json: what was run, on what, by which code; and which version each table has.

Until format_version 8 one number versioned the whole directory, and every new kind of
experiment bumped it. From format_version 9 on that number stays 9 for good and means "versions
are per table": the manifest's ``tables`` key gives each file's version, so a change to one
table bumps that table alone. ``table_versions`` answers the same question for a run of any
format, older ones through each table's ``by_format``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from twinbench_common.runlog.table import Table

KIND = "twinbench.run"
# The last global version; manifests of this version carry ``tables``.
FORMAT_VERSION = 9
# Global versions whose run directories an analysis of today reads.
SUPPORTED_FORMAT_VERSIONS: frozenset[int] = frozenset(range(1, FORMAT_VERSION + 1))

KEYS: tuple[str, ...] = (
    "format_version", "kind", "run_id", "arch", "label", "workload_name", "workload",
    "workload_text", "policies", "cluster", "versions", "host", "git", "seed", "run_arches",
    "architectures", "started_at", "finished_at", "incomplete", "failed_cells", "external",
    "hosts", "client_ceiling", "client", "tables",
)


def current_versions(tables: Iterable[Table]) -> dict[str, int]:
    """The ``tables`` key the harness writes: every table at its current version."""
    return {t.name: t.version for t in tables}


def table_versions(manifest: Mapping[str, Any], tables: Iterable[Table]) -> dict[str, int]:
    """Each table's version in the run this manifest describes; a table the run cannot have
    (added after its format) is absent. Raises ValueError for a manifest that is neither."""
    version = manifest.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise ValueError("no integer format_version")
    if version >= FORMAT_VERSION:
        given = manifest.get("tables")
        if not isinstance(given, dict) or not all(
                isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool)
                for k, v in given.items()):
            raise ValueError("format_version 9 and later need a 'tables' object of versions")
        return dict(given)
    return {t.name: t.by_format[version] for t in tables if version in t.by_format}
