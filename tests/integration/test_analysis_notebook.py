"""notebooks/figures.ipynb runs top to bottom, unedited, on the fixture runs plus synthetic
fault runs (format 2) and metadata runs (format 4)."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from spark_analysis import synth

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "runs"


def test_notebook_regenerates_every_figure(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "report"
    # Fault sessions (format 2) beside the format-1 fixtures, for faults-<case> and -summary.
    faults = tmp_path / "fault-runs"
    for arch, index in (("zk", 7), ("dsbs", 8)):
        synth.write_fault_run(faults, arch=arch, index=index, tries=2)
    # Metadata sessions (format 5), for metadata-<case>.
    metadata = tmp_path / "metadata-runs"
    for arch, index in (("zk", 9), ("dsbs", 10)):
        synth.write_metadata_run(metadata, arch=arch, index=index, tries=2)
    # Round-trip-time sweeps (format 6), for rtt-*.
    rtt = tmp_path / "rtt-runs"
    for arch, index in (("zk", 11), ("dsbs", 12)):
        synth.write_rtt_run(rtt, arch=arch, index=index)
    runs = os.pathsep.join([str(FIXTURES), str(faults), str(metadata), str(rtt)])
    # The kernel inherits the environment: point the notebook at the runs, a scratch report
    # directory and one core.
    monkeypatch.setenv("TWINBENCH_RUNS", runs)
    # The kernel must import this checkout's spark_analysis (not whichever checkout the
    # virtualenv was installed from): its working directory is notebooks/, not the root.
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p))
    monkeypatch.setenv("TWINBENCH_REPORT", str(out))
    monkeypatch.setenv("TWINBENCH_SPARK_MASTER", "local[1]")
    monkeypatch.setenv("SPARK_LOCAL_IP", "127.0.0.1")
    nb = nbformat.read(REPO / "notebooks" / "figures.ipynb", as_version=4)
    NotebookClient(nb, timeout=240, kernel_name="python3",
                   resources={"metadata": {"path": str(REPO / "notebooks")}}).execute()
    names = sorted(p.stem for p in out.glob("*.png"))
    assert names == sorted([
        "fig01-production-rps-split", "fig02-production-rps-streaming",
        "fig03-production-kbps-split", "fig04-production-kbps-streaming",
        "fig05-consumption-rps-split", "fig06-consumption-rps-streaming",
        "fig07-consumption-kbps-split", "fig08-consumption-kbps-streaming",
        "fig09-production-rps-batch-split", "fig10-production-rps-batch-streaming",
        "fig11-consumption-rps-batch-split", "fig12-consumption-rps-batch-streaming",
        "paper-ratio-vs-policy", "paper-latency-distribution", "paper-coordination-cost",
        "faults-kill-leader", "faults-pause-broker", "faults-stop-zookeeper",
        "faults-summary", "metadata-topic-storm",
        "rtt-rtt-32b-b20-every-fetch-per-request"])
    assert all((out / f"{n}.svg").is_file() for n in names)
    images = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if "image/png" in o.get("data", {})]
    assert len(images) == len(names)
    report = (out / "report.md").read_text()
    assert "## Faults" in report and "## Metadata scenarios" in report
    assert "## Round-trip time" in report
    assert "- Metadata topic-storm (n = 100, metadata): converged ZK 20 vs DSBS 0.2 s" in report
    assert os.environ["TWINBENCH_RUNS"] == runs
