"""The load client's own ceiling on the machine at hand: the highest rate a rate search may try.

A search target the load client cannot schedule on time measures the client, not the brokers,
so a search never asks for more than the client keeps against a broker that does nothing (the
null sink; ``python -m harness.bench.perf --open-loop``). That figure depends on this machine
and on the load client's code, so it is measured here, not assumed: the first run that needs it
measures it (about 40 s) and keeps it in ``results/perf/client-ceiling.json`` with what it was
measured on; later runs reuse it while the machine and the client code are the same. Every run
that searches records the ceiling it used in its manifest (``client_ceiling``), and a maximum
that reached it is reported as "at least X (client-bound)", never as a measured maximum.

A workload may still fix ``rate_search.ceiling`` itself (then that is the ceiling, source
``workload``).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from brokers.core.atomic_file import replace_file

KIND = "twinbench.client_ceiling"
FORMAT_VERSION = 1
# Where the measurement is kept (relative to the working directory, as results/ is).
DEFAULT_FILE = Path("results/perf/client-ceiling.json")
# TWINBENCH_CLIENT_CEILING_FILE=path: keep it elsewhere (tests, read-only checkouts).
FILE_ENV = "TWINBENCH_CLIENT_CEILING_FILE"
_ROOT = Path(__file__).resolve().parents[3]


@dataclass(frozen=True)
class ClientCeiling:
    # Records/s one open-loop load client keeps against the null sink (32 B x 20, window 8).
    rps: float
    # measured (now) | cached (an earlier measurement, same machine and client code) |
    # workload (the workload's rate_search.ceiling)
    source: str
    # When it was measured (UTC, ISO 8601); None for a workload's own.
    measured_at: str | None
    # What it was measured on and with (fingerprint()).
    fingerprint: Mapping[str, str]

    def manifest(self) -> dict[str, Any]:
        return {**asdict(self), "fingerprint": dict(self.fingerprint)}


def fingerprint() -> dict[str, str]:
    """What the ceiling depends on: the CPU, how many of them this process may use, the
    Python, and the load client's code (workloads/)."""
    from harness.runlog import cpu_model

    return {"cpu_model": cpu_model(), "cpus": str(len(os.sched_getaffinity(0))),
            "python": platform.python_version(), "client_code": client_code()}


def client_code() -> str:
    """The load client's code version: git's tree id of workloads/ (changes exactly when a file
    there does), or a hash of its files outside a git checkout."""
    try:
        out = subprocess.run(["git", "-C", str(_ROOT), "rev-parse", "HEAD:workloads"],
                             capture_output=True, text=True, timeout=10, check=True)
        dirty = subprocess.run(["git", "-C", str(_ROOT), "status", "--porcelain", "--",
                                "workloads"], capture_output=True, text=True, timeout=10,
                               check=True)
        if not dirty.stdout.strip():
            return f"git:{out.stdout.strip()}"
    except (OSError, subprocess.SubprocessError):
        pass
    h = hashlib.sha256()
    for path in sorted((_ROOT / "workloads").glob("*.py")):
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return f"sha256:{h.hexdigest()[:40]}"


def path() -> Path:
    return Path(os.environ.get(FILE_ENV) or DEFAULT_FILE)


def cached(file: Path, current: Mapping[str, str]) -> ClientCeiling | None:
    """The kept measurement, if it was made on this machine with this client code."""
    try:
        doc = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if (not isinstance(doc, dict) or doc.get("kind") != KIND
            or doc.get("format_version") != FORMAT_VERSION
            or doc.get("fingerprint") != dict(current)
            or not isinstance(doc.get("rps"), int | float) or doc["rps"] <= 0):
        return None
    return ClientCeiling(float(doc["rps"]), "cached", doc.get("measured_at"), dict(current))


def store(file: Path, ceiling: ClientCeiling) -> None:
    file.parent.mkdir(parents=True, exist_ok=True)
    doc = {"kind": KIND, "format_version": FORMAT_VERSION, "rps": ceiling.rps,
           "measured_at": ceiling.measured_at, "fingerprint": dict(ceiling.fingerprint),
           "how": "python -m harness.bench.perf --open-loop: the highest rate one open-loop "
                  "producer (32 B x 20, window 8) keeps against the null sink"}
    replace_file(file, (json.dumps(doc, indent=2) + "\n").encode())


def resolve(measure: Callable[[], float] | None = None, file: Path | None = None
            ) -> ClientCeiling:
    """The ceiling for a run on this machine: kept, or measured now (and kept)."""
    file = file or path()
    current = fingerprint()
    found = cached(file, current)
    if found is not None:
        return found
    print(f"twinbench: measuring the load client's ceiling on this machine (about 40 s, once; "
          f"kept in {file})", file=sys.stderr, flush=True)
    rps = (measure or measure_now)()
    ceiling = ClientCeiling(rps, "measured", datetime.now(UTC).isoformat(timespec="seconds"),
                            current)
    store(file, ceiling)
    return ceiling


def measure_now() -> float:
    """``python -m harness.bench.perf --open-loop``'s search, in this process."""
    from harness.bench import client_ceiling

    return client_ceiling.measure()


def from_workload(rps: float) -> ClientCeiling:
    return ClientCeiling(rps, "workload", None, {})
