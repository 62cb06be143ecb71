"""The run-log writer against docs/result-format.md: the column lists are the doc's, the
manifest keys are the doc's, partial logs are valid, finish() seals the manifest."""

from __future__ import annotations

import csv
import json
import random
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

import twinbench_common.runlog as fmt
from harness import runlog

DOC = Path(__file__).resolve().parents[3] / "docs" / "result-format.md"


def doc_section(title: str) -> str:
    text = DOC.read_text()
    start = text.index(f"## {title}")
    end = text.find("\n## ", start + 1)
    return text[start:end if end > 0 else None]


def table_keys(section: str) -> list[str]:
    """First-column names of a markdown table (backticked, possibly several per cell)."""
    keys: list[str] = []
    for line in section.splitlines():
        if not line.startswith("| `"):
            continue
        first = line.split("|")[1]
        keys.extend(re.findall(r"`([a-z0-9_]+)`", first))
    return keys


@pytest.mark.filesystem
def test_records_columns_are_the_documented_ones():
    section = doc_section("records.csv")
    keys = table_keys(section)
    # The latency row lists its five columns in the meaning column.
    lat = re.search(r"columns `(lat_p50_us[^|]*)\|", section)
    assert lat is not None
    expected = []
    for k in keys:
        if k == "lat_p50_us":
            expected += re.findall(r"lat_[a-z0-9]+_us", lat.group(1))
        elif k != "lat_max_us":
            expected.append(k)
    assert list(fmt.RECORDS.names()) == expected


@pytest.mark.filesystem
@pytest.mark.parametrize("table", [t for t in fmt.TABLES
                                   if t.kind == "csv" and t is not fmt.RECORDS],
                         ids=lambda t: t.name)
def test_every_tables_columns_are_the_documented_ones(table: fmt.Table):
    assert list(table.names()) == table_keys(doc_section(table.file))


@pytest.mark.filesystem
def test_manifest_keys_are_the_documented_ones():
    assert list(runlog.MANIFEST_KEYS) == table_keys(doc_section("manifest.json"))


@pytest.mark.filesystem
def test_latency_keys_are_the_documented_ones():
    section = doc_section("latency.jsonl")
    for key in fmt.LATENCY.names():
        assert f"`{key}`" in section


def test_run_id_format():
    started = datetime(2026, 11, 21, 9, 0, 0, tzinfo=UTC)
    run_id = runlog.make_run_id("zk", "paper", started, random.Random(1))
    assert re.fullmatch(r"20261121T090000Z-zk-paper-[0-9a-f]{6}", run_id)


def manifest(tmp_path: Path, run_id: str = "20261121T090000Z-zk-t-abcdef") -> dict:
    return runlog.base_manifest(
        run_id=run_id, arch="zk", label="A", workload={"name": "t"}, workload_text="name: t\n",
        policies={"offset_commit": "every_fetch", "metadata_check": "per_request",
                  "flush": "os"},
        cluster={"brokers": 3, "partitions": 3, "start_seconds": 1.0,
                 "options": {"zk": {}, "zookeeper": {"nodes": 1}}},
        service_versions={"zookeeper": "3.8.0"}, placement=None, seed=7,
        started_at=datetime(2026, 11, 21, 9, 0, 0, tzinfo=UTC),
    )


@pytest.mark.filesystem
def test_manifest_is_incomplete_until_finished(tmp_path: Path):
    log = runlog.RunLog(tmp_path, manifest(tmp_path))
    m = json.loads((log.path / "manifest.json").read_text())
    assert m["format_version"] == runlog.FORMAT_VERSION and m["kind"] == "twinbench.run"
    assert m["incomplete"] is True and m["finished_at"] is None
    assert m["versions"]["python"] and m["versions"]["zookeeper"] == "3.8.0"
    assert "pyspark" not in m["versions"]
    assert m["host"]["cpu_count"] >= 1 and m["host"]["placement"] is None
    assert set(m["git"]) == {"commit", "dirty"}
    log.finish(incomplete=False)
    m = json.loads((log.path / "manifest.json").read_text())
    assert m["incomplete"] is False and m["finished_at"].endswith("Z")


@pytest.mark.filesystem
def test_rows_are_written_and_flushed_as_they_come(tmp_path: Path):
    log = runlog.RunLog(tmp_path, manifest(tmp_path))
    row = {k: None for k in fmt.RECORDS.names()} | {"run_id": log.run_id, "rps": 1234.5,
                                                        "records": 10, "status": "ok"}
    log.add_records([row])
    # Readable before finish(): a killed run keeps its rows.
    with open(log.path / "records.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert rows[0]["rps"] == "1234.5" and rows[0]["records"] == "10"
    assert rows[0]["lost"] == ""  # None -> empty = not applicable
    log.add_coordination({"run_id": log.run_id, "messages": 30000, "coord_messages": 5,
                          "coord_bytes": None})
    log.add_latency([{"run_id": log.run_id, "cell_id": "c", "scenario": "split",
                      "role": "production", "try": 1, "kind": "request", "unit": "us",
                      "count": 1, "histogram": "HISTF"}])
    log.finish(incomplete=True)
    with open(log.path / "coordination.csv", newline="") as f:
        coord = list(csv.DictReader(f))
    assert list(coord[0]) == list(fmt.COORDINATION.names())
    assert coord[0]["coord_messages"] == "5" and coord[0]["coord_bytes"] == ""
    entry = json.loads((log.path / "latency.jsonl").read_text().splitlines()[0])
    assert list(entry) == list(fmt.LATENCY.names())
    assert json.loads((log.path / "manifest.json").read_text())["incomplete"] is True


@pytest.mark.filesystem
def test_unknown_fields_are_refused(tmp_path: Path):
    log = runlog.RunLog(tmp_path, manifest(tmp_path))
    with pytest.raises(ValueError, match="rpss"):
        log.add_records([{"rpss": 1}])
    with pytest.raises(ValueError, match="manifest keys"):
        runlog.RunLog(tmp_path, manifest(tmp_path, "other") | {"extra": 1})


@pytest.mark.filesystem
def test_failed_cells_reach_the_manifest_at_once(tmp_path: Path):
    log = runlog.RunLog(tmp_path, manifest(tmp_path))
    log.mark_failed("size_grid-32B-b20")
    log.mark_failed("size_grid-32B-b20")
    m = json.loads((log.path / "manifest.json").read_text())
    assert m["failed_cells"] == ["size_grid-32B-b20"]


@pytest.mark.filesystem
def test_run_directories_are_never_reused(tmp_path: Path):
    runlog.RunLog(tmp_path, manifest(tmp_path))
    with pytest.raises(FileExistsError):
        runlog.RunLog(tmp_path, manifest(tmp_path))


@pytest.mark.filesystem
@pytest.mark.parametrize("title,columns", [
    ("faults.csv", fmt.FAULTS.names()),
    ("fault_events.csv", fmt.FAULT_EVENTS.names()),
    ("timeline.csv", fmt.TIMELINE.names()),
    ("series.csv", fmt.SERIES.names()),
    ("rate_search.csv", fmt.RATE_SEARCH.names()),
    ("max_rate.csv", fmt.MAX_RATE.names()),
    ("metadata.csv", fmt.METADATA.names()),
    ("metrics.csv", fmt.METRICS.names()),
    ("transactions.csv", fmt.TRANSACTIONS.names()),
])
def test_fault_file_columns_are_the_documented_ones(title, columns):
    assert list(columns) == table_keys(doc_section(title))
