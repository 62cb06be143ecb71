"""The run log writer: one directory per run, in the format twinbench_common.runlog defines.

``RunLog`` creates ``<out>/<run_id>/`` with ``manifest.json`` (written at once with
``incomplete: true`` and ``finished_at: null``, so a run killed outright still says it is
incomplete) and every table of twinbench_common.runlog with its header, then appends rows to
them as each session ends, flushing every time: rows already written stay valid whatever
happens next. A table a workload does not use stays header-only. ``finish()`` rewrites the
manifest with the end time, the incomplete flag and the failed cells. The manifest is always
replaced atomically (``brokers.core.atomic_file``), not durably, and records the version of
every table (``tables``).

The columns are the tables' declarations (twinbench_common/runlog/), which docs/result-format.md
explains and tests/unit/harness/test_runlog.py holds it to. This module also gathers the facts the
manifest records about the machine and the code (versions, CPU, git), because they describe the
run, not the measurement.
"""

from __future__ import annotations

import csv
import json
import math
import os
import platform
import random
import subprocess
import sys
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import IO, Any

from brokers.core.atomic_file import replace_file
from twinbench_common import runlog as fmt
from twinbench_common.runlog import manifest as manifest_format

__all__ = [
    "FORMAT_VERSION",
    "RunLog",
    "cpu_model",
    "git_state",
    "make_run_id",
    "utc_iso",
    "versions",
]

FORMAT_VERSION = manifest_format.FORMAT_VERSION
KIND = manifest_format.KIND
REPO_ROOT = Path(__file__).resolve().parent.parent
MANIFEST_KEYS = manifest_format.KEYS


def utc_iso(ts: datetime | None = None) -> str:
    """ISO 8601 UTC with a Z, second precision plus microseconds."""
    ts = ts or datetime.now(UTC)
    return ts.astimezone(UTC).isoformat().replace("+00:00", "Z")


def make_run_id(arch: str, workload_name: str, started: datetime, rng: random.Random) -> str:
    """``<UTC start %Y%m%dT%H%M%SZ>-<arch>-<workload name>-<6 hex>``: unique, sorts by time."""
    stamp = started.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{arch}-{workload_name}-{rng.getrandbits(24):06x}"


# ---------------------------------------------------------------------------------------------
# Facts about the machine and the code
# ---------------------------------------------------------------------------------------------


def cpu_model() -> str:
    """The CPU's marketing name from /proc/cpuinfo (platform.processor() is often empty)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _dist_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def versions(services: Mapping[str, str | None] | None = None) -> dict[str, str | None]:
    """What produced the numbers (`pyspark` is the analysis's business and stays absent);
    ``services``: each service's version as it reports it, by name (None: none, or unknown)."""
    return {
        "twinbench": _dist_version("twinbench"),
        "python": platform.python_version(),
        "uvloop": _dist_version("uvloop"),
        "kazoo": _dist_version("kazoo"),
        **(services or {}),
    }


def git_state(root: Path = REPO_ROOT) -> dict[str, Any]:
    """HEAD commit and whether tracked files differ from it; commit null outside a checkout."""
    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(
                ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10,
                check=True,
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return out.stdout

    commit = git("rev-parse", "HEAD")
    if commit is None:
        return {"commit": None, "dirty": False}
    # Untracked files (result directories, scratch files) do not change what ran.
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit.strip(), "dirty": bool(status and status.strip())}


def host_info(placement: Mapping[str, Any] | None,
              conditions: Mapping[str, Any] | None = None,
              tuned: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The machine. ``conditions``: harness/conditions.py's snapshot as the run started (after
    ``--tune``); ``tuned``: {sysfs file: value before} of what ``--tune`` changed for the run."""
    return {
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
        "placement": dict(placement) if placement is not None else None,
        "conditions": dict(conditions) if conditions is not None else None,
        "tuned": dict(tuned) if tuned is not None else None,
        # Filled in by finish(): how much CPU other processes took during the sessions.
        "background": None,
    }


# ---------------------------------------------------------------------------------------------
# The writer
# ---------------------------------------------------------------------------------------------


def _cell(value: Any) -> Any:
    """CSV field: None (and NaN) -> empty; floats keep full precision."""
    if value is None:
        return ""
    if isinstance(value, float):
        if math.isnan(value):
            return ""
        return repr(value)
    return value


class RunLog:
    """Writes one run directory. Not thread-safe (the driver is one event loop)."""

    def __init__(self, out_dir: Path, manifest: Mapping[str, Any]) -> None:
        missing = [k for k in MANIFEST_KEYS if k not in manifest]
        unknown = [k for k in manifest if k not in MANIFEST_KEYS]
        if missing or unknown:
            raise ValueError(f"manifest keys: missing {missing}, unknown {unknown}")
        self.run_id: str = manifest["run_id"]
        self.dir: Path = Path(out_dir) / self.run_id
        self.dir.mkdir(parents=True, exist_ok=False)
        self.manifest: dict[str, Any] = dict(manifest)
        self.failed_cells: list[str] = list(manifest.get("failed_cells", []))
        self._write_manifest()
        # table name -> (file, CSV writer or None for JSON lines, columns).
        self._tables: dict[str, tuple[IO[str], csv.DictWriter[str] | None, tuple[str, ...]]] = {}
        for table in fmt.TABLES:
            f = open(self.dir / table.file, "w", newline="", encoding="utf-8")  # noqa: SIM115
            writer = None
            if table.kind == "csv":
                writer = csv.DictWriter(f, table.names(), lineterminator="\n")
                writer.writeheader()
            self._tables[table.name] = (f, writer, table.names())
        self._flush()
        self.closed = False

    @property
    def path(self) -> Path:
        return self.dir

    def _write_manifest(self) -> None:
        # Atomic, so the analysis never reads half a manifest; not durable, like the rows (which
        # are flushed, never fsynced): fsyncing the manifest alone would not make a run survive a
        # power loss, and a run cut short by one is run again.
        replace_file(self.dir / "manifest.json",
                     json.dumps(self.manifest, indent=2, sort_keys=False) + "\n",
                     sync_file=False, sync_dir=False)

    def _flush(self) -> None:
        for f, _, _ in self._tables.values():
            f.flush()

    def add_records(self, rows: Sequence[Mapping[str, Any]]) -> None:
        self.add_rows(fmt.RECORDS.name, rows)

    def add_coordination(self, row: Mapping[str, Any]) -> None:
        self.add_rows(fmt.COORDINATION.name, [row])

    def add_latency(self, entries: Sequence[Mapping[str, Any]]) -> None:
        self.add_rows(fmt.LATENCY.name, entries)

    def add_rows(self, name: str, rows: Sequence[Mapping[str, Any]]) -> None:
        """Append rows to the table ``name`` (twinbench_common.runlog; a file name such as
        ``faults.csv`` is accepted too). CSV fields: None and NaN are empty, floats keep full
        precision; a JSON-lines table takes every column as given."""
        f, writer, columns = self._tables[fmt.by_file(name).name if "." in name else name]
        for row in rows:
            self._check(row, columns)
            if writer is None:
                f.write(json.dumps({k: row[k] for k in columns}, separators=(",", ":")) + "\n")
            else:
                writer.writerow({k: _cell(row.get(k)) for k in columns})
        self._flush()

    @staticmethod
    def _check(row: Mapping[str, Any], columns: tuple[str, ...]) -> None:
        unknown = set(row) - set(columns)
        if unknown:
            # A typo here would silently write an empty column: fail loudly instead.
            raise ValueError(f"unknown run-log fields {sorted(unknown)}")

    def mark_failed(self, cell_id: str) -> None:
        if cell_id not in self.failed_cells:
            self.failed_cells.append(cell_id)
            self.manifest["failed_cells"] = list(self.failed_cells)
            self._write_manifest()

    def finish(self, *, incomplete: bool, background: Mapping[str, Any] | None = None
               ) -> None:
        """Close the files and seal the manifest (end time, incomplete flag, failed cells, and
        the machine's background load over the run's sessions)."""
        if self.closed:
            return
        self.closed = True
        for f, _, _ in self._tables.values():
            f.close()
        if background is not None:
            self.manifest["host"] = {**self.manifest["host"], "background": dict(background)}
        self.manifest["finished_at"] = utc_iso()
        self.manifest["incomplete"] = bool(incomplete)
        self.manifest["failed_cells"] = list(self.failed_cells)
        self._write_manifest()


def base_manifest(
    *,
    run_id: str,
    arch: str,
    label: str,
    workload: Mapping[str, Any],
    workload_text: str,
    policies: Mapping[str, str],
    cluster: Mapping[str, Any],
    service_versions: Mapping[str, str | None],
    placement: Mapping[str, Any] | None,
    seed: int,
    conditions: Mapping[str, Any] | None = None,
    tuned: Mapping[str, str] | None = None,
    started_at: datetime,
    run_arches: Sequence[str] | None = None,
    architectures: Mapping[str, Mapping[str, Any]] | None = None,
    external: Mapping[str, Any] | None = None,
    hosts: Mapping[str, Any] | None = None,
    client_ceiling: Mapping[str, Any] | None = None,
    client: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The manifest of a run that has just started (incomplete until finish())."""
    return {
        "format_version": FORMAT_VERSION,
        "kind": KIND,
        "run_id": run_id,
        "arch": arch,
        "label": label,
        "workload_name": workload["name"],
        "workload": dict(workload),
        "workload_text": workload_text,
        "policies": dict(policies),
        "cluster": dict(cluster),
        "versions": versions(service_versions),
        "host": host_info(placement, conditions, tuned),
        "git": git_state(),
        "seed": seed,
        # Every architecture measured by the same `twinbench run`, interleaved session by
        # session (just this one's arch for a single-architecture run).
        "run_arches": list(run_arches or [arch]),
        # How the analysis labels each of them (their Labels, harness/architectures/entry.py).
        "architectures": {k: dict(v) for k, v in (architectures or {}).items()},
        "started_at": utc_iso(started_at),
        "finished_at": None,
        "incomplete": True,
        "failed_cells": [],
        # A cluster twinbench did not start (harness/cluster/external.py): its address and what was
        # not measured or not applied; None for the twins.
        "external": dict(external) if external is not None else None,
        # The hosts of a multi-host run (harness/remote/): each with its clock offset, where
        # ZooKeeper, the brokers and the load clients ran; None on one machine.
        "hosts": dict(hosts) if hosts is not None else None,
        # The highest rate a rate search could try, and where it came from
        # (harness/studies/latency/ceiling.py); None when the run searched nothing.
        "client_ceiling": dict(client_ceiling) if client_ceiling is not None else None,
        # The side's load client (harness/driver/kafka_perf.py): {"name": "twinbench"}, or
        # Kafka's tools with their release and fixed knobs.
        "client": dict(client) if client is not None else {"name": "twinbench"},
        # Each table's version (twinbench_common.runlog): format_version stays 9 from now on.
        "tables": manifest_format.current_versions(fmt.TABLES),
    }


if __name__ == "__main__":  # pragma: no cover - a quick look at what a manifest would say
    json.dump({"versions": versions(), "host": host_info(None), "git": git_state()},
              sys.stdout, indent=2)
