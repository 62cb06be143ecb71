"""brokers.core.atomic_file across a power failure: a durable replace is there afterwards.

ext4 on a loop device is shut down without flushing its journal and remounted (what a power
failure leaves: only what was fsynced). Needs root; skips and says why without it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from brokers.core.atomic_file import replace_file
from tests.support.faulty_fs import loop_ext4

pytestmark = [pytest.mark.integration, pytest.mark.hostile]


def test_a_durable_replace_survives_power_loss(tmp_path: Path) -> None:
    with loop_ext4(tmp_path) as fs:
        path = fs.mnt / "state" / "doc.json"
        path.parent.mkdir()
        replace_file(path, "old")
        os.sync()  # the old version and the directory are on disk for certain
        replace_file(path, "new")
        fs.shutdown(flush_log=False)
        fs.power_cycle()
        assert path.read_text() == "new"
        assert sorted(p.name for p in path.parent.iterdir()) == ["doc.json"]
