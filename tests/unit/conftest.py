"""The unit tier: pure logic, no processes, no sockets.

Tests here that still touch real files or directories (``tmp_path``, files in the repository),
bind a socket or start a process are marked ``filesystem``, so that
``pytest tests/unit -m "not filesystem"`` runs pure logic only. A unit test that asks for a
temporary directory without the mark is refused at collection, so the split stays true.
"""

from __future__ import annotations

from pathlib import Path

import pytest

_UNIT = Path(__file__).resolve().parent
_DIRECTORY_FIXTURES = {"tmp_path", "tmp_path_factory", "tmpdir", "tmpdir_factory"}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # The hook sees every collected item of the session, not only this tier's.
    unmarked = [
        item.nodeid for item in items
        if item.path.is_relative_to(_UNIT)
        and _DIRECTORY_FIXTURES & set(getattr(item, "fixturenames", ()))
        and item.get_closest_marker("filesystem") is None
    ]
    if unmarked:
        raise pytest.UsageError(
            "unit tests that use a temporary directory must be marked "
            f"@pytest.mark.filesystem: {', '.join(unmarked)}")
