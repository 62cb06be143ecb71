"""The load client's ceiling: measured once per machine and client code, kept, reused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.studies.latency import ceiling

pytestmark = pytest.mark.filesystem


def test_measured_once_then_reused_while_the_machine_and_client_are_the_same(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []

    def measure() -> float:
        calls.append(1)
        return 123_456.0

    file = tmp_path / "client-ceiling.json"
    first = ceiling.resolve(measure, file)
    assert (first.rps, first.source, len(calls)) == (123_456.0, "measured", 1)
    again = ceiling.resolve(measure, file)
    assert (again.rps, again.source, len(calls)) == (123_456.0, "cached", 1)
    assert again.manifest()["fingerprint"] == ceiling.fingerprint()
    # Another machine, or other client code: measured again.
    doc = json.loads(file.read_text())
    doc["fingerprint"]["client_code"] = "git:0000"
    file.write_text(json.dumps(doc))
    assert ceiling.resolve(measure, file).source == "measured" and len(calls) == 2


def test_a_damaged_file_is_measured_over(tmp_path: Path) -> None:
    file = tmp_path / "c.json"
    file.write_text("{not json")
    assert ceiling.cached(file, ceiling.fingerprint()) is None
    assert ceiling.resolve(lambda: 1_000.0, file).rps == 1_000.0


def test_the_fingerprint_names_the_client_code() -> None:
    fp = ceiling.fingerprint()
    assert set(fp) == {"cpu_model", "cpus", "python", "client_code"}
    assert fp["client_code"].startswith(("git:", "sha256:"))
