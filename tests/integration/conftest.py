"""Fixtures of the integration tier (real processes on loopback); shared helpers live in
tests/support."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from harness.services.zookeeper import ZooKeeperHandle
from tests.support import zk_fixtures

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@pytest.fixture(scope="module")
def zk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperHandle]:
    """One local ZooKeeper server for every test of a module that asks for it."""
    yield from zk_fixtures.module_zookeeper(tmp_path_factory)



@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """One local Spark session for every analysis test of the run: starting Spark's JVM costs
    seconds, and the analysis keeps no state in the session between jobs."""
    from spark_analysis.session import build_session

    session = build_session("local[1]", shuffle_partitions=1, app_name="twinbench-tests")
    yield session
    session.stop()
