"""The run log writer: one directory per run, exactly as docs/result-format.md (format 8) says.

``RunLog`` creates ``<out>/<run_id>/`` with ``manifest.json`` (written at once with
``incomplete: true`` and ``finished_at: null``, so a run killed outright still says it is
incomplete), and appends to ``records.csv``, ``coordination.csv``, ``latency.jsonl``,
``counters.csv``, the fault files (``faults.csv``, ``fault_events.csv``, ``timeline.csv``;
header only unless the workload injects faults), the open-loop files (``series.csv``,
``rate_search.csv``, ``max_rate.csv``; header only for closed-loop workloads) and
``metadata.csv`` (format 5; header only unless the workload runs metadata scenarios) and
``metrics.csv`` (format 8; header only unless the workload samples the brokers' metrics) as each
session ends, flushing every time: rows already written stay valid whatever happens next.
``finish()`` rewrites the manifest with the end time, the incomplete flag and the failed cells.
The manifest is always replaced atomically (``brokers.core.atomic_file``), not durably.

The column lists below are the contract; tests/unit/test_runlog.py checks them against the doc.
This module also gathers the facts the manifest records about the machine and the code
(versions, CPU, git), because they describe the run, not the measurement.
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
from typing import Any

from brokers.core.atomic_file import replace_file

__all__ = [
    "COORDINATION_COLUMNS",
    "COUNTER_COLUMNS",
    "FAULT_COLUMNS",
    "FAULT_EVENT_COLUMNS",
    "FORMAT_VERSION",
    "LATENCY_KEYS",
    "MAX_RATE_COLUMNS",
    "METADATA_COLUMNS",
    "METRICS_COLUMNS",
    "RATE_SEARCH_COLUMNS",
    "RECORD_COLUMNS",
    "SERIES_COLUMNS",
    "TIMELINE_COLUMNS",
    "RunLog",
    "cpu_model",
    "git_state",
    "make_run_id",
    "utc_iso",
    "versions",
]

FORMAT_VERSION = 8
KIND = "twinbench.run"
REPO_ROOT = Path(__file__).resolve().parent.parent

RECORD_COLUMNS = (
    "run_id", "arch", "label", "cell_id", "table", "scenario", "role", "msg_size", "batch",
    "try", "clients", "records", "payload_bytes", "wall_s", "rps", "kbps",
    "lat_p50_us", "lat_p90_us", "lat_p99_us", "lat_p999_us", "lat_max_us",
    "e2e_p50_us", "e2e_p99_us", "duplicates", "lost", "out_of_order", "errors",
    "offset_commit", "metadata_check", "status",
    # format 3: the rest of the end-to-end percentiles, and open-loop sessions.
    "e2e_p90_us", "e2e_p999_us", "e2e_max_us", "target_rate", "achieved_rate",
    "send_delay_p99_us", "behind",
    # format 6: the round-trip time the delay line added (empty without one).
    "rtt_ms",
)
COORDINATION_COLUMNS = (
    "run_id", "arch", "label", "cell_id", "table", "scenario", "msg_size", "batch", "try",
    "messages", "zk_requests", "gossip_packets", "coordination_ops", "broker_cpu_s", "zk_cpu_s",
    # format 6: the delay line (harness/netdelay).
    "rtt_ms", "rtt_measured_ms", "delayed_packets", "delay_cpu_s",
    # format 7: the machine during the session (harness/conditions.py).
    "background_cpu", "steal",
)
# Fault sessions (format 2): one row per session, one per injected event, one per time bucket.
_SESSION_KEYS = ("run_id", "arch", "label", "cell_id", "case", "try")
FAULT_COLUMNS = (
    *_SESSION_KEYS, "target_node", "target_role", "was_controller", "was_coordinator",
    "fault_at_s", "closer_at_s", "detection_s", "rejoin_s", "produce_gap_s",
    "produce_gap_partition", "consume_gap_s", "commit_gap_s", "group_recovery_s",
    "group_unstable_s", "group_rebalances", "rate", "duration_s", "sent", "acked", "consumed",
    "lost", "duplicates", "unreachable", "produce_errors", "offset_commit", "metadata_check",
    "status",
)
FAULT_EVENT_COLUMNS = (
    *_SESSION_KEYS, "step", "action", "target", "node_id", "planned_s", "at_s", "took_s",
    "result",
)
TIMELINE_COLUMNS = (*_SESSION_KEYS, "t_s", "bucket_s", "produced", "consumed", "commits")
# Open-loop sessions (format 4): one row per second of each session; one per step of a maximum
# sustainable rate search, and one per search (its bracket).
_OPEN_KEYS = ("run_id", "arch", "label", "cell_id", "scenario", "try")
SERIES_COLUMNS = (
    *_OPEN_KEYS, "t_s", "bucket_s", "produced", "consumed", "backlog", "e2e_records",
    "e2e_p99_us", "warmup",
)
RATE_SEARCH_COLUMNS = (
    "run_id", "arch", "label", "cell_id", "try", "step", "rate", "verdict", "achieved_rate",
    "consumed_rate", "backlog_end", "e2e_p99_us", "send_delay_p99_us",
)
MAX_RATE_COLUMNS = ("run_id", "arch", "label", "cell_id", "try", "kept_rate", "failed_rate",
                    "steps")
# Metadata sessions (format 5): one row per session (harness/driver/metadata.py).
METADATA_COLUMNS = (
    *_SESSION_KEYS, "kind", "n", "topics", "partitions", "brokers", "create_s",
    "create_p50_ms", "create_max_ms", "create_timeouts", "converge_s", "leave_s",
    "metadata_p50_ms", "metadata_max_ms", "commit_p50_ms", "commit_max_ms", "commit_ops",
    "zk_requests", "gossip_packets", "coordination_ops", "broker_cpu_s", "zk_cpu_s",
    "rss_max_bytes", "rss_total_bytes", "idle_s", "idle_ops_per_s", "idle_zk_requests_per_s",
    "status",
)
# The brokers' Prometheus metrics sampled during a session (format 8): one row per sample of a
# series (harness/driver/metrics.py).
METRICS_COLUMNS = (*_OPEN_KEYS, "t_s", "node_id", "metric", "labels", "value")
# Every counter's increase over a session, one row per counter (optional in format 2: added
# later; the CI regression's exact layer reads it, spark_analysis/regress.py).
COUNTER_COLUMNS = (
    "run_id", "arch", "label", "cell_id", "scenario", "try", "source", "counter", "increase",
)
LATENCY_KEYS = (
    "run_id", "cell_id", "scenario", "role", "try", "kind", "unit", "count", "histogram",
)
MANIFEST_KEYS = (
    "format_version", "kind", "run_id", "arch", "label", "workload_name", "workload",
    "workload_text", "policies", "cluster", "versions", "host", "git", "seed", "run_arches",
    "architectures", "started_at", "finished_at", "incomplete", "failed_cells", "external",
    "hosts",
)


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


def versions(zookeeper: str | None) -> dict[str, str | None]:
    """What produced the numbers (`pyspark` is the analysis's business and stays absent)."""
    return {
        "twinbench": _dist_version("twinbench"),
        "python": platform.python_version(),
        "uvloop": _dist_version("uvloop"),
        "kazoo": _dist_version("kazoo"),
        "zookeeper": zookeeper,
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
        self.dir = Path(out_dir) / self.run_id
        self.dir.mkdir(parents=True, exist_ok=False)
        self.manifest: dict[str, Any] = dict(manifest)
        self.failed_cells: list[str] = list(manifest.get("failed_cells", []))
        self._write_manifest()
        self._records = open(self.dir / "records.csv", "w", newline="", encoding="utf-8")  # noqa: SIM115
        self._coordination = open(  # noqa: SIM115
            self.dir / "coordination.csv", "w", newline="", encoding="utf-8"
        )
        self._latency = open(self.dir / "latency.jsonl", "w", encoding="utf-8")  # noqa: SIM115
        self._rec = csv.DictWriter(self._records, RECORD_COLUMNS, lineterminator="\n")
        self._coord = csv.DictWriter(self._coordination, COORDINATION_COLUMNS, lineterminator="\n")
        self._rec.writeheader()
        self._coord.writeheader()
        # name -> (file, writer, columns) of the CSV files beyond records and coordination.
        self._tables: dict[str, tuple[Any, csv.DictWriter, tuple[str, ...]]] = {}
        for name, columns in (("faults.csv", FAULT_COLUMNS),
                              ("fault_events.csv", FAULT_EVENT_COLUMNS),
                              ("timeline.csv", TIMELINE_COLUMNS),
                              ("counters.csv", COUNTER_COLUMNS),
                              ("series.csv", SERIES_COLUMNS),
                              ("rate_search.csv", RATE_SEARCH_COLUMNS),
                              ("max_rate.csv", MAX_RATE_COLUMNS),
                              ("metadata.csv", METADATA_COLUMNS),
                              ("metrics.csv", METRICS_COLUMNS)):
            f = open(self.dir / name, "w", newline="", encoding="utf-8")  # noqa: SIM115
            w = csv.DictWriter(f, columns, lineterminator="\n")
            w.writeheader()
            self._tables[name] = (f, w, columns)
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

    def _files(self) -> list[Any]:
        return [self._records, self._coordination, self._latency,
                *(f for f, _, _ in self._tables.values())]

    def _flush(self) -> None:
        for f in self._files():
            f.flush()

    def add_records(self, rows: Sequence[Mapping[str, Any]]) -> None:
        for row in rows:
            self._check(row, RECORD_COLUMNS)
            self._rec.writerow({k: _cell(row.get(k)) for k in RECORD_COLUMNS})
        self._flush()

    def add_coordination(self, row: Mapping[str, Any]) -> None:
        self._check(row, COORDINATION_COLUMNS)
        self._coord.writerow({k: _cell(row.get(k)) for k in COORDINATION_COLUMNS})
        self._flush()

    def add_latency(self, entries: Sequence[Mapping[str, Any]]) -> None:
        for entry in entries:
            self._check(entry, LATENCY_KEYS)
            obj = {k: entry[k] for k in LATENCY_KEYS}
            self._latency.write(json.dumps(obj, separators=(",", ":")) + "\n")
        self._flush()

    def add_rows(self, name: str, rows: Sequence[Mapping[str, Any]]) -> None:
        """Append rows to one of the files beyond records, coordination and latency (the fault
        files, the open-loop files, ``counters.csv``, ``metadata.csv``)."""
        _, writer, columns = self._tables[name]
        for row in rows:
            self._check(row, columns)
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
        for f in self._files():
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
    zookeeper_version: str | None,
    placement: Mapping[str, Any] | None,
    seed: int,
    conditions: Mapping[str, Any] | None = None,
    tuned: Mapping[str, str] | None = None,
    started_at: datetime,
    run_arches: Sequence[str] | None = None,
    architectures: Mapping[str, Mapping[str, Any]] | None = None,
    external: Mapping[str, Any] | None = None,
    hosts: Mapping[str, Any] | None = None,
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
        "versions": versions(zookeeper_version),
        "host": host_info(placement, conditions, tuned),
        "git": git_state(),
        "seed": seed,
        # Every architecture measured by the same `twinbench run`, interleaved session by
        # session (just this one's arch for a single-architecture run).
        "run_arches": list(run_arches or [arch]),
        # How the analysis labels each of them (harness/architectures.py's Labels).
        "architectures": {k: dict(v) for k, v in (architectures or {}).items()},
        "started_at": utc_iso(started_at),
        "finished_at": None,
        "incomplete": True,
        "failed_cells": [],
        # A cluster twinbench did not start (harness/external.py): its address and what was
        # not measured or not applied; None for the twins.
        "external": dict(external) if external is not None else None,
        # The hosts of a multi-host run (harness/remote/): each with its clock offset, where
        # ZooKeeper, the brokers and the load clients ran; None on one machine.
        "hosts": dict(hosts) if hosts is not None else None,
    }


if __name__ == "__main__":  # pragma: no cover - a quick look at what a manifest would say
    json.dump({"versions": versions(None), "host": host_info(None), "git": git_state()},
              sys.stdout, indent=2)
