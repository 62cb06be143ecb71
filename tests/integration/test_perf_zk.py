"""`python -m harness.bench.perf_zk` end to end on a tiny budget: both clients measured against a
real ZooKeeper, a table printed, a self-describing JSON written; bad arguments are one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.bench import perf_zk
from tests.support import zk_fixtures

pytestmark = [pytest.mark.integration, pytest.mark.zookeeper]


def test_measures_both_clients_and_writes_a_result(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with zk_fixtures.local_zookeeper(tmp_path / "zk") as zk:
        code = perf_zk.main(["--requests", "60", "--repetitions", "2",
                              "--zookeeper", zk.connect_string, "--out", str(tmp_path)])
    assert code == 0
    out = capsys.readouterr().out
    assert "kazoo/direct" in out
    (result,) = tmp_path.glob("zkclient-*.json")
    doc = json.loads(result.read_text())
    assert doc["format_version"] == perf_zk.FORMAT_VERSION and doc["kind"] == "zkclient"
    cells = {(r["concurrency"], r["op"]) for r in doc["summary"]}
    assert cells == {(1, "get"), (1, "set"), (3, "get"), (3, "set")}
    assert {s["client"] for s in doc["samples"]} == {"kazoo", "direct"}
    assert all(s["wall_us"] > 0 and s["requests"] > 0 for s in doc["samples"])
    # An address given by the user is not a process we can read the CPU time of.
    assert all(s["zk_cpu_us"] is None for s in doc["samples"])
    assert "NaN" not in result.read_text()


def test_bad_arguments_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert perf_zk.main(["--requests", "2"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("python -m harness.bench.perf_zk:") and "\n" not in err
