"""Bad inputs are refused with one clear line, before Spark reads anything."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import twinbench_common.runlog as fmt
from brokers.core.errors import UserError
from harness import runlog
from spark_analysis import schema, synth
from spark_analysis.loader import (
    check_header,
    discover_runs,
    has_rows,
    read_manifests,
    validate_runs,
)
from spark_analysis.schema import RECORDS_COLUMNS

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "runs"


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    root = tmp_path / "runs"
    shutil.copytree(FIXTURES, root)
    return root


def one_run(root: Path) -> Path:
    return sorted(p for p in root.iterdir())[0]


def set_manifest(run: Path, **changes: object) -> None:
    path = run / "manifest.json"
    data = json.loads(path.read_text())
    data.update(changes)
    path.write_text(json.dumps(data))


@pytest.mark.filesystem
def test_fixture_runs_are_found() -> None:
    found = discover_runs([FIXTURES])
    assert len(found) == 6
    assert discover_runs([FIXTURES, found[0]]) == found  # a run named twice counts once
    infos = read_manifests(found)
    assert {(i.arch, i.label) for i in infos} == {
        ("zk", ""), ("dsbs", ""), ("zk", "A"), ("zk", "B"), ("dsbs", "A"), ("dsbs", "B")}


@pytest.mark.filesystem
def test_empty_directory(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no run directories here"):
        discover_runs([tmp_path])


@pytest.mark.filesystem
def test_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no such directory"):
        discover_runs([tmp_path / "nope"])


@pytest.mark.filesystem
def test_corrupt_manifest(runs: Path) -> None:
    (one_run(runs) / "manifest.json").write_text("{not json")
    with pytest.raises(UserError, match="unreadable manifest"):
        read_manifests(discover_runs([runs]))


@pytest.mark.filesystem
def test_unknown_format_version_names_it(runs: Path) -> None:
    for run in runs.iterdir():
        set_manifest(run, format_version=10)
    with pytest.raises(UserError, match=r"format_version 10 is not supported.*reads "
                                        r"format_version 1 or 2 or 3 or 4 or 5 or 6 or 7 or 8 "
                                        r"or 9"):
        read_manifests(discover_runs([runs]))


@pytest.mark.filesystem
def test_mixed_format_versions(runs: Path) -> None:
    set_manifest(one_run(runs), format_version=10)
    with pytest.raises(UserError) as exc:
        read_manifests(discover_runs([runs]))
    message = str(exc.value)
    assert "mixed run log format versions" in message
    assert "format_version 1:" in message and "format_version 10:" in message
    assert "\n" not in message


@pytest.mark.filesystem
def test_format_5_metadata_runs_mix_with_older_ones(runs: Path) -> None:
    """A format-5 run has metadata.csv (rows here); without it, one line."""
    meta = synth.write_metadata_run(runs, arch="zk", index=9, tries=2)
    found = validate_runs([runs])
    assert sorted({r.format_version for r in found.runs}) == [1, 5]
    assert found.paths("metadata") == [meta / "metadata.csv"]
    (meta / "metadata.csv").unlink()
    with pytest.raises(UserError, match=r"metadata.csv: missing \(every format_version 5 run "
                                        r"directory has one"):
        validate_runs([runs])


@pytest.mark.filesystem
def test_format_1_and_2_runs_mix(runs: Path) -> None:
    """A format-1 run has no fault files and needs none; a format-2 run beside it is fine."""
    synth.write_fault_run(runs, arch="zk", index=7, tries=1)
    found = validate_runs([runs])
    assert sorted({r.format_version for r in found.runs}) == [1, 2]
    assert len(found.paths("records", 1)) == 7 and found.paths("records", 3) == []
    assert {name: len(found.paths(name)) for name in ("faults", "fault_events", "timeline")
            } == {"faults": 1, "fault_events": 1, "timeline": 1}


@pytest.mark.filesystem
def test_format_3_records_have_the_open_loop_columns_and_mix_with_format_2(
        tmp_path: Path) -> None:
    """Format 3's records.csv has seven more columns; a format-2 run beside it is checked
    against the older header, and each header only against its own version's."""
    for index, version in ((1, 2), (2, 3)):
        synth.write_run(tmp_path, arch="zk", label="", workload="tiny", index=index,
                        cells=synth.FIXTURE_CELLS[:1], tries=1, value=synth.fixture_value,
                        format_version=version)
    found = validate_runs([tmp_path])
    v2, v1 = found.paths("records", 2), found.paths("records", 1)
    assert len(v2) == 1 and len(v1) == 1
    header = v2[0].read_text().splitlines()[0].split(",")
    assert header[-4:] == ["target_rate", "achieved_rate", "send_delay_p99_us", "behind"]
    # A format-3 run whose records.csv still has the format-2 header is refused.
    v2[0].write_text(v1[0].read_text())
    with pytest.raises(UserError, match="missing e2e_p90_us"):
        validate_runs([tmp_path])


@pytest.mark.filesystem
def test_header_only_fault_files_are_not_read(tmp_path: Path) -> None:
    """A format-2 run of a workload without faults: three header-only files, none handed to
    Spark (so the analysis starts no job for them)."""
    run = synth.write_run(tmp_path, arch="zk", label="", workload="tiny", index=1,
                          cells=synth.FIXTURE_CELLS[:1], tries=1, value=synth.fixture_value,
                          format_version=2)
    for name in ("faults.csv", "fault_events.csv", "timeline.csv"):
        assert len((run / name).read_text().splitlines()) == 1
    found = validate_runs([tmp_path])
    assert found.runs[0].format_version == 2
    assert all(found.paths(name) == [] for name in ("faults", "fault_events", "timeline"))


@pytest.mark.filesystem
@pytest.mark.parametrize("name", ["faults.csv", "fault_events.csv", "timeline.csv"])
def test_format_2_run_without_a_fault_file(tmp_path: Path, name: str) -> None:
    run = synth.write_fault_run(tmp_path, arch="zk", index=1, tries=1)
    (run / name).unlink()
    with pytest.raises(UserError, match=rf"{name}: missing \(every format_version 2 run"):
        validate_runs([tmp_path])


@pytest.mark.filesystem
def test_fault_file_with_a_wrong_header(tmp_path: Path) -> None:
    run = synth.write_fault_run(tmp_path, arch="zk", index=1, tries=1)
    lines = (run / "faults.csv").read_text().splitlines()
    lines[0] = lines[0].replace("detection_s", "detect_s")
    (run / "faults.csv").write_text("\n".join(lines) + "\n")
    with pytest.raises(UserError, match=r"faults\.csv: header does not match.*missing "
                                        r"detection_s; unexpected detect_s"):
        validate_runs([tmp_path])


@pytest.mark.filesystem
def test_has_rows(tmp_path: Path) -> None:
    path = tmp_path / "timeline.csv"
    path.write_text("a,b\n")
    assert not has_rows(path)
    path.write_text("a,b\n\n  \n")
    assert not has_rows(path)
    path.write_text("a,b\n1,2\n")
    assert has_rows(path)


def test_analysis_schemas_are_the_writers_columns() -> None:
    """spark_analysis never imports the harness; this ties its schemas to the run log writer
    (whose columns tests/unit/harness/test_runlog.py ties to docs/result-format.md)."""
    assert fmt.RECORDS.names() == schema.RECORDS_COLUMNS
    assert fmt.COORDINATION.names() == schema.COORDINATION_COLUMNS
    assert fmt.FAULTS.names() == schema.FAULTS_COLUMNS
    assert fmt.FAULT_EVENTS.names() == schema.FAULT_EVENTS_COLUMNS
    assert fmt.TIMELINE.names() == schema.TIMELINE_COLUMNS
    assert fmt.COUNTERS.names() == schema.COUNTER_COLUMNS
    assert runlog.FORMAT_VERSION in schema.SUPPORTED_FORMAT_VERSIONS


@pytest.mark.filesystem
def test_not_a_run_log(runs: Path) -> None:
    set_manifest(one_run(runs), kind="something.else")
    with pytest.raises(UserError, match=r"kind is 'something\.else'"):
        read_manifests(discover_runs([runs]))


@pytest.mark.filesystem
def test_duplicate_run_id(runs: Path) -> None:
    a, b = sorted(runs.iterdir())[:2]
    set_manifest(b, run_id=json.loads((a / "manifest.json").read_text())["run_id"])
    with pytest.raises(UserError, match="appears twice"):
        read_manifests(discover_runs([runs]))


@pytest.mark.filesystem
def test_empty_records_file(tmp_path: Path) -> None:
    path = tmp_path / "records.csv"
    path.write_text("")
    with pytest.raises(UserError, match="empty file"):
        check_header(path, RECORDS_COLUMNS)


@pytest.mark.filesystem
def test_wrong_header_says_what_differs(tmp_path: Path) -> None:
    path = tmp_path / "records.csv"
    path.write_text(",".join(c for c in RECORDS_COLUMNS if c != "rps") + ",speed\n")
    with pytest.raises(UserError, match="missing rps; unexpected speed"):
        check_header(path, RECORDS_COLUMNS)
    path.write_text(",".join(reversed(RECORDS_COLUMNS)) + "\n")
    with pytest.raises(UserError, match="columns out of order"):
        check_header(path, RECORDS_COLUMNS)
    path.write_text(",".join(RECORDS_COLUMNS) + "\n")
    assert check_header(path, RECORDS_COLUMNS)
