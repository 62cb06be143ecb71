"""A new architecture is its own package plus a registry line: an architecture defined in the
tests (tests/support/shared_dir_arch: its broker program, its Coordinator, its entry), added
to the registry by the environment, runs the smoke workload through `twinbench run` and comes
out of `twinbench analyze`, with no file outside its package naming it."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from spark_analysis import job
from spark_analysis.session import SPARK_PANDAS_WARNINGS

pytestmark = [pytest.mark.integration, pytest.mark.slow,
              *(pytest.mark.filterwarnings(f"ignore:{m}") for m in SPARK_PANDAS_WARNINGS)]

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "tests" / "support" / "shared_dir_arch"
NAME = "shared-dir"
ENTRY = "tests.support.shared_dir_arch.entry:SHARED_DIR"
SMOKE = ROOT / "tests" / "fixtures" / "format8" / "smoke" / "runs"


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_only_its_own_package_names_the_architecture() -> None:
    """The proof that nothing outside the plugin was edited for it: no source, workload,
    configuration or build file of the project names it (this test aside; documents may cite
    it as the example it is)."""
    named = []
    for path in ROOT.rglob("*"):
        if (not path.is_file() or path.suffix not in (".py", ".yaml", ".toml", ".cfg", "")
                or any(part.startswith(".") or part in ("fixtures", "__pycache__", "results")
                       for part in path.relative_to(ROOT).parts)
                or PLUGIN in path.parents or path == Path(__file__)):
            continue
        text = path.read_text("utf-8", errors="replace")
        if "shared_dir_arch" in text or "shared-dir" in text:
            named.append(str(path.relative_to(ROOT)))
    assert named == []


def test_an_architecture_of_the_tests_runs_the_smoke_workload(tmp_path: Path,
                                                               spark: SparkSession) -> None:
    out = tmp_path / "runs"
    env = {**os.environ, "TWINBENCH_ARCHITECTURES": f"{NAME}={ENTRY}"}
    proc = subprocess.run(
        [sys.executable, "-m", "harness.cli", "run", "--arch", NAME, "--workload", "smoke",
         "--tries", "1", "--out", str(out), "--quiet"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (run,) = out.iterdir()
    manifest = json.loads((run / "manifest.json").read_text("utf-8"))
    assert manifest["arch"] == NAME and manifest["run_arches"] == [NAME]
    assert manifest["architectures"][NAME]["short_name"] == "SHARED"
    assert manifest["cluster"]["options"] == {NAME: {"directory": "shared"}}
    # Every session of the smoke workload ran and verified, as on the twins.
    records = _rows(run / "records.csv")
    twin = next(p for p in SMOKE.iterdir() if "-zk-" in p.name)
    expected = {(r["cell_id"], r["scenario"], r["role"]) for r in _rows(twin / "records.csv")
                if r["try"] == "1"}
    assert {(r["cell_id"], r["scenario"], r["role"]) for r in records} == expected
    assert {r["status"] for r in records} == {"ok"}
    assert {r["lost"] for r in records if r["role"] == "consumption"} == {"0"}
    # Its coordination messages (reads and writes of the shared directory) fill the generic
    # column its entry maps them to; no service, so no service CPU.
    coordination = _rows(run / "coordination.csv")
    assert coordination and all(int(c["coord_messages"]) > 0 for c in coordination)
    assert {c["service_cpu_s"] for c in coordination} == {""}
    # And the analysis shows it by the labels its entry wrote.
    analysis = job.compute(spark, [out])
    assert NAME in analysis.archs.names
    assert set(analysis.cell_stats["arch"]) == {NAME}
