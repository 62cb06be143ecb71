"""Bad inputs are refused with one clear line, before Spark reads anything."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from brokers.core.errors import UserError
from spark_analysis.loader import check_header, discover_runs, read_manifests
from spark_analysis.schema import RECORDS_COLUMNS

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "runs"


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


def test_fixture_runs_are_found() -> None:
    found = discover_runs([FIXTURES])
    assert len(found) == 6
    assert discover_runs([FIXTURES, found[0]]) == found  # a run named twice counts once
    infos = read_manifests(found)
    assert {(i.arch, i.label) for i in infos} == {
        ("zk", ""), ("dsbs", ""), ("zk", "A"), ("zk", "B"), ("dsbs", "A"), ("dsbs", "B")}


def test_empty_directory(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no run directories here"):
        discover_runs([tmp_path])


def test_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no such directory"):
        discover_runs([tmp_path / "nope"])


def test_corrupt_manifest(runs: Path) -> None:
    (one_run(runs) / "manifest.json").write_text("{not json")
    with pytest.raises(UserError, match="unreadable manifest"):
        read_manifests(discover_runs([runs]))


def test_unknown_format_version_names_it(runs: Path) -> None:
    for run in runs.iterdir():
        set_manifest(run, format_version=2)
    with pytest.raises(UserError,
                       match=r"format_version 2 is not supported.*reads format_version 1"):
        read_manifests(discover_runs([runs]))


def test_mixed_format_versions(runs: Path) -> None:
    set_manifest(one_run(runs), format_version=2)
    with pytest.raises(UserError) as exc:
        read_manifests(discover_runs([runs]))
    message = str(exc.value)
    assert "mixed run log format versions" in message
    assert "format_version 1:" in message and "format_version 2:" in message
    assert "\n" not in message


def test_not_a_run_log(runs: Path) -> None:
    set_manifest(one_run(runs), kind="something.else")
    with pytest.raises(UserError, match=r"kind is 'something\.else'"):
        read_manifests(discover_runs([runs]))


def test_duplicate_run_id(runs: Path) -> None:
    a, b = sorted(runs.iterdir())[:2]
    set_manifest(b, run_id=json.loads((a / "manifest.json").read_text())["run_id"])
    with pytest.raises(UserError, match="appears twice"):
        read_manifests(discover_runs([runs]))


def test_empty_records_file(tmp_path: Path) -> None:
    path = tmp_path / "records.csv"
    path.write_text("")
    with pytest.raises(UserError, match="empty file"):
        check_header(path, RECORDS_COLUMNS)


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
