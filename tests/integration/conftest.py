"""Fixtures of the integration tier (real processes on loopback); shared helpers live in
tests/support."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.zookeeper import ZooKeeperHandle
from tests.support import zk_fixtures


@pytest.fixture(scope="module")
def zk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperHandle]:
    """One local ZooKeeper server for every test of a module that asks for it."""
    yield from zk_fixtures.module_zookeeper(tmp_path_factory)
