"""brokers.core.atomic_file on a real filesystem: the one way every file is replaced whole."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from brokers.core.atomic_file import TMP_SUFFIX, replace_file

pytestmark = pytest.mark.filesystem  # real files and directories

def test_replaces_content_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    path = tmp_path / "doc.json"
    replace_file(path, "old")
    replace_file(path, b"new bytes")
    assert path.read_bytes() == b"new bytes"
    assert [p.name for p in tmp_path.iterdir()] == ["doc.json"]


def test_not_durable_is_still_atomic(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    replace_file(path, "x" * 100_000, sync_file=False, sync_dir=False)
    assert path.read_text() == "x" * 100_000


def test_mode_is_exact_even_over_a_leftover_temporary_file(tmp_path: Path) -> None:
    path = tmp_path / "key"
    leftover = tmp_path / f".key.{os.getpid()}{TMP_SUFFIX}"
    leftover.write_text("stale")
    leftover.chmod(0o644)
    replace_file(path, "secret\n", mode=0o600)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text() == "secret\n" and not leftover.exists()


def test_a_failed_replace_keeps_the_old_file_and_removes_the_temporary(tmp_path: Path) -> None:
    target = tmp_path / "dir"
    (target / "inside").mkdir(parents=True)  # rename over a non-empty directory fails
    with pytest.raises(OSError):
        replace_file(target, "data")
    assert (target / "inside").is_dir()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir"]


def test_syncing_the_directory_without_the_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        replace_file(tmp_path / "f", "x", sync_file=False)
