"""Fixtures of the integration tier (real processes on loopback); shared helpers live in
tests/support."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from harness.zookeeper import ZooKeeperHandle
from tests.support import zk_fixtures


@pytest.fixture(scope="module")
def zk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperHandle]:
    """One local ZooKeeper server for every test of a module that asks for it."""
    yield from zk_fixtures.module_zookeeper(tmp_path_factory)


def pytest_collection_modifyitems(config, items):
    """Tests marked hosts_full (the multi-host matrix beyond `make test`'s sample) run only with
    TWINBENCH_HOSTS_FULL=1 (`make test-hosts`): deselected otherwise, not skipped, so a run of
    the suite lists no skip for what it chose not to run."""
    if os.environ.get("TWINBENCH_HOSTS_FULL") == "1":
        return
    keep, drop = [], []
    for item in items:
        (drop if item.get_closest_marker("hosts_full") else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
