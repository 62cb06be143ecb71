"""Fixtures of the hostile tier (attacks and failing disks against real broker processes);
shared helpers live in tests/support."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.services.zookeeper import ZooKeeperHandle
from tests.support import zk_fixtures


@pytest.fixture(scope="module")
def zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperHandle]:
    """One local ZooKeeper server for the zk brokers of a module (started on first use)."""
    yield from zk_fixtures.module_zookeeper(tmp_path_factory)
