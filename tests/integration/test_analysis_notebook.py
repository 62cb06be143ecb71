"""notebooks/figures.ipynb runs top to bottom, unedited, on the fixture runs."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "runs"


def test_notebook_regenerates_every_figure(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "report"
    # The kernel inherits the environment: point the notebook at the fixtures, a scratch
    # report directory and one core.
    monkeypatch.setenv("TWINBENCH_RUNS", str(FIXTURES))
    monkeypatch.setenv("TWINBENCH_REPORT", str(out))
    monkeypatch.setenv("TWINBENCH_SPARK_MASTER", "local[1]")
    monkeypatch.setenv("SPARK_LOCAL_IP", "127.0.0.1")
    nb = nbformat.read(REPO / "notebooks" / "figures.ipynb", as_version=4)
    NotebookClient(nb, timeout=240, kernel_name="python3",
                   resources={"metadata": {"path": str(REPO / "notebooks")}}).execute()
    names = sorted(p.stem for p in out.glob("fig*.png"))
    assert names == sorted([
        "fig01-production-rps-split", "fig02-production-rps-streaming",
        "fig03-production-kbps-split", "fig04-production-kbps-streaming",
        "fig05-consumption-rps-split", "fig06-consumption-rps-streaming",
        "fig07-consumption-kbps-split", "fig08-consumption-kbps-streaming",
        "fig09-production-rps-batch-split", "fig10-production-rps-batch-streaming",
        "fig11-consumption-rps-batch-split", "fig12-consumption-rps-batch-streaming",
        "fig13-ratio-vs-policy", "fig14-latency-distribution", "fig15-coordination-cost"])
    assert all((out / f"{n}.svg").is_file() for n in names)
    images = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if "image/png" in o.get("data", {})]
    assert len(images) == len(names)
    assert (out / "report.md").is_file()
    assert os.environ["TWINBENCH_RUNS"] == str(FIXTURES)
